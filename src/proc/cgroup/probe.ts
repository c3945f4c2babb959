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
  return cgroupMounts(mountinfo).find((m) => m.fstype === 'cgroup2')?.mountPoint;
}

function unescapeMount(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
}

/** A cgroup file system mounted here (a line of /proc/self/mountinfo). */
export interface CgroupMount {
  mountPoint: string;
  /** The part of the hierarchy mounted (`/`, or a container's cgroup). */
  root: string;
  fstype: 'cgroup' | 'cgroup2';
  /** Super options: a v1 mount's controllers are among them. */
  options: string[];
}

/** Every cgroup mount in `/proc/self/mountinfo` text. */
export function cgroupMounts(mountinfo: string): CgroupMount[] {
  return mountinfo.split('\n').flatMap((line) => {
    const [before, after] = line.split(' - ');
    if (!after) return [];
    const [fstype, , options = ''] = after.split(' ');
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') return [];
    const [, , , root, mountPoint] = before.split(' ');
    return [{ mountPoint: unescapeMount(mountPoint ?? ''), root, fstype, options: options.split(',') }];
  });
}

/** The lines of a /proc/<pid>/cgroup text: hierarchy id, controllers (empty for cgroup2), path. */
export function cgroupLines(text: string): { id: string; controllers: string; path: string }[] {
  return text.split('\n').flatMap((l) => {
    const m = /^(\d+):([^:]*):(.*)$/.exec(l);
    return m ? [{ id: m[1], controllers: m[2], path: m[3] }] : [];
  });
}

/** A cgroup hierarchy as mounted here, and the cgroup this process runs in on it. */
export interface CgroupHierarchy {
  mountPoint: string;
  /** The part of the hierarchy mounted there, as /proc/<pid>/cgroup paths start. */
  root: string;
  /** The hierarchy's field of a /proc/<pid>/cgroup line: empty for cgroup2, else its controllers. */
  controllers: string;
  /** The cgroup this process runs in, as a directory. */
  ownDir: string;
}

/**
 * `mount` and this process's cgroup on it (from `/proc/self/cgroup` text): undefined when that cgroup lies outside
 * the part mounted (a container's mount of a part of the hierarchy shows our cgroup only if it lies in that part),
 * or cannot be told: in a cgroup namespace both paths are relative to the namespace's root, and one above it shows
 * as `/..`, which names no cgroup (the mount's root would be taken for ours).
 */
export function ownCgroupOn(mount: CgroupMount, selfCgroup: string): CgroupHierarchy | undefined {
  const line = cgroupLines(selfCgroup).find((l) =>
    mount.fstype === 'cgroup2'
      ? l.id === '0' && l.controllers === ''
      : l.controllers !== '' && l.controllers.split(',').every((c) => mount.options.includes(c)),
  );
  if (!line || [mount.root, line.path].some((p) => p.split('/').includes('..'))) return undefined;
  const relative = path.posix.relative(mount.root, line.path);
  if (relative === '..' || relative.startsWith('../')) return undefined;
  return { mountPoint: mount.mountPoint, root: mount.root, controllers: line.controllers, ownDir: path.join(mount.mountPoint, relative) };
}

/** The hierarchy whose mount holds `dir`, with this process's cgroup on it (see `ownCgroupOn`). */
export function cgroupHierarchyOf(dir: string, mountinfo: string, selfCgroup: string): CgroupHierarchy | undefined {
  const holding = cgroupMounts(mountinfo).filter((m) => dir === m.mountPoint || dir.startsWith(m.mountPoint.replace(/\/?$/, '/')));
  const mount = holding.sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
  return mount && ownCgroupOn(mount, selfCgroup);
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
