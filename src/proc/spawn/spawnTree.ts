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
import { launchInCgroup, removeCgroup, treeCgroupPath } from '../cgroup/treeCgroup';
import { KernelLines, LaunchToLimit, LimitedLaunch, launchWithLimits } from '../cgroup/treeLimits';
import { latestStart } from '../identity/startTimes';
import { hostClock } from '../platform/bootClock';
import { ProcessTable, TREE_ID_VARIABLE } from '../platform/processTable';
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
export type RootStarter<R extends TreeRoot> = (launch: RootLaunch) => { root: R; sessionLeader?: boolean };

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
  return spawnTreeWith(
    options,
    (launch) => {
      const cmd = cmdLine(launch.file, launch.args);
      return {
        root: spawn(launch.file, cmd?.args ?? launch.args, {
          cwd: launch.cwd,
          env: launch.env,
          stdio: options.stdio ?? 'pipe',
          detached: true, // POSIX: setsid(); Windows: a new process group
          windowsHide: true,
          windowsVerbatimArguments: cmd !== undefined,
        }),
      };
    },
    core,
  );
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
  return { id, cwd, env, executable: resolveExecutable(options.command, env, cwd) };
}

/**
 * The one path every owned tree starts through, whatever its stdio: tag, cgroup launcher, root identity, record.
 * `start` starts the root (pipes: spawnTree; a pseudo-terminal: pty/spawnPtyTree.ts) or throws.
 */
export function spawnTreeWith<R extends TreeRoot>(options: SpawnTreeOptions, start: RootStarter<R>, core: SpawnParts): SpawnedTree<R> {
  const { id, cwd, env, executable } = prepare(options);
  const args = options.args ?? [];

  let file = executable;
  let argv = args;
  let cgroup: string | null = null;
  let tierNote: string | undefined;
  if (process.platform === 'linux') {
    const probe = core.cgroupTier(options.cgroups ?? 'auto');
    if (probe.tier) {
      const dir = treeCgroupPath(probe.tier, id);
      try {
        ({ file, args: argv } = launchInCgroup(probe.tier, id, executable, args));
        cgroup = dir;
      } catch (e) {
        tierNote = `cannot create cgroup ${dir}: ${(e as Error).message}`;
      }
    } else {
      tierNote = probe.unavailable;
    }
  }

  const limited = kernelLimits({ file, args: argv, treeId: id, cgroupDir: cgroup ?? undefined }, options, core);
  ({ file, args: argv } = limited);

  const spawnedAt = Date.now();
  let started: { root: R; sessionLeader?: boolean };
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
  return { child, record, tier: cgroup ? 'cgroup' : 'group', tierNote, kernelLines: limited.lines };
}

/**
 * The launch of a tree with limits, with the kernel's lines in place (cgroup/treeLimits.ts): on Linux with
 * cgroups on. Elsewhere the launch as it is, and the watch alone holds the limits.
 */
function kernelLimits(
  launch: Omit<LaunchToLimit, 'tier'>,
  options: Pick<SpawnTreeOptions, 'limits' | 'cgroups'>,
  core: SpawnParts,
): LimitedLaunch {
  const { limits } = options;
  if (!limits || process.platform !== 'linux' || options.cgroups === 'off') return { file: launch.file, args: launch.args, lines: {} };
  const tier = launch.cgroupDir ? core.cgroupTier(options.cgroups ?? 'auto').tier : undefined;
  const request = {
    memoryBytes: limits.maxMemoryMB === undefined ? undefined : limits.maxMemoryMB * BYTES_PER_MB,
    processes: limits.maxProcesses,
  };
  return launchWithLimits({ ...launch, tier }, request);
}

function removeCgroups(...dirs: (string | null | undefined)[]): void {
  for (const dir of dirs) if (dir) removeCgroup(dir);
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
