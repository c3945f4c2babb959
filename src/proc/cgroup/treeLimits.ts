/**
 * The kernel's side of a tree's budget, where the kernel can hold the line itself:
 *   - the tree's own cgroup v2 directory (as root): `memory.max` with `memory.oom.group` (out of memory, the
 *     kernel kills the whole tree at once) and `memory.swap.max` 0 (it is not pushed into swap instead), and
 *     `pids.max`, each where the hierarchy offers the controller;
 *   - a transient systemd user scope: the same as its properties (`MemoryMax`, `MemorySwapMax`, `TasksMax`);
 *   - where cgroup v2 has no `pids` controller but a cgroup v1 `pids` hierarchy is mounted (hybrid layouts), as
 *     root: a v1 `pids` cgroup of the tree's own below this process's own one (so whatever bounds this process
 *     bounds the tree too), entered by the root before it runs.
 * What the kernel did is read back (`memory.events`, `memory.peak`). The watch (budget/) does the rest.
 *
 * `pids.max` counts threads as well as processes, and the kernel refuses a fork or a new thread at it. The limit
 * is on processes and is the watch's (the tree is ended past it); the kernel's line is twice the limit plus the
 * threads the tree runs besides one per process, raised by the watch as they come: it stops a fork loop that
 * outruns the watch at twice the limit.
 */
import * as fs from 'fs';
import * as path from 'path';
import { cgroupMounts, CgroupTier, ownCgroupOn } from './probe';
import { CgroupEntry, isOurCgroup, removeCgroup, treeCgroupPath } from './treeCgroup';

/** What the kernel is asked to hold: bytes of memory, and a process limit. */
export interface KernelRequest {
  memoryBytes?: number;
  processes?: number;
}

/** Where the kernel holds a tree's lines. */
export interface KernelLines {
  /** The cgroup v2 directory whose `memory.max` (with `memory.oom.group`) holds the tree's memory. */
  memory?: string;
  /** The cgroup directory whose `pids.max` holds the tree's processes (v2, or the tree's v1 `pids` cgroup). */
  pids?: string;
}

/** What the kernel can bound processes at for a limit: twice it, plus threads beyond one per process. */
export function pidsCap(limit: number, extraThreads = 0): number {
  return 2 * limit + extraThreads;
}

/** Writes a cgroup file that exists; never creates one (outside a cgroup file system it would). */
function writeExisting(file: string, value: string): boolean {
  try {
    if (!fs.existsSync(file)) return false;
    fs.writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const enabledBases = new Set<string>();

/**
 * Lets the tree cgroups under `base` have memory and pids controllers where the hierarchy offers them (once per
 * process). `base` holds no process itself (watchdogs sit in a cgroup below it), as cgroup v2 requires.
 */
function enableControllers(base: string): void {
  if (enabledBases.has(base)) return;
  enabledBases.add(base);
  const offered = (readText(path.join(base, 'cgroup.controllers')) ?? '').split(/\s+/);
  const enabled = (readText(path.join(base, 'cgroup.subtree_control')) ?? '').split(/\s+/);
  const wanted = ['memory', 'pids'].filter((c) => offered.includes(c) && !enabled.includes(c));
  if (wanted.length > 0) writeExisting(path.join(base, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
}

/**
 * Sets a tree's limits in its own cgroup v2 directory, before its root runs. Returns the lines the kernel holds:
 * a controller the hierarchy does not offer has no files there, and its line stays the watch's.
 */
export function setTreeLimitsV2(dir: string, request: KernelRequest): KernelLines {
  enableControllers(path.dirname(dir));
  const lines: KernelLines = {};
  if (request.memoryBytes !== undefined && writeExisting(path.join(dir, 'memory.max'), String(request.memoryBytes))) {
    writeExisting(path.join(dir, 'memory.oom.group'), '1');
    writeExisting(path.join(dir, 'memory.swap.max'), '0');
    lines.memory = dir;
  }
  if (request.processes !== undefined && writeExisting(path.join(dir, 'pids.max'), String(pidsCap(request.processes)))) {
    lines.pids = dir;
  }
  return lines;
}

/** The properties a transient systemd user scope takes for the same lines. */
export function scopeProperties(request: KernelRequest): string[] {
  const props: string[] = [];
  if (request.memoryBytes !== undefined) props.push(`--property=MemoryMax=${request.memoryBytes}`, '--property=MemorySwapMax=0');
  if (request.processes !== undefined) props.push(`--property=TasksMax=${pidsCap(request.processes)}`);
  return props;
}

/** Sets the kernel's process line again (threads came or went); a write only when it changes. */
export function setPidsCap(dir: string, cap: number): void {
  const now = readText(path.join(dir, 'pids.max'))?.trim();
  if (now !== String(cap)) writeExisting(path.join(dir, 'pids.max'), String(cap));
}

/** What the kernel did to a tree: processes its OOM killer ended (`memory.events`), and its memory's peak. */
export interface KernelEvents {
  oomKills: number;
  /** `memory.peak` (Linux 5.19+), bytes. */
  memoryPeak?: number;
}

export function readKernelEvents(memoryDir: string): KernelEvents {
  const events = readText(path.join(memoryDir, 'memory.events')) ?? '';
  const oomKills = Number(/^oom_kill (\d+)$/m.exec(events)?.[1] ?? 0);
  const peak = Number(readText(path.join(memoryDir, 'memory.peak'))?.trim());
  return { oomKills, memoryPeak: Number.isFinite(peak) && peak > 0 ? peak : undefined };
}

/** Whether each line's file is there now (a systemd user manager may not have the controller delegated). */
export function presentLines(lines: KernelLines): KernelLines {
  const present: KernelLines = {};
  if (lines.memory && fs.existsSync(path.join(lines.memory, 'memory.max'))) present.memory = lines.memory;
  if (lines.pids && fs.existsSync(path.join(lines.pids, 'pids.max'))) present.pids = lines.pids;
  return present;
}

// ---------------------------------------------------------------------------------------------- cgroup v1 pids

/** What the v1 `pids` cgroup is found from; tests pass their own. */
export interface PidsV1Sources {
  readMountinfo(): string;
  /** `/proc/self/cgroup`. */
  readSelfCgroup(): string;
}

const systemSources: PidsV1Sources = {
  readMountinfo: () => fs.readFileSync('/proc/self/mountinfo', 'utf8'),
  readSelfCgroup: () => fs.readFileSync('/proc/self/cgroup', 'utf8'),
};

/**
 * Where this process's tree cgroups of the v1 `pids` hierarchy go: `agent-trees` below this process's own `pids`
 * cgroup, in the mount of that hierarchy. Undefined where there is none.
 */
export function pidsV1Base(sources: PidsV1Sources = systemSources): string | undefined {
  try {
    const mount = cgroupMounts(sources.readMountinfo()).find((m) => m.fstype === 'cgroup' && m.options.includes('pids'));
    const own = mount && ownCgroupOn(mount, sources.readSelfCgroup());
    return own && path.join(own.ownDir, 'agent-trees');
  } catch {
    return undefined;
  }
}

/** The v1 `pids` base, probed once: made if missing, or undefined where it cannot be (not root, no hierarchy). */
let pidsV1: { base: string | undefined } | undefined;

function probedPidsV1Base(): string | undefined {
  if (pidsV1) return pidsV1.base;
  let base = process.platform === 'linux' && process.getuid?.() === 0 ? pidsV1Base() : undefined;
  try {
    if (base) fs.mkdirSync(base, { recursive: true });
  } catch {
    base = undefined;
  }
  pidsV1 = { base };
  return base;
}

/** A tree's way into its cgroups with the kernel's lines in place. */
export interface LimitedEntry {
  /** The tree's own cgroup entry, a systemd scope's with the lines as its properties. */
  entry?: CgroupEntry;
  /** The root's launcher step into its v1 `pids` cgroup, when it has one. */
  pidsStep?: string;
  lines: KernelLines;
  /** The tree's v1 `pids` cgroup, when it has one (removed with the tree). */
  pidsCgroup?: string;
}

/** What a launch under limits starts from: the cgroup tier and the tree's entry into its cgroup, when it has one. */
export interface LaunchToLimit {
  treeId: string;
  tier?: CgroupTier;
  entry?: CgroupEntry;
}

/** A word for `/bin/sh`, quoted. */
function shellWord(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Puts a tree's kernel lines in place before its root runs (see the top of this file), and says which the
 * kernel holds; a line that cannot be set is left to the watch.
 */
export function launchWithLimits(launch: LaunchToLimit, request: KernelRequest): LimitedEntry {
  const { tier } = launch;
  let { entry } = launch;
  let lines: KernelLines = {};
  if (tier?.kind === 'directory' && entry) lines = setTreeLimitsV2(entry.dir, request);
  if (tier?.kind === 'systemd-scope' && entry?.prefix) {
    // systemd-run's options go before the `--` that starts the command.
    const at = entry.prefix.lastIndexOf('--');
    entry = { ...entry, prefix: [...entry.prefix.slice(0, at), ...scopeProperties(request), ...entry.prefix.slice(at)] };
    lines = {
      memory: request.memoryBytes !== undefined ? entry.dir : undefined,
      pids: request.processes !== undefined ? entry.dir : undefined,
    };
  }
  if (request.processes === undefined || lines.pids) return { entry, lines };
  const base = probedPidsV1Base();
  if (!base) return { entry, lines };
  const dir = treeCgroupPath({ kind: 'directory', base }, launch.treeId);
  try {
    fs.mkdirSync(dir);
  } catch {
    return { entry, lines }; // cannot be made: the watch holds the line
  }
  if (!writeExisting(path.join(dir, 'pids.max'), String(pidsCap(request.processes)))) {
    fs.rmdirSync(dir);
    return { entry, lines };
  }
  const pidsStep = `echo $$ > ${shellWord(path.join(dir, 'cgroup.procs'))} || exit 126`;
  return { entry, pidsStep, lines: { ...lines, pids: dir }, pidsCgroup: dir };
}

/**
 * Removes a recorded tree's v1 `pids` cgroup once nothing of it runs (a sweep ended it): only where it is this
 * hierarchy's cgroup of ours for that tree, made with it, never any other directory a record names.
 */
export function removeTreePidsCgroup(tree: { id: string; pidsCgroup?: string; trackedAt: number }, base = pidsV1Base()): boolean {
  if (!tree.pidsCgroup || !base || !isOurCgroup({ kind: 'directory', base }, tree.pidsCgroup, tree.id, tree.trackedAt)) return false;
  return removeCgroup(tree.pidsCgroup);
}
