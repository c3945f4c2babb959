/**
 * Kill benchmark: ms from the kill request until every member of a tree of N processes is dead (zombies count
 * as dead), ours vs tree-kill vs a bare `process.kill(-pgid, 'SIGKILL')` floor. Trees: a root that forked N-1
 * sleeping children, all in its process group and all its direct children.
 */
import { ChildProcess } from 'child_process';
import { processCore, TreeOwner } from '../src/proc';
import {
  childrenCpuMs,
  log,
  Member,
  processCpuMs,
  realKill,
  register,
  registerCgroup,
  registerGroup,
  rotated,
  selfCpuMs,
  sleep,
  spawnDetachedTree,
  summarize,
  Summary,
  treeCommand,
  treeMembers,
  waitReady,
  nowNs,
  msSince,
} from './lib';
import { DeadWatcher, TreeKillProcess } from './watcher';

export type KillMethod = 'ours' | 'ours-group' | 'ours-direct' | 'tree-kill' | 'floor';

export interface KillRun {
  /** ms from the kill request until the last member was seen dead; the cap when capped. */
  deadMs: number;
  /** ms until the kill call's promise/callback settled (ours, tree-kill). */
  returnMs?: number;
  /** CPU ms (this process + reaped children, e.g. tree-kill's `ps` calls) from the request until settled. */
  cpuMs: number;
  capped: boolean;
  survivors: number;
  /** Signals tree-kill tried to send to processes that were not (or no longer) members: dropped by the guard. */
  blocked?: number;
}

export interface KillMethodResult {
  method: KillMethod;
  title: string;
  dead: Summary;
  returned?: Summary;
  cpuMs: Summary;
  capped: boolean;
  runs: KillRun[];
}

export interface KillSizeResult {
  size: number;
  methods: KillMethodResult[];
}

export interface KillResults {
  capMs: number;
  tier: string;
  sizes: KillSizeResult[];
}

export function killTitles(tier: string): Record<KillMethod, string> {
  return {
    ours: `ours: TreeOwner.kill(id, 0), ${tier} tier`,
    'ours-group': 'ours: TreeOwner.kill(id, 0), group tier (cgroups off)',
    'ours-direct': `ours: core.killer.kill(record, {graceMs: 0}) directly, ${tier} tier`,
    'tree-kill': "tree-kill(rootPid, 'SIGKILL')",
    floor: "process.kill(-pgid, 'SIGKILL') (floor)",
  };
}

interface Built {
  rootPid: number;
  /** Settles when Node has reaped the root (so its CPU is in our children's CPU by then). */
  rootReaped: Promise<unknown>;
  members: Member[];
  /** Waits until the kill can be requested at once (tree-kill: its runner process is up). */
  prepare?: () => Promise<void>;
  /** Requests the kill; returns the request time, and a promise that settles with the call. */
  kill: () => { t0: bigint; call: Promise<unknown> };
  /** The call's own figures, when it reports them (tree-kill's runner): request/return time, CPU, blocked signals. */
  report?: () => Promise<{ t0Ns: bigint; t1Ns: bigint; cpuMs: number; blocked: number } | undefined>;
  /** Stops a call that is still running (tree-kill at the cap); returns the CPU ms it had used, if known. */
  abort?: () => number | undefined;
}

function exited(child: ChildProcess): Promise<unknown> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
}

async function buildOwned(owner: TreeOwner, n: number, direct: boolean): Promise<Built> {
  const tree = owner.spawn({ ...treeCommand(n), stdio: ['ignore', 'pipe', 'ignore'] });
  registerGroup(tree.child.pid);
  registerCgroup(tree.record.cgroup);
  await waitReady(tree.child);
  const members = treeMembers(tree.child.pid!);
  if (members.length !== n) throw new Error(`owned tree of ${n}: found ${members.length} members`);
  const record = tree.record;
  return {
    rootPid: record.rootPid,
    rootReaped: exited(tree.child),
    members,
    kill: () => {
      const t0 = nowNs();
      const call = direct
        ? processCore().killer.kill(record, { graceMs: 0, continuouslyOwned: true, cgroupVerified: record.cgroup !== null })
        : owner.kill(record.id, 0);
      return { t0, call };
    },
  };
}

async function buildDetached(n: number, method: 'tree-kill' | 'floor'): Promise<Built> {
  const { child, members } = await spawnDetachedTree(n);
  const pgid = child.pid!;
  if (method === 'floor') {
    return {
      rootPid: pgid,
      rootReaped: exited(child),
      members,
      kill: () => {
        const t0 = nowNs();
        realKill(-pgid, 'SIGKILL');
        return { t0, call: Promise.resolve() };
      },
    };
  }
  // tree-kill runs in a process of its own (see treeKillRunner.ts), allowed to signal only the members.
  const runner = new TreeKillProcess({ rootPid: pgid, members: members.map((m) => [m.pid, m.startKey]) });
  return {
    rootPid: pgid,
    rootReaped: exited(child),
    members,
    prepare: () => runner.ready,
    kill: () => ({ t0: runner.go(), call: runner.result }),
    report: () => runner.result,
    abort: () => {
      const cpu = runner.cpuSoFar();
      runner.abort();
      return cpu;
    },
  };
}

async function runOnce(
  method: KillMethod,
  n: number,
  owners: { cgroup: TreeOwner; group: TreeOwner },
  watcher: DeadWatcher,
  capMs: number,
): Promise<KillRun> {
  const built =
    method === 'ours'
      ? await buildOwned(owners.cgroup, n, false)
      : method === 'ours-direct'
        ? await buildOwned(owners.cgroup, n, true)
        : method === 'ours-group'
          ? await buildOwned(owners.group, n, false)
          : await buildDetached(n, method);
  for (const m of built.members.slice(0, 1)) register(m.pid);
  await built.prepare?.();
  await sleep(100); // let the forks settle
  const timeout = method === 'tree-kill' ? capMs : 30_000;
  const w = watcher.watch(built.members, timeout);
  await w.armed;
  // The root is our child: when it is reaped, its own CPU (the forking) lands in our children's CPU. Not the kill's.
  const rootCpu = processCpuMs(built.rootPid);
  const cpu0 = selfCpuMs();
  const child0 = childrenCpuMs() + rootCpu;
  const { t0, call } = built.kill();
  let returnedAt: bigint | undefined;
  const settled = call.then(() => {
    returnedAt = nowNs();
  });
  const result = await w.done;
  let capped = false;
  let survivors = 0;
  let abortedCpu: number | undefined;
  if (!result.allDeadAtNs) {
    // Capped (tree-kill) or a failure: stop whatever is still going, then end the tree ourselves.
    capped = method === 'tree-kill';
    survivors = result.survivors.length;
    abortedCpu = built.abort?.();
    realKill(-built.rootPid, 'SIGKILL');
  }
  await Promise.race([settled, sleep(60_000)]);
  await Promise.race([built.rootReaped, sleep(5000)]);
  let cpuMs = selfCpuMs() - cpu0 + (childrenCpuMs() - child0);
  const own = await built.report?.();
  if (own) cpuMs = own.cpuMs;
  else if (abortedCpu !== undefined) cpuMs = abortedCpu; // the runner and the `ps` calls it had reaped by the cap
  if (!result.allDeadAtNs) {
    const again = watcher.watch(built.members, 10_000);
    const r2 = await again.done;
    if (!r2.allDeadAtNs) throw new Error(`${method} ${n}: ${r2.survivors.length} members still alive after the cleanup kill`);
  }
  // tree-kill's runner timed its own call (same monotonic clock): use its request and return times.
  const start = own?.t0Ns ?? t0;
  const deadMs = result.allDeadAtNs ? msSince(start, result.allDeadAtNs) : capMs;
  const returnMs =
    method === 'floor' ? undefined : own ? msSince(start, own.t1Ns) : returnedAt && !capped ? msSince(start, returnedAt) : undefined;
  return { deadMs, returnMs, cpuMs, capped, survivors, blocked: own?.blocked };
}

export async function runKill(opts: {
  owners: { cgroup: TreeOwner; group: TreeOwner };
  tier: string;
  sizes: number[];
  reps: (method: KillMethod, size: number) => number;
  capMs: number;
}): Promise<KillResults> {
  const titles = killTitles(opts.tier);
  const methods: KillMethod[] = ['ours', 'floor', 'ours-group', 'tree-kill', 'ours-direct'];
  const watcher = new DeadWatcher();
  const sizes: KillSizeResult[] = [];
  try {
    for (const n of opts.sizes) {
      const runs = new Map<KillMethod, KillRun[]>(methods.map((m) => [m, []]));
      const maxReps = Math.max(...methods.map((m) => opts.reps(m, n)));
      log(`kill: trees of ${n}, up to ${maxReps} rounds`);
      for (let r = 0; r < maxReps; r++) {
        for (const m of rotated(methods, r)) {
          if (runs.get(m)!.length >= opts.reps(m, n)) continue;
          const run = await runOnce(m, n, opts.owners, watcher, opts.capMs);
          runs.get(m)!.push(run);
          log(
            `kill: ${n} ${m}: ${run.deadMs.toFixed(1)} ms${run.capped ? ' (capped)' : ''}${run.returnMs !== undefined ? `, returned at ${run.returnMs.toFixed(1)} ms` : ''}, ${run.cpuMs.toFixed(0)} CPU-ms`,
          );
          await sleep(200);
        }
      }
      sizes.push({
        size: n,
        methods: methods
          .filter((m) => runs.get(m)!.length > 0)
          .map((m) => {
            const list = runs.get(m)!;
            const returned = list.filter((x) => x.returnMs !== undefined).map((x) => x.returnMs!);
            return {
              method: m,
              title: titles[m],
              dead: summarize(list.map((x) => x.deadMs)),
              returned: returned.length ? summarize(returned) : undefined,
              cpuMs: summarize(list.map((x) => x.cpuMs)),
              capped: list.some((x) => x.capped),
              runs: list.map((x) => ({
                ...x,
                deadMs: Number(x.deadMs.toFixed(2)),
                returnMs: x.returnMs === undefined ? undefined : Number(x.returnMs.toFixed(2)),
                cpuMs: Number(x.cpuMs.toFixed(1)),
              })),
            };
          }),
      });
    }
  } finally {
    await watcher.close();
  }
  return { capMs: opts.capMs, tier: opts.tier, sizes };
}
