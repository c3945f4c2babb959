/**
 * Budgets (issue 23, phase `budget`): what the budget watch costs, and how far past a limit a tree gets before it
 * is seen and ended, on each path this machine gives.
 *  - Cost: a 20-process tree owned by a TreeOwner in this process, idle windows side by side (rotated round by
 *    round): the tree without limits (the watch has nothing to watch: no timer, no read), with all three limits
 *    far away (a look a second), near its process limit and near its memory limit (where the kernel does not hold
 *    the line the watch looks ten times a second; near memory it reads PSS). CPU of this process over the whole
 *    window, idle included, as in the view's bench, and of it the CPU inside the watch's looks; what the watch
 *    adds is taken round by round; and the CPU of one look, a second apart.
 *  - Memory: a tree allocating about 100 MB/s under a 300 MB limit: MB past the limit when the watch saw it, on
 *    the watch in each tier. The kernel's path (cgroup v2 memory.max) only where the machine gives it.
 *  - Processes: fork loops under maxProcesses 50, the most processes alive at once (counted by a sampler process,
 *    test/fixtures/countSampler.py): where the kernel holds pids.max; the watch alone, on a loop of ~20 forks a
 *    second, on a fast loop bounded at 600 sleeps, and on `:(){ :|:& };:` bounded by `ulimit -u 200` as another
 *    user (root only).
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { KillReport, OwnedTree, processCore, TreeOwner } from '../src/proc';
import { BudgetWatch } from '../src/proc/budget/budgetWatch';
import { KeptCgroupActivity } from '../src/proc/cgroup/cgroupActivity';
import { Breach } from '../src/proc/budget/limits';
import { TreeLimits } from '../src/proc/records/schema';
import { readCpuNs, readPssBytes } from '../src/proc/platform/procFiles';
import {
  log,
  msSince,
  nowNs,
  processCount,
  REPO,
  register,
  registerCgroup,
  registerGroup,
  rotated,
  selfCpuMs,
  sleep,
  summarize,
  Summary,
  tmpDir,
  treeCommand,
  waitReady,
} from './lib';

export type BudgetCostCase = 'no limits' | 'far from its limits' | 'near its process limit' | 'its RSS near its memory limit';
export const BUDGET_COST_CASES: BudgetCostCase[] = [
  'no limits',
  'far from its limits',
  'near its process limit',
  'its RSS near its memory limit',
];

export interface BudgetCost {
  tier: 'cgroup' | 'group';
  case: BudgetCostCase;
  limits: TreeLimits | null;
  /** % of one core over each window, idle included. */
  pct: Summary;
  /** % of one core spent inside the watch's looks over each window. */
  inLooksPct: Summary;
  /** Looks of the watch per second. */
  looksPerS: number;
  /** Whether the kernel held the process line (cgroup tier here). */
  kernelProcesses: boolean;
}

export interface Overshoot {
  path: string;
  limitMB: number;
  /** MB past the limit when seen. */
  pastMB: Summary;
  /** ms from the spawn until seen. */
  seenMs: Summary;
}

export interface ForkLoop {
  path: string;
  loop: string;
  limit: number;
  /** The most processes alive at once, per run. */
  peak: Summary;
  /** The count the watch saw it past the limit at. */
  seenAt: Summary;
  survivors: number;
}

/** What the watch adds: each round's window far from the limits less the same round's window without limits. */
export interface BudgetAdded {
  tier: 'cgroup' | 'group';
  /** Percentage points of one core, one per round. */
  pct: Summary;
}

export interface BudgetResults {
  windowS: number;
  rounds: number;
  treeSize: number;
  cost: BudgetCost[];
  added: BudgetAdded[];
  /** CPU ms of one look of a 20-process tree far from its limits. */
  lookCpuMs: Summary;
  memory: Overshoot[];
  /** Why the kernel's memory path was not measured, when it was not. */
  kernelMemory: string;
  forkLoops: ForkLoop[];
}

const TREE_SIZE = 20;
const LIFETIME_S = 300;
const ALLOCATOR = 'import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(b"x") * (10 * 1024 * 1024))\n    time.sleep(0.1)\n';
const SAMPLER = path.join(REPO, 'test', 'fixtures', 'countSampler.py');

async function limitedTree(owner: TreeOwner, limits: TreeLimits | undefined): Promise<OwnedTree> {
  const tree = owner.spawn({ ...treeCommand(TREE_SIZE, LIFETIME_S), stdio: ['ignore', 'pipe', 'ignore'], limits });
  registerGroup(tree.child.pid);
  registerCgroup(tree.record.cgroup);
  registerCgroup(tree.record.pidsCgroup);
  await waitReady(tree.child as ChildProcess);
  return tree;
}

/** RSS of the tree's members now (what the watch compares with 80 % of a memory limit). */
function rssOf(owner: TreeOwner, tree: OwnedTree): number {
  return owner.members(tree.record.id).reduce((n, p) => n + p.rssBytes, 0);
}

/** Limits that put a 20-process tree where each case wants it. */
function limitsFor(c: BudgetCostCase, rss: number): TreeLimits | undefined {
  const mb = Math.ceil(rss / (1024 * 1024));
  switch (c) {
    case 'no limits':
      return undefined;
    case 'far from its limits':
      return { maxMemoryMB: mb * 10, maxProcesses: TREE_SIZE * 10, idleTimeoutSeconds: 3600 };
    case 'near its process limit':
      return { maxProcesses: Math.ceil(TREE_SIZE / 0.6) };
    case 'its RSS near its memory limit':
      return { maxMemoryMB: Math.ceil(mb / 0.85) };
  }
}

/** After this long a tree's processes are read as settled (COMMAND_SETTLES_MS in linuxProcessTable.ts, and a margin). */
const SETTLED_MS = 3000;

async function costWindow(owner: TreeOwner, c: BudgetCostCase, seconds: number) {
  const probe = await limitedTree(owner, undefined);
  const rss = rssOf(owner, probe);
  await owner.kill(probe.record.id, 0);
  const limits = limitsFor(c, rss);
  const tree = await limitedTree(owner, limits);
  let looks = 0;
  const onLook = () => looks++;
  owner.on('budget', onLook);
  // The first looks (and the first full scan's census) before the window, and past the first 2 s of the tree's
  // processes, while which each look reads their command lines and environments again (they may still exec).
  await sleep(SETTLED_MS);
  (globalThis as { gc?: () => void }).gc?.();
  await sleep(200);
  looks = 0;
  inLooks.ms = 0;
  const cpu0 = selfCpuMs();
  const t0 = nowNs();
  await sleep(seconds * 1000);
  const cpuMs = selfCpuMs() - cpu0;
  const wall = msSince(t0) / 1000;
  const inLooksMs = inLooks.ms;
  owner.off('budget', onLook);
  const kernelProcesses = owner.budgetUse(tree.record.id)?.kernel?.processes ?? false;
  const breach = tree.breach;
  await owner.kill(tree.record.id, 0);
  if (breach) throw new Error(`the ${c} tree went past a limit: ${JSON.stringify(breach)}`);
  return {
    pct: cpuMs / (wall * 10),
    inLooksPct: inLooksMs / (wall * 10),
    looksPerS: looks / wall,
    limits: limits ?? null,
    kernelProcesses,
  };
}

/** CPU ms spent inside BudgetWatch.look since it was last zeroed (counted while `countLooks` runs). */
const inLooks = { ms: 0 };

/** Runs `fn` with every BudgetWatch's look timed (this process's CPU around each). */
async function countLooks<T>(fn: () => Promise<T>): Promise<T> {
  const look = BudgetWatch.prototype.look;
  BudgetWatch.prototype.look = function (this: BudgetWatch) {
    const c0 = selfCpuMs();
    try {
      look.call(this);
    } finally {
      inLooks.ms += selfCpuMs() - c0;
    }
  };
  try {
    return await fn();
  } finally {
    BudgetWatch.prototype.look = look;
  }
}

/**
 * Every case once a round, rotated. What the watch adds is taken round by round (far from its limits less no
 * limits, windows of the same round): the process's own idle cost drifts over a run by more than the watch costs.
 */
async function measureCost(
  owners: Record<'cgroup' | 'group', TreeOwner>,
  windowS: number,
  rounds: number,
): Promise<{ cost: BudgetCost[]; added: BudgetAdded[] }> {
  const cost: BudgetCost[] = [];
  const added: BudgetAdded[] = [];
  for (const tier of ['group', 'cgroup'] as const) {
    // Not counted: the first window of a run paid for the code's first runs (0.30 % of a core without limits, where
    // later rounds gave 0.03-0.07 %), which no case should carry.
    await costWindow(owners[tier], 'far from its limits', Math.max(1, windowS / 4));
    const windows = new Map<BudgetCostCase, Awaited<ReturnType<typeof costWindow>>[]>();
    for (let round = 0; round < rounds; round++) {
      for (const c of rotated(BUDGET_COST_CASES, round)) {
        const w = await countLooks(() => costWindow(owners[tier], c, windowS));
        windows.set(c, [...(windows.get(c) ?? []), w]);
        log(
          `budget: ${tier} tier, ${c}: ${w.pct.toFixed(4)} % of a core (${w.inLooksPct.toFixed(4)} % in its looks), ${w.looksPerS.toFixed(1)} looks/s`,
        );
      }
    }
    for (const c of BUDGET_COST_CASES) {
      const ws = windows.get(c)!;
      cost.push({
        tier,
        case: c,
        limits: ws[0].limits,
        pct: summarize(ws.map((w) => w.pct)),
        inLooksPct: summarize(ws.map((w) => w.inLooksPct)),
        looksPerS: summarize(ws.map((w) => w.looksPerS)).median,
        kernelProcesses: ws[0].kernelProcesses,
      });
    }
    const none = windows.get('no limits')!;
    added.push({ tier, pct: summarize(windows.get('far from its limits')!.map((w, round) => w.pct - none[round].pct)) });
  }
  return { cost, added };
}

/** CPU of one look of the watch itself, over a 20-process tree far from its limits, a second apart as at 1 Hz. */
async function lookCpu(owner: TreeOwner, n: number): Promise<Summary> {
  const tree = await limitedTree(owner, undefined);
  await sleep(SETTLED_MS);
  const core = processCore();
  const watch = new BudgetWatch({
    table: core.table,
    deps: core,
    readPss: readPssBytes,
    readCpuNs,
    cgroupActivity: new KeptCgroupActivity(),
    onBreach: () => {},
  });
  watch.watch(owner.queryOf(tree.record.id)!, { maxMemoryMB: 4096, maxProcesses: 200, idleTimeoutSeconds: 3600 });
  watch.look();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const c0 = selfCpuMs();
    watch.look();
    samples.push(selfCpuMs() - c0);
    await sleep(1000);
  }
  watch.dispose();
  await owner.kill(tree.record.id, 0);
  return summarize(samples);
}

/** Spawns a tree and ends it, as the front ends do, when its owner sees it past a limit. */
async function endedPastLimit(
  owner: TreeOwner,
  tree: OwnedTree,
  timeoutMs = 60_000,
): Promise<{ breach: Breach; report: KillReport; ms: number }> {
  const t0 = nowNs();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tree ${tree.record.id} never went past its limit`)), timeoutMs);
    const onLimit = (t: OwnedTree, breach: Breach) => {
      if (t !== tree) return;
      const ms = msSince(t0);
      owner.off('limit', onLimit);
      clearTimeout(timer);
      owner.kill(t.record.id, 500).then((report) => resolve({ breach, report, ms }), reject);
    };
    owner.on('limit', onLimit);
  });
}

/** `tier`: which owner; the path is the kernel's where its OOM killer ended the tree, else the watch's. */
async function memoryOvershoot(owner: TreeOwner, runs: number, tier: string): Promise<Overshoot> {
  const past: number[] = [];
  const seen: number[] = [];
  let pathName = `the watch (${tier})`;
  for (let i = 0; i < runs; i++) {
    const tree = owner.spawn({ command: 'python3', args: ['-c', ALLOCATOR], stdio: 'ignore', limits: { maxMemoryMB: 300 } });
    registerGroup(tree.child.pid);
    registerCgroup(tree.record.cgroup);
    const { breach, ms } = await endedPastLimit(owner, tree);
    if (breach.kind !== 'memory') throw new Error(`the allocator went past another limit: ${JSON.stringify(breach)}`);
    if (breach.kernelEnded !== undefined) pathName = `the kernel, memory.max (${tier})`;
    past.push(breach.bytes / (1024 * 1024) - 300);
    seen.push(ms);
    log(`budget: ${pathName}: seen at ${(breach.bytes / (1024 * 1024)).toFixed(0)} MB after ${ms.toFixed(0)} ms`);
  }
  return { path: pathName, limitMB: 300, pastMB: summarize(past), seenMs: summarize(seen) };
}

/**
 * The count sampler on a cgroup or a session; resolves once it has counted once (so it counts from before the
 * loop starts). `stop()` resolves with the largest count it saw.
 */
async function sampler(mode: 'cgroup' | 'session', arg: string): Promise<{ stop(): Promise<number> }> {
  const stopFile = path.join(tmpDir(), 'stop');
  const child = spawn('python3', [SAMPLER, mode, arg, stopFile], { stdio: ['ignore', 'pipe', 'ignore'] });
  register(child.pid);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const t0 = nowNs();
  while (!out.startsWith('ready\n')) {
    if (msSince(t0) > 30_000) throw new Error('the count sampler did not start');
    await sleep(10);
  }
  return {
    async stop() {
      fs.writeFileSync(stopFile, '');
      await exited;
      return Number(out.slice('ready\n'.length).trim().split(' ')[0]);
    },
  };
}

interface LoopSpec {
  path: string;
  loop: string;
  owner: TreeOwner;
  command: string;
  args: string[];
}

async function forkLoop(spec: LoopSpec, runs: number): Promise<ForkLoop> {
  const peaks: number[] = [];
  const seenAt: number[] = [];
  let survivors = 0;
  for (let i = 0; i < runs; i++) {
    // The root waits for a line on stdin, sent once the sampler counts.
    const tree = spec.owner.spawn({
      command: 'sh',
      args: ['-c', 'read go; exec "$@"', 'sh', spec.command, ...spec.args],
      stdio: ['pipe', 'ignore', 'ignore'],
      limits: { maxProcesses: 50 },
    });
    registerGroup(tree.child.pid);
    registerCgroup(tree.record.cgroup);
    registerCgroup(tree.record.pidsCgroup);
    const count = await (tree.record.cgroup ? sampler('cgroup', tree.record.cgroup) : sampler('session', String(tree.record.sid)));
    const ending = endedPastLimit(spec.owner, tree);
    (tree.child as ChildProcess).stdin!.end('go\n');
    const { breach, report } = await ending;
    const peak = await count.stop();
    peaks.push(peak);
    seenAt.push(breach.kind === 'processes' ? breach.count : NaN);
    survivors += report.survivors;
    log(`budget: ${spec.path}, ${spec.loop}: seen at ${breach.kind === 'processes' ? breach.count : '?'}, at most ${peak} alive`);
  }
  return { path: spec.path, loop: spec.loop, limit: 50, peak: summarize(peaks), seenAt: summarize(seenAt), survivors };
}

/** Whether the kernel holds a process line for this owner's trees (a tree is spawned to see). */
async function kernelHoldsProcesses(owner: TreeOwner): Promise<boolean> {
  const tree = await limitedTree(owner, { maxProcesses: 50 });
  const { cgroup, pidsCgroup } = tree.record;
  await owner.kill(tree.record.id, 0);
  return pidsCgroup !== undefined || (cgroup !== null && fs.existsSync(path.join(cgroup, 'pids.max')));
}

async function measureForkLoops(owners: Record<'cgroup' | 'group', TreeOwner>, runs: number): Promise<ForkLoop[]> {
  const specs: LoopSpec[] = [];
  if (await kernelHoldsProcesses(owners.cgroup)) {
    specs.push({
      path: 'kernel pids.max',
      loop: '`while :; do sleep 1000 & done`',
      owner: owners.cgroup,
      command: 'bash',
      args: ['-c', 'while :; do sleep 1000 & done'],
    });
  }
  const watch = 'the watch alone (cgroups off)';
  specs.push(
    {
      path: watch,
      loop: 'about 20 forks a second',
      owner: owners.group,
      command: 'bash',
      args: ['-c', 'while :; do sleep 1000 & sleep 0.05; done'],
    },
    {
      path: watch,
      loop: 'as fast as bash forks, bounded at 600',
      owner: owners.group,
      command: 'bash',
      args: ['-c', 'for i in $(seq 600); do sleep 1000 & done; wait'],
    },
  );
  if (process.getuid?.() === 0) {
    // RLIMIT_NPROC counts every process of the user: uid 23023 runs nothing else, so the bomb stops at 200.
    const bomb = 'ulimit -u 200; :(){ :|:& };:; sleep 1000';
    specs.push({
      path: watch,
      loop: '`:(){ :|:& };:` bounded by `ulimit -u 200` (another user)',
      owner: owners.group,
      command: 'setpriv',
      args: ['--reuid=23023', '--regid=23023', '--clear-groups', 'bash', '-c', bomb],
    });
  }
  const out: ForkLoop[] = [];
  for (const spec of specs) out.push(await forkLoop(spec, runs));
  return out;
}

export async function runBudget(opts: {
  owners: Record<'cgroup' | 'group', TreeOwner>;
  windowS: number;
  rounds: number;
  runs: number;
}): Promise<BudgetResults> {
  const { owners, windowS, rounds, runs } = opts;
  log(`budget: ${processCount()} processes on the machine`);
  const { cost, added } = await measureCost(owners, windowS, rounds);
  const lookCpuMs = await lookCpu(owners.group, windowS);
  const memory = [await memoryOvershoot(owners.group, runs, 'cgroups off'), await memoryOvershoot(owners.cgroup, runs, 'cgroup tier')];
  const tier = processCore().cgroupTier('auto').tier;
  const kernelMemory =
    tier?.kind === 'directory' && !fs.readFileSync(path.join(tier.base, 'cgroup.controllers'), 'utf8').includes('memory')
      ? `not measured: the cgroup v2 hierarchy here (${tier.base}) offers no memory controller (hybrid layout)`
      : 'measured where its OOM killer ended the tree (the cgroup tier row says so)';
  const forkLoops = await measureForkLoops(owners, runs);
  return { windowS, rounds, treeSize: TREE_SIZE, cost, added, lookCpuMs, memory, kernelMemory, forkLoops };
}
