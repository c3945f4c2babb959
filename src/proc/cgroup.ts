/**
 * The Linux cgroup v2 tier: each owned tree gets a cgroup of its own, entered by its root before it forks, so
 * no member can leave it (setsid, double fork and `env -i` all stay inside). Killing writes `cgroup.kill`
 * (Linux 5.14+), or freezes the cgroup, signals every member and thaws it.
 *
 * Where a writable cgroup v2 hierarchy is found:
 *   - as root: a directory of ours, `<cgroup2 mount>/agent-trees/` (hybrid layouts mount it at
 *     `/sys/fs/cgroup/unified`, pure v2 at `/sys/fs/cgroup`);
 *   - as an ordinary user with a systemd user manager: a transient scope from `systemd-run --user --scope`.
 * Where our cgroups live (`cgroupLocation`) is read from mountinfo alone; whether we can make them
 * (`CgroupProber`) is probed once per process, asynchronously where it runs `systemd-run`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFile } from 'child_process';
import { localTime, Logger, silentLogger } from './log';

export type CgroupMode = 'auto' | 'off';

/** Where the tree cgroups of this user live: enough to recognise a recorded one, without probing anything. */
export interface CgroupLocation {
  kind: 'directory' | 'systemd-scope';
  /** Folder under which every tree cgroup of ours lives. */
  base: string;
}

export interface CgroupTier extends CgroupLocation {
  /** Why this tier was chosen, for the log. */
  reason: string;
}

export interface CgroupProbeResult {
  tier?: CgroupTier;
  /** Why there is no cgroup tier, when there is none. */
  unavailable?: string;
}

const TREE_DIR_PREFIX = 'tree-';

/** Finds the cgroup2 mount point in `/proc/self/mountinfo` text. */
export function cgroup2Mount(mountinfo: string): string | undefined {
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fstype = line.slice(sep + 3).split(' ')[0];
    if (fstype === 'cgroup2') return unescapeMount(line.split(' ')[4]);
  }
  return undefined;
}

function unescapeMount(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
}

/** What the probe reads and runs; tests pass their own. */
export interface CgroupProbeDeps {
  platform: NodeJS.Platform;
  uid: number;
  /** The text of `/proc/self/mountinfo`; throws when it cannot be read. */
  readMountinfo(): string;
  /** The file operations the directory probe makes. */
  fs: Pick<typeof fs, 'mkdirSync' | 'rmdirSync' | 'existsSync' | 'accessSync'>;
  /** Runs a command to its end without blocking the event loop; rejects when it fails or times out. */
  execAsync(file: string, args: string[], timeoutMs: number): Promise<void>;
}

const systemCgroupProbeDeps: CgroupProbeDeps = {
  platform: process.platform,
  uid: process.getuid?.() ?? -1,
  readMountinfo: () => fs.readFileSync('/proc/self/mountinfo', 'utf8'),
  fs,
  execAsync: (file, args, timeoutMs) =>
    new Promise((resolve, reject) => {
      execFile(file, args, { encoding: 'utf8', timeout: timeoutMs, windowsHide: true }, (error, _stdout, stderr) =>
        error ? reject(new Error(firstLine(stderr) || error.message)) : resolve(),
      );
    }),
};

/** Where our cgroups would be, from mountinfo and the uid alone: no directory is made, nothing is run. */
function cgroupLocation(deps: Pick<CgroupProbeDeps, 'platform' | 'uid' | 'readMountinfo'>): CgroupLocation | { unavailable: string } {
  if (deps.platform !== 'linux') return { unavailable: 'cgroups exist on Linux only' };
  let mountinfo: string;
  try {
    mountinfo = deps.readMountinfo();
  } catch (e) {
    return { unavailable: `cannot read /proc/self/mountinfo: ${(e as Error).message}` };
  }
  const mount = cgroup2Mount(mountinfo);
  if (!mount) return { unavailable: 'no cgroup2 file system is mounted' };
  if (deps.uid === 0) return { kind: 'directory', base: path.join(mount, 'agent-trees') };
  return { kind: 'systemd-scope', base: path.join(mount, `user.slice/user-${deps.uid}.slice/user@${deps.uid}.service/app.slice`) };
}

/**
 * Whether we can make tree cgroups, and where. As root that is a few directory operations (synchronous, quick);
 * as an ordinary user it runs `systemd-run --user --scope` (asynchronous: it can take seconds).
 */
export async function probeCgroupTier(deps: CgroupProbeDeps = systemCgroupProbeDeps): Promise<CgroupProbeResult> {
  const location = cgroupLocation(deps);
  if ('unavailable' in location) return location;
  if (location.kind === 'directory') return probeDirectoryTier(location, deps);
  const unit = `agent-trees-probe-${process.pid}-${Date.now()}.scope`;
  try {
    await deps.execAsync('systemd-run', ['--user', '--scope', '--quiet', '--collect', `--unit=${unit}`, '--', 'true'], 5000);
  } catch (e) {
    return { unavailable: `systemd-run --user --scope does not work here: ${firstLine((e as Error).message)}` };
  }
  return { tier: { ...location, reason: `transient systemd user scopes under ${location.base}` } };
}

/** As root: creates the base folder and a child in it, to prove we may; the child is removed again. */
function probeDirectoryTier(location: CgroupLocation, deps: Pick<CgroupProbeDeps, 'fs'>): CgroupProbeResult {
  const base = location.base;
  try {
    deps.fs.mkdirSync(base, { recursive: true });
    const probe = path.join(base, `probe-${process.pid}`);
    deps.fs.mkdirSync(probe, { recursive: true });
    const ok = deps.fs.existsSync(path.join(probe, 'cgroup.procs'));
    deps.fs.rmdirSync(probe);
    deps.fs.accessSync(path.join(base, 'cgroup.procs'), fs.constants.W_OK);
    if (!ok)
      return { unavailable: `cannot create cgroups under ${base}: the new directory has no cgroup.procs (not a cgroup2 file system?)` };
  } catch (e) {
    return { unavailable: `cannot create cgroups under ${base}: ${(e as Error).message}` };
  }
  return { tier: { ...location, reason: `own cgroup directories under ${base}` } };
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

/**
 * The tier of one process, probed once. `now()` never waits: as root it probes on the spot (directory operations
 * only); as an ordinary user it starts the asynchronous probe and says the tier is not known yet, so the event
 * loop is never held by `systemd-run`. Callers that can wait use `probe()`.
 */
export class CgroupProber {
  private result: CgroupProbeResult | undefined;
  private pending: Promise<CgroupProbeResult> | undefined;

  constructor(private readonly deps: CgroupProbeDeps = systemCgroupProbeDeps) {}

  /** Where tree cgroups of ours are, without probing (for recognising recorded ones). */
  location(): CgroupLocation | undefined {
    const l = cgroupLocation(this.deps);
    return 'unavailable' in l ? undefined : l;
  }

  now(mode: CgroupMode): CgroupProbeResult {
    if (mode === 'off') return { unavailable: 'turned off by setting' };
    if (this.result) return this.result;
    const location = cgroupLocation(this.deps);
    if ('unavailable' in location) return (this.result = location);
    if (location.kind === 'directory') return (this.result = probeDirectoryTier(location, this.deps));
    void this.probe(mode);
    return { unavailable: 'the cgroup probe (systemd-run --user --scope) has not finished yet' };
  }

  async probe(mode: CgroupMode): Promise<CgroupProbeResult> {
    if (mode === 'off') return { unavailable: 'turned off by setting' };
    if (this.result) return this.result;
    this.pending ??= probeCgroupTier(this.deps).then((r) => (this.result = r));
    return this.pending;
  }
}

/** Directory of one tree's cgroup. Tree ids are unique, so a path names one tree only. */
export function treeCgroupPath(tier: CgroupLocation, treeId: string): string {
  return tier.kind === 'directory' ? path.join(tier.base, TREE_DIR_PREFIX + treeId) : path.join(tier.base, `agent-trees-${treeId}.scope`);
}

/**
 * The command line that starts `command` inside the tree's cgroup: the launcher moves itself into the cgroup,
 * then execs the command, so the root is inside before it can fork.
 */
export function launchInCgroup(
  tier: CgroupLocation,
  cgroupDir: string,
  treeId: string,
  command: string,
  args: string[],
): { file: string; args: string[] } {
  if (tier.kind === 'systemd-scope') {
    return {
      file: 'systemd-run',
      args: ['--user', '--scope', '--quiet', '--collect', `--unit=agent-trees-${treeId}.scope`, '--', command, ...args],
    };
  }
  fs.mkdirSync(cgroupDir);
  return {
    file: '/bin/sh',
    args: ['-c', 'echo $$ > "$0/cgroup.procs" || exit 126; exec "$@"', cgroupDir, command, ...args],
  };
}

/**
 * Pids in a cgroup and in every cgroup below it (empty when it is gone): a member may make a child cgroup and
 * move into it, and it is still in the tree's.
 */
export function cgroupProcs(cgroupDir: string): number[] {
  const pids: number[] = [];
  for (const dir of cgroupsBelow(cgroupDir)) {
    try {
      for (const line of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.push(Number(line));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/** `dir` and every cgroup below it, parents first. */
function cgroupsBelow(dir: string): string[] {
  const out = [dir];
  for (let i = 0; i < out.length && out.length < 10_000; i++) {
    try {
      for (const e of fs.readdirSync(out[i], { withFileTypes: true })) if (e.isDirectory()) out.push(path.join(out[i], e.name));
    } catch {
      /* gone meanwhile, or not a directory */
    }
  }
  return out;
}

/**
 * Whether `dir` is a tree cgroup of ours: directly under our base with our name pattern, and created no later
 * than the tree was tracked (a directory made afresh under the same name is not the recorded one).
 */
export function isOurCgroup(location: CgroupLocation | undefined, dir: string, treeId: string, trackedAt: number): boolean {
  if (!location) return false;
  if (path.resolve(dir) !== treeCgroupPath(location, treeId)) return false;
  try {
    const st = fs.statSync(dir);
    return st.isDirectory() && fs.existsSync(path.join(dir, 'cgroup.procs')) && st.ctimeMs <= trackedAt + 2000;
  } catch {
    return false;
  }
}

/**
 * Kills every member at once, those of child cgroups included: `cgroup.kill` (which kills the whole subtree),
 * or freeze (which freezes the subtree), SIGKILL each, thaw. Returns the pids it found.
 */
export function killCgroup(cgroupDir: string, signalOne: (pid: number) => void): number[] {
  const before = cgroupProcs(cgroupDir);
  if (before.length === 0) return before;
  try {
    fs.writeFileSync(path.join(cgroupDir, 'cgroup.kill'), '1');
    return before;
  } catch {
    /* no cgroup.kill: freeze instead */
  }
  const freeze = path.join(cgroupDir, 'cgroup.freeze');
  try {
    fs.writeFileSync(freeze, '1');
  } catch {
    /* cannot freeze: signal as they are */
  }
  const pids = cgroupProcs(cgroupDir);
  for (const pid of pids) signalOne(pid);
  try {
    fs.writeFileSync(freeze, '0');
  } catch {
    /* nothing to thaw */
  }
  return pids;
}

/**
 * Removes a tree cgroup once empty, with any child cgroups its members made (deepest first). Killed members can
 * linger as zombies until their new parent reaps them, and the kernel refuses the rmdir (EBUSY) until then: so
 * it is retried in the background for a while. Returns whether it is gone now.
 */
export function removeCgroup(cgroupDir: string, retryMs = 10_000): boolean {
  const attempt = (): 'gone' | 'busy' | 'failed' => {
    let result: 'gone' | 'busy' | 'failed' = 'gone';
    for (const dir of cgroupsBelow(cgroupDir).reverse()) {
      try {
        fs.rmdirSync(dir);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') result = code === 'EBUSY' ? 'busy' : 'failed';
      }
    }
    return result;
  };
  const first = attempt();
  if (first !== 'busy' || retryMs <= 0) return first === 'gone';
  const deadline = Date.now() + retryMs;
  const retry = () => {
    if (attempt() === 'busy' && Date.now() < deadline) setTimeout(retry, 100).unref();
  };
  setTimeout(retry, 100).unref();
  return false;
}

/**
 * Removes our tree cgroups that no record names and that are empty and older than a minute (their owner was stopped
 * before it could remove them), saying so in `log`. Returns the directories removed.
 */
export function removeUnnamedEmptyCgroups(
  location: CgroupLocation,
  named: Set<string>,
  now = Date.now(),
  log: Logger = silentLogger,
): string[] {
  if (location.kind !== 'directory') return []; // systemd collects empty transient scopes itself
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(location.base);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(TREE_DIR_PREFIX)) continue;
    const dir = path.join(location.base, name);
    if (named.has(dir)) continue;
    let madeAt: number;
    try {
      madeAt = fs.statSync(dir).ctimeMs;
    } catch {
      continue;
    }
    if (now - madeAt < 60_000) continue; // may be a tree being spawned right now
    if (cgroupProcs(dir).length === 0 && removeCgroup(dir, 0)) {
      removed.push(dir);
      log.info(
        `removed ${dir}: the empty cgroup of agent tree ${name.slice(TREE_DIR_PREFIX.length)}, made ${localTime(madeAt)}; ` +
          'its processes had all ended, but what ran it (an editor window, or agent-trees run) was stopped before it could remove it',
      );
    }
  }
  return removed;
}

/** The cgroup operations a kill and a membership resolution use; tests pass their own. */
export interface CgroupControl {
  /** Pids in a tree's cgroup. */
  procs(cgroupDir: string): number[];
  /** Kills every member at once (see `killCgroup`); returns the pids it found. */
  kill(cgroupDir: string, signalOne: (pid: number) => void): number[];
  /** Removes an emptied tree cgroup (see `removeCgroup`). */
  remove(cgroupDir: string): boolean;
}

export const linuxCgroups: CgroupControl = {
  procs: cgroupProcs,
  kill: killCgroup,
  remove: (dir) => removeCgroup(dir),
};
