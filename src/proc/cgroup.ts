/**
 * The Linux cgroup v2 tier: each owned tree gets a cgroup of its own, entered by its root before it forks, so
 * no member can leave it (setsid, double fork and `env -i` all stay inside). Killing writes `cgroup.kill`
 * (Linux 5.14+), or freezes the cgroup, signals every member and thaws it.
 *
 * Where a writable cgroup v2 hierarchy is found:
 *   - as root: a directory of ours, `<cgroup2 mount>/agent-trees/` (hybrid layouts mount it at
 *     `/sys/fs/cgroup/unified`, pure v2 at `/sys/fs/cgroup`);
 *   - as an ordinary user with a systemd user manager: a transient scope from `systemd-run --user --scope`.
 * Detection runs once per process and is cached.
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';

export type CgroupMode = 'auto' | 'off';

export interface CgroupTier {
  kind: 'directory' | 'systemd-scope';
  /** Folder under which every tree cgroup of ours lives. */
  base: string;
  /** Whether `cgroup.kill` exists (else freeze, signal, thaw). */
  hasKill: boolean;
  /** Why this tier was chosen, for the log. */
  reason: string;
}

export interface CgroupProbeResult {
  tier?: CgroupTier;
  /** Why there is no cgroup tier, when there is none. */
  unavailable?: string;
}

const TREE_DIR_PREFIX = 'tree-';

/** Finds the cgroup2 mount point in `/proc/self/mountinfo` text. Exported for tests. */
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

/** The cgroup v2 path of a process relative to the mount (`0::/path` line of `/proc/<pid>/cgroup`). */
export function cgroupOfProcess(pid: number | 'self'): string | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    const m = /^0::(.*)$/m.exec(text);
    return m ? m[1] : undefined;
  } catch {
    return undefined;
  }
}

export type Exec = (file: string, args: string[], options?: { timeout?: number; env?: NodeJS.ProcessEnv }) => string;
const defaultExec: Exec = (file, args, options) =>
  execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: options?.timeout ?? 5000, env: options?.env });

/** Probes what works, once. `root` is the cgroup2 mount (tests pass their own). */
export function probeCgroupTier(options: { mountinfo?: string; uid?: number; exec?: Exec } = {}): CgroupProbeResult {
  if (process.platform !== 'linux') return { unavailable: 'cgroups exist on Linux only' };
  let mountinfo = options.mountinfo;
  if (mountinfo === undefined) {
    try {
      mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    } catch (e) {
      return { unavailable: `cannot read /proc/self/mountinfo: ${(e as Error).message}` };
    }
  }
  const mount = cgroup2Mount(mountinfo);
  if (!mount) return { unavailable: 'no cgroup2 file system is mounted' };
  const uid = options.uid ?? process.getuid?.() ?? -1;
  if (uid === 0) {
    const base = path.join(mount, 'agent-trees');
    const problem = probeDirectory(base);
    if (!problem) {
      return { tier: { kind: 'directory', base, hasKill: fs.existsSync(path.join(base, 'cgroup.kill')) || probeHasKill(base), reason: `own cgroup directories under ${base}` } };
    }
    return { unavailable: `cannot create cgroups under ${base}: ${problem}` };
  }
  return probeSystemdScope(mount, uid, options.exec ?? defaultExec);
}

/** Creates `base` and a child in it, to prove we may; the child is removed again. */
function probeDirectory(base: string): string | undefined {
  try {
    fs.mkdirSync(base, { recursive: true });
    const probe = path.join(base, `probe-${process.pid}`);
    fs.mkdirSync(probe, { recursive: true });
    const ok = fs.existsSync(path.join(probe, 'cgroup.procs'));
    fs.rmdirSync(probe);
    fs.accessSync(path.join(base, 'cgroup.procs'), fs.constants.W_OK);
    return ok ? undefined : 'the new directory has no cgroup.procs (not a cgroup2 file system?)';
  } catch (e) {
    return (e as Error).message;
  }
}

function probeHasKill(base: string): boolean {
  // The root of a hierarchy has no cgroup.kill; any child does on 5.14+.
  try {
    const probe = path.join(base, `probe-kill-${process.pid}`);
    fs.mkdirSync(probe);
    const has = fs.existsSync(path.join(probe, 'cgroup.kill'));
    fs.rmdirSync(probe);
    return has;
  } catch {
    return false;
  }
}

/** As an ordinary user: a systemd user manager hands out transient scopes in a subtree delegated to the user. */
function probeSystemdScope(mount: string, uid: number, exec: Exec): CgroupProbeResult {
  const unit = `agent-trees-probe-${process.pid}.scope`;
  try {
    exec('systemd-run', ['--user', '--scope', '--quiet', '--collect', `--unit=${unit}`, '--', 'true'], { timeout: 5000 });
  } catch (e) {
    return { unavailable: `systemd-run --user --scope does not work here: ${firstLine((e as Error).message)}` };
  }
  const base = path.join(mount, `user.slice/user-${uid}.slice/user@${uid}.service/app.slice`);
  return {
    tier: { kind: 'systemd-scope', base, hasKill: true, reason: `transient systemd user scopes under ${base}` },
  };
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

let cached: CgroupProbeResult | undefined;

/** The tier for this process, probed on first use. */
export function cgroupTier(mode: CgroupMode): CgroupProbeResult {
  if (mode === 'off') return { unavailable: 'turned off by setting' };
  return (cached ??= probeCgroupTier());
}

/** Directory of one tree's cgroup. Tree ids are unique, so a path names one tree only. */
export function treeCgroupPath(tier: CgroupTier, treeId: string): string {
  return tier.kind === 'directory'
    ? path.join(tier.base, TREE_DIR_PREFIX + treeId)
    : path.join(tier.base, `agent-trees-${treeId}.scope`);
}

/**
 * The command line that starts `command` inside the tree's cgroup: the launcher moves itself into the cgroup,
 * then execs the command, so the root is inside before it can fork.
 */
export function launchInCgroup(tier: CgroupTier, cgroupDir: string, treeId: string, command: string, args: string[]): { file: string; args: string[] } {
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

/** Pids in a cgroup (empty when it is gone). */
export function cgroupProcs(cgroupDir: string): number[] {
  try {
    return fs.readFileSync(path.join(cgroupDir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Whether `dir` is a tree cgroup of ours: directly under our base with our name pattern, and created no later
 * than the tree was tracked (a directory made afresh under the same name is not the recorded one).
 */
export function isOurCgroup(tier: CgroupTier | undefined, dir: string, treeId: string, trackedAt: number): boolean {
  if (!tier) return false;
  if (path.resolve(dir) !== treeCgroupPath(tier, treeId)) return false;
  try {
    const st = fs.statSync(dir);
    return st.isDirectory() && fs.existsSync(path.join(dir, 'cgroup.procs')) && st.ctimeMs <= trackedAt + 2000;
  } catch {
    return false;
  }
}

/** Kills every member at once: `cgroup.kill`, or freeze, SIGKILL each, thaw. Returns the pids it found. */
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
 * Removes a tree cgroup once empty. Killed members can linger as zombies until their new parent reaps them,
 * and the kernel refuses the rmdir (EBUSY) until then: so it is retried in the background for a while.
 * Returns whether it is gone now.
 */
export function removeCgroup(cgroupDir: string, retryMs = 10_000): boolean {
  const attempt = (): 'gone' | 'busy' | 'failed' => {
    try {
      fs.rmdirSync(cgroupDir);
      return 'gone';
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return code === 'ENOENT' ? 'gone' : code === 'EBUSY' ? 'busy' : 'failed';
    }
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

/** Our tree cgroups that no record names and that are empty and older than a minute: left by a killed owner. */
export function removeUnnamedEmptyCgroups(tier: CgroupTier, named: Set<string>, now = Date.now()): string[] {
  if (tier.kind !== 'directory') return []; // systemd collects empty transient scopes itself
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(tier.base);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(TREE_DIR_PREFIX)) continue;
    const dir = path.join(tier.base, name);
    if (named.has(dir)) continue;
    try {
      if (now - fs.statSync(dir).ctimeMs < 60_000) continue; // may be a tree being spawned right now
    } catch {
      continue;
    }
    if (cgroupProcs(dir).length === 0 && removeCgroup(dir, 0)) removed.push(dir);
  }
  return removed;
}
