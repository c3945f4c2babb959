/**
 * Whether and where this process can make tree cgroups (the Linux cgroup v2 tier): as root, a directory of ours,
 * `<cgroup2 mount>/agent-trees/` (hybrid layouts mount it at `/sys/fs/cgroup/unified`, pure v2 at
 * `/sys/fs/cgroup`); as an ordinary user with a systemd user manager, transient scopes from
 * `systemd-run --user --scope`. Where our cgroups live (`cgroupLocation`) is read from mountinfo alone; whether we
 * can make them (`CgroupProber`) is probed once per process, asynchronously where it runs `systemd-run`.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

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
