/**
 * Spawning an owned tree: the root gets its own session and process group (POSIX) or its own process group
 * with no console window (Windows), the tag `AGENT_TREES_TREE_ID=<id>` that every descendant inherits, and,
 * where the Linux cgroup tier is available, its own cgroup, entered before the root can fork.
 */
import { ChildProcess, spawn, StdioOptions } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { CgroupMode, CgroupProbeResult } from '../cgroup/probe';
import { cgroupEntry, CgroupEntry, removeCgroup, treeCgroupPath } from '../cgroup/treeCgroup';
import { KernelLines, LimitedEntry, launchWithLimits } from '../cgroup/treeLimits';
import { latestStart } from '../identity/startTimes';
import { hostClock } from '../platform/bootClock';
import { HOST_MARK_VARIABLE, ProcessTable, TREE_ID_VARIABLE } from '../platform/processTable';
import { BYTES_PER_MB, TreeLimits, TreeRecord } from '../records/schema';
import { cmdLine, resolveExecutable } from './executable';
import { SpawnError } from './spawnError';

export interface SpawnTreeOptions {
  command: string;
  args?: string[];
  /** Defaults to a fresh random id. Letters, digits, '.', '_' and '-' only. */
  id?: string;
  label?: string;
  cwd?: string;
  /** Variables added to (or, with undefined, removed from) the inherited environment. */
  env?: Record<string, string | undefined>;
  /** 'pipe' (default) or 'inherit', or a full stdio array. */
  stdio?: 'pipe' | 'inherit' | StdioOptions;
  cgroups?: CgroupMode;
  /** The tree's budget: recorded, and held by the kernel where it can be (cgroup/treeLimits.ts). */
  limits?: TreeLimits;
  /**
   * Hold the root before it runs the command, until the spawned tree's `release()`: the owner releases it once its
   * record of the tree is in place, so no tree runs that no record names, whenever the owner dies (POSIX only).
   */
  held?: boolean;
}

/**
 * What the owner needs from a tree's root: its pid and its exit. A `ChildProcess` (pipes) is one; so is a
 * pseudo-terminal's root (`PtyRoot`, pty/ptyRoot.ts). Neither is ever asked to signal: kills go through the killer
 * (kill/treeKiller.ts) only.
 */
export interface TreeRoot {
  readonly pid?: number;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
}

export interface SpawnedTree<R extends TreeRoot = ChildProcess> {
  child: R;
  record: TreeRecord;
  /** 'cgroup' when the tree has its own cgroup, else 'group' (process group + session + descendants + tag). */
  tier: 'cgroup' | 'group';
  /** Why the tree did not get a cgroup, when it did not. */
  tierNote?: string;
  /** Where the kernel holds the tree's limits (none: the watch alone). */
  kernelLines: KernelLines;
  /** Lets a held root (`SpawnTreeOptions.held`) run its command; undefined when it was not held. */
  release?: () => void;
}

/**
 * How a held root waits before it runs its command: for a line `go` on an inherited descriptor whose other end
 * only its starter holds (pipes), or for the end of input on its terminal while its starter is still its parent
 * (a pseudo-terminal: nothing else can be passed to it). The starter's death ends the wait either way, and the
 * root exits without running anything.
 */
export type RootGate = { fd: number } | 'tty';

/** The launcher's wait at the gate: a shell step that exits 125 unless the root was let go. */
function gateStep(gate: RootGate): string {
  if (gate !== 'tty') return `read -r go <&${gate.fd}; exec ${gate.fd}<&-; [ "$go" = go ] || exit 125`;
  // The terminal's end-of-input character is not echoed. A starter that died hung the terminal up (reads end),
  // and the root has another parent by then.
  return (
    'read -r _; if [ -r /proc/$$/stat ]; then read -r _ _ _ pp _ < /proc/$$/stat; ' +
    'else pp=$PPID; kill -0 "$pp" 2>/dev/null || pp=; fi; [ "$pp" = "$PPID" ] || exit 125'
  );
}

/** How to start a root: the command line (through the cgroup launcher when there is one), folder and environment. */
export interface RootLaunch {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Starts a root in a session and process group of its own. `sessionLeader`: the root leads its own session and
 * group from its first instruction on (forkpty), so the record takes pid as pgid and sid rather than reading
 * them from /proc, where the fork may not have reached its setsid() yet.
 */
export type RootStarter<R extends TreeRoot> = (launch: RootLaunch) => { root: R; sessionLeader?: boolean; release?: () => void };

/** What a spawn reads: the table (the root's identity) and the cgroup tier (see core.ts). */
export interface SpawnParts {
  table: Pick<ProcessTable, 'read' | 'startPrecision'>;
  cgroupTier(mode: CgroupMode): CgroupProbeResult;
}

function newTreeId(): string {
  return randomBytes(6).toString('hex');
}

const ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/** Spawns `command` as the root of a new owned tree and returns its record. Throws SpawnError before spawning. */
export function spawnTree(options: SpawnTreeOptions, core: SpawnParts): SpawnedTree<ChildProcess> {
  const stdio = stdioArray(options.stdio ?? 'pipe');
  const gate = options.held && process.platform !== 'win32' ? { fd: stdio.length } : undefined;
  return spawnTreeWith(
    options,
    (launch) => {
      const cmd = cmdLine(launch.file, launch.args);
      const root: ChildProcess = spawn(launch.file, cmd?.args ?? launch.args, {
        cwd: launch.cwd,
        env: launch.env,
        stdio: gate ? [...stdio, 'pipe'] : stdio,
        detached: true, // POSIX: setsid(); Windows: a new process group
        windowsHide: true,
        windowsVerbatimArguments: cmd !== undefined,
      });
      const gateEnd = gate && (root.stdio[gate.fd] as NodeJS.WritableStream | null);
      gateEnd?.on('error', () => {}); // the root is gone: its exit says so
      return { root, release: gateEnd ? () => gateEnd.end('go\n') : undefined };
    },
    { core, gate },
  );
}

type StdioEntry = Exclude<StdioOptions, string>[number];

/** A stdio option as an array of at least three entries (undefined keeps an entry's default, a pipe). */
function stdioArray(stdio: 'pipe' | 'inherit' | StdioOptions): StdioEntry[] {
  if (typeof stdio === 'string') return [stdio, stdio, stdio] as StdioEntry[];
  const list = [...stdio];
  while (list.length < 3) list.push(undefined);
  return list;
}

/**
 * The checks a spawn makes before it starts anything (tree id, working folder, executable), so a front end can
 * report a bad definition before it opens a terminal for it. Throws SpawnError.
 */
export function checkSpawn(options: Pick<SpawnTreeOptions, 'command' | 'id' | 'cwd' | 'env'>): void {
  prepare(options);
}

function prepare(options: Pick<SpawnTreeOptions, 'command' | 'id' | 'cwd' | 'env'>): {
  id: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  executable: string;
} {
  const id = options.id ?? newTreeId();
  if (!ID_PATTERN.test(id)) throw new SpawnError(`tree id "${id}": use letters, digits, '.', '_' and '-' only`, 'EINVAL');
  const cwd = options.cwd ?? process.cwd();
  // An empty cwd is one whose variables expanded to nothing (`${env:UNSET}`): say so, not "  does not exist".
  if (cwd === '') throw new SpawnError('working folder is empty (did its variables expand to nothing?)', 'ENOTDIR');
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(cwd);
  } catch {
    throw new SpawnError(`working folder ${cwd} does not exist`, 'ENOTDIR');
  }
  if (!stat.isDirectory()) throw new SpawnError(`working folder ${cwd} is not a folder`, 'ENOTDIR');
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  env[TREE_ID_VARIABLE] = id;
  // An owned tree is no process of the extension host's other extensions: its own rules end it.
  delete env[HOST_MARK_VARIABLE];
  return { id, cwd, env, executable: resolveExecutable(options.command, env, cwd) };
}

/**
 * The one path every owned tree starts through, whatever its stdio: tag, cgroup launcher, root identity, record.
 * `start` starts the root (pipes: spawnTree; a pseudo-terminal: pty/spawnPtyTree.ts) or throws.
 */
export function spawnTreeWith<R extends TreeRoot>(
  options: SpawnTreeOptions,
  start: RootStarter<R>,
  how: { core: SpawnParts; gate?: RootGate },
): SpawnedTree<R> {
  const { core } = how;
  const { id, cwd, env, executable } = prepare(options);
  const args = options.args ?? [];
  const { entry: ownEntry, tierNote } = treeCgroup(options, id, core);
  const limited = kernelLimits({ treeId: id, entry: ownEntry }, options, core);
  const { entry, pidsStep } = limited;
  const { file, args: argv } = rootCommandLine(executable, args, { entry, pidsStep, gate: how.gate });
  const cgroup = entry?.dir ?? null;

  const spawnedAt = Date.now();
  let started: ReturnType<RootStarter<R>>;
  try {
    started = start({ file, args: argv, cwd, env });
  } catch (e) {
    removeCgroups(cgroup, limited.pidsCgroup);
    throw new SpawnError(`${options.command}: ${(e as Error).message}`, 'EINVAL');
  }
  const child = started.root;
  if (child.pid === undefined) {
    removeCgroups(cgroup, limited.pidsCgroup);
    // The 'error' event follows; keep it from being an unhandled error.
    child.on('error', () => {});
    throw new SpawnError(`${options.command}: could not be started`, 'ENOENT');
  }
  const root = core.table.read(child.pid);
  const rootStartTime = root ? root.startTime : spawnedAt;
  const ticks = bootTicksOf(root);
  const ownGroup = started.sessionLeader || process.platform === 'win32';
  const record: TreeRecord = {
    id,
    label: options.label ?? path.basename(options.command),
    command: [options.command, ...args],
    rootPid: child.pid,
    pgid: ownGroup ? child.pid : (root?.pgid ?? child.pid),
    sid: ownGroup ? child.pid : (root?.sid ?? child.pid),
    rootStartTime,
    // Never earlier than the latest moment the root can have started, with one more precision step for the
    // boot-time estimate of another process (the sweeper's), so the sweep's "leader started no later than
    // trackedAt" holds for the real root whatever the start-time rounding.
    trackedAt: Math.max(
      Date.now(),
      root ? latestStart(root, core.table.startPrecision.errorMs) + core.table.startPrecision.errorMs : spawnedAt,
    ),
    envTag: `${TREE_ID_VARIABLE}=${id}`,
    cgroup,
    ...ticks,
    ...(options.limits && { limits: options.limits, ...(limited.pidsCgroup && { pidsCgroup: limited.pidsCgroup }) }),
  };
  return { child, record, tier: cgroup ? 'cgroup' : 'group', tierNote, kernelLines: limited.lines, release: started.release };
}

/**
 * The tree's kernel lines in place before its root runs (cgroup/treeLimits.ts): on Linux with cgroups on, for a
 * tree with limits. Elsewhere the entry as it is, and the watch alone holds the limits.
 */
function kernelLimits(
  launch: { treeId: string; entry?: CgroupEntry },
  options: Pick<SpawnTreeOptions, 'limits' | 'cgroups'>,
  core: SpawnParts,
): LimitedEntry {
  const { limits } = options;
  if (!limits || process.platform !== 'linux' || options.cgroups === 'off') return { entry: launch.entry, lines: {} };
  const tier = launch.entry ? core.cgroupTier(options.cgroups ?? 'auto').tier : undefined;
  const request = {
    memoryBytes: limits.maxMemoryMB === undefined ? undefined : limits.maxMemoryMB * BYTES_PER_MB,
    processes: limits.maxProcesses,
  };
  return launchWithLimits({ ...launch, tier }, request);
}

function removeCgroups(...dirs: (string | null | undefined)[]): void {
  for (const dir of dirs) if (dir) removeCgroup(dir);
}

/** The tree's own cgroup, where the Linux cgroup tier is there (its directory made), or why it has none. */
function treeCgroup(options: SpawnTreeOptions, id: string, core: SpawnParts): { entry?: CgroupEntry; tierNote?: string } {
  if (process.platform !== 'linux') return {};
  const probe = core.cgroupTier(options.cgroups ?? 'auto');
  if (!probe.tier) return { tierNote: probe.unavailable };
  try {
    return { entry: cgroupEntry(probe.tier, id) };
  } catch (e) {
    return { tierNote: `cannot create cgroup ${treeCgroupPath(probe.tier, id)}: ${(e as Error).message}` };
  }
}

/**
 * The root's command line: the command itself, or a launcher shell that enters the tree's cgroup and waits at
 * its gate before it execs the command (same pid, same start time: the record's root is the command's), or
 * `systemd-run` in front of it.
 */
function rootCommandLine(
  executable: string,
  args: string[],
  how: { entry?: CgroupEntry; pidsStep?: string; gate?: RootGate },
): { file: string; args: string[] } {
  const { entry, gate } = how;
  const steps = [entry?.shellStep, how.pidsStep, gate && gateStep(gate)].filter((step): step is string => step !== undefined);
  const command = [...(entry?.prefix ?? []), executable, ...args];
  if (steps.length === 0) return { file: command[0], args: command.slice(1) };
  return { file: '/bin/sh', args: ['-c', `${steps.join('; ')}; exec "$@"`, entry?.dir ?? 'agent-trees', ...command] };
}

/**
 * The root's identity in boot ticks: its exact start tick, and the tick tracking began at, read after the
 * root so the root provably started no later (both are floor(boot time / 10 ms)). None where there is no boot
 * clock; without the root's start tick (it could not be read) the tracking tick alone still bounds the leader.
 */
function bootTicksOf(root: { startKey: number } | undefined): Pick<TreeRecord, 'rootStartTicks' | 'trackedAtTicks'> {
  const clock = hostClock();
  if (!clock || !clock.procIsOurs) return {};
  try {
    const trackedAtTicks = clock.nowTicks();
    return root && root.startKey <= trackedAtTicks ? { rootStartTicks: root.startKey, trackedAtTicks } : { trackedAtTicks };
  } catch {
    return {};
  }
}
