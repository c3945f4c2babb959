/**
 * Sweep benchmark: sweepOrphans over a records folder of 100 dead owners (written by RecordStore), with the
 * machine at ~1000+ processes. "Gone": every tree's members are already gone. "Mixed": 95 such records plus 5
 * real owners (test/fixtures/owner.js) SIGKILLed with a live 3-process tree each, which the sweep must kill.
 */
import * as fs from 'fs';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { execFileSync, spawn } from 'child_process';
import { localSweepParts, processCore, RecordStore, selfIdentity, sweepOrphans, TreeRecord } from '../src/proc';
import { cgroupVerified } from '../src/proc/cgroup/treeCgroup';
import { resolveTreeMembers } from '../src/proc/members/treeMembers';
import { TREE_ID_VARIABLE } from '../src/proc/platform/processTable';
import { isAlive, log, processCount, readStat, realKill, register, REPO, sleep, summarize, Summary, tmpDir, nowNs, msSince } from './lib';

export interface SweepResults {
  processes: number;
  records: number;
  gone: Summary & { samples: number[] };
  mixed?: Summary & { samples: number[]; liveTrees: number; killed: number[] };
  /** Where the time of one "gone" sweep goes, from counting calls on the shared process table. */
  profile: { snapshots: number; snapshotMs: number; sweepMs: number; oneSnapshotMs: number };
  /** The same 100 resolutions with one snapshot shared by all trees (a prototype of the suggested fix). */
  sharedSnapshotMs: Summary;
}

/** Pids of processes that have exited (and been reaped): forked by one shell, printed, waited for. */
function deadPids(n: number): number[] {
  const out = execFileSync('sh', ['-c', `i=0; while [ $i -lt ${n} ]; do (:) & echo $!; i=$((i+1)); done; wait`], { encoding: 'utf8' });
  const pids = [...new Set(out.split('\n').filter(Boolean).map(Number))];
  return pids.filter((pid) => !readStat(pid) && pid !== process.pid);
}

function goneRecords(store: RecordStore, owners: number[], roots: number[]): TreeRecord[] {
  const now = Date.now();
  const tier = processCore().cgroupTier('auto').tier;
  const all: TreeRecord[] = [];
  owners.forEach((ownerPid, i) => {
    const id = randomBytes(6).toString('hex');
    const root = roots[i];
    const tree: TreeRecord = {
      id,
      label: 'bench',
      command: ['sleep', '600'],
      rootPid: root,
      pgid: root,
      sid: root,
      rootStartTime: now - 3_599_000,
      trackedAt: now - 3_598_900,
      envTag: `${TREE_ID_VARIABLE}=${id}`,
      // Half recorded with a cgroup (long gone), as a cgroup-tier owner would have written them.
      cgroup: tier && i % 2 === 0 ? path.join(tier.base, `tree-${id}`) : null,
    };
    all.push(tree);
    store.write({ pid: ownerPid, startTime: now - 3_600_000 }, [tree]);
  });
  return all;
}

/** Starts `n` real owners (test/fixtures/owner.js) with a live 3-level tree each, then SIGKILLs the owners. */
async function orphanedOwners(dir: string, n: number): Promise<{ pids: number[]; keys: Map<number, number>; owners: number[] }> {
  const keys = new Map<number, number>();
  const all: number[] = [];
  const ownerPids: number[] = [];
  await Promise.all(
    Array.from({ length: n }, async () => {
      const pidfile = path.join(tmpDir(), 'pids');
      const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), dir, 'deep', pidfile, 'auto'], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, LIFETIME: '60' },
      });
      register(owner.pid);
      ownerPids.push(owner.pid!);
      await new Promise<void>((resolve, reject) => {
        owner.stdout!.once('data', () => resolve());
        owner.once('exit', (code) => reject(new Error(`owner.js exited (${code})`)));
      });
      const deadline = Date.now() + 15_000;
      while (!/^ready /m.test(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '')) {
        if (Date.now() > deadline) throw new Error('owner.js tree not ready');
        await sleep(20);
      }
      for (const line of fs.readFileSync(pidfile, 'utf8').split('\n')) {
        const [role, p] = line.split(' ');
        const pid = Number(p);
        if (!role || role === 'ready' || !(pid > 0)) continue;
        register(pid);
        const s = readStat(pid);
        if (s) keys.set(pid, s.startKey);
        all.push(pid);
      }
      const exited = new Promise((resolve) => owner.once('exit', resolve));
      realKill(owner.pid!, 'SIGKILL');
      await exited;
    }),
  );
  return { pids: all, keys, owners: ownerPids };
}

export async function runSweep(opts: { reps: number; mixedReps: number; records: number; budgetMs: number }): Promise<SweepResults> {
  const table = processCore().table;
  const self = selfIdentity(table);
  const n = opts.records;
  let pool = deadPids(2 * n + 20);
  if (pool.length < 2 * n) pool = [...pool, ...deadPids(2 * n)].filter((p, i, a) => a.indexOf(p) === i);
  const owners = pool.slice(0, n);
  const roots = pool.slice(n, 2 * n);
  const processes = processCount();
  log(`sweep: ${n} records of dead owners, ${processes} processes on the machine`);

  const goneSamples: number[] = [];
  const sweepOnce = async (dir: string, expectTrees: number) => {
    const t0 = nowNs();
    const result = await sweepOrphans(new RecordStore(dir), { ...localSweepParts(processCore()), self, graceMs: 1500, cgroups: 'auto' });
    const ms = msSince(t0);
    if (result.trees.length !== expectTrees) throw new Error(`sweep: ${result.trees.length} trees swept, expected ${expectTrees}`);
    const left = fs.readdirSync(dir);
    if (left.length) throw new Error(`sweep: records left behind: ${left.join(' ')}`);
    return { ms, result };
  };

  // Count the full snapshots a sweep takes, and their time, by wrapping the shared table's snapshot().
  const t = table as unknown as { snapshot: () => ReturnType<typeof table.snapshot> };
  const original = t.snapshot;
  let snapshots = 0;
  let snapshotMs = 0;
  t.snapshot = function (this: unknown) {
    const t0 = nowNs();
    const snap = original.call(table);
    snap.tagged(); // every resolution asks for it at once; timed here with the snapshot
    snapshotMs += msSince(t0);
    snapshots++;
    return snap;
  };
  // As in a running host, the table has read everyone's environment once before (the tag cache is warm).
  table.snapshot().tagged();
  const profiles: { snapshots: number; snapshotMs: number; sweepMs: number }[] = [];
  let trees: TreeRecord[] = [];
  try {
    // Up to `reps` sweeps, fewer when they are slow (a sweep at 1000+ processes can take many seconds).
    const budget = Date.now() + opts.budgetMs;
    for (let r = 0; r < opts.reps && (r === 0 || Date.now() + goneSamples[r - 1] < budget); r++) {
      const dir = tmpDir();
      trees = goneRecords(new RecordStore(dir), owners, roots);
      snapshots = 0;
      snapshotMs = 0;
      const { ms } = await sweepOnce(dir, n);
      goneSamples.push(ms);
      profiles.push({ snapshots, snapshotMs, sweepMs: ms });
    }
  } finally {
    t.snapshot = original;
  }
  const t1 = nowNs();
  table.snapshot().tagged();
  const oneSnapshotMs = msSince(t1);
  const mid = [...profiles].sort((a, b) => a.sweepMs - b.sweepMs)[profiles.length >> 1];

  // The suggested fix, prototyped: one snapshot for every tree of the sweep.
  const shared: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = nowNs();
    const snap = table.snapshot();
    for (const tree of trees)
      resolveTreeMembers(tree, snap, { continuouslyOwned: false, cgroupVerified: cgroupVerified(tree, processCore()) }, processCore());
    shared.push(msSince(t0));
  }

  let mixed: SweepResults['mixed'];
  if (opts.mixedReps > 0) {
    const samples: number[] = [];
    const killed: number[] = [];
    const live = 5;
    for (let r = 0; r < opts.mixedReps; r++) {
      const mdir = tmpDir();
      const orphans = await orphanedOwners(mdir, live);
      // Dead owners' pids may have been reused by the real owners just started: never write over their records.
      const free = pool.filter((pid) => !orphans.owners.includes(pid) && !roots.includes(pid)).slice(0, n - live);
      goneRecords(new RecordStore(mdir), free, roots.slice(0, n - live));
      const { ms, result } = await sweepOnce(mdir, n);
      samples.push(ms);
      killed.push(result.killed);
      const deadline = Date.now() + 3000;
      while (orphans.pids.some((pid) => isAlive(pid, orphans.keys.get(pid))) && Date.now() < deadline) await sleep(20);
      const left = orphans.pids.filter((pid) => isAlive(pid, orphans.keys.get(pid)));
      if (left.length) throw new Error(`sweep left live members: ${left.join(' ')}`);
    }
    mixed = { ...summarize(samples), samples: samples.map((x) => Number(x.toFixed(2))), liveTrees: live, killed };
  }
  return {
    processes,
    records: n,
    gone: { ...summarize(goneSamples), samples: goneSamples.map((x) => Number(x.toFixed(2))) },
    mixed,
    profile: { ...mid, oneSnapshotMs },
    sharedSnapshotMs: summarize(shared),
  };
}
