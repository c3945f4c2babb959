/**
 * The watchdog on a crowded machine (issue 21, phase `crowd`): one owner with TREES trees that ignore SIGTERM,
 * SIGKILLed while IDLE idle processes (one tree of sleepers, bench/fixtures/tree.c) share the machine; ms from the
 * SIGKILL until every member of every tree is dead, and until the owner's record is removed. Its sweep resolves
 * all the trees from one scan of the process table per step, so this follows the steps, not trees x processes.
 * The idle processes are ended by their process group at the end (and by the run's cleanup on Ctrl-C).
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { LinuxProcessTable } from '../src/proc/platform/linuxProcessTable';
import {
  isAlive,
  log,
  msSince,
  nowNs,
  processCount,
  readStat,
  realKill,
  register,
  REPO,
  sleep,
  spawnDetachedTree,
  summarize,
  Summary,
  tmpDir,
} from './lib';

export interface CrowdRow {
  tier: 'cgroup' | 'group';
  /** ms from the owner's SIGKILL until every member of every tree was dead. */
  deadMs: Summary & { samples: number[] };
  /** ms from the SIGKILL until the records folder was empty (the record and any claim of it). */
  recordMs: Summary & { samples: number[] };
  /** Runs where something was left after the time limit. */
  failures: number;
}

export interface CrowdResults {
  trees: number;
  idle: number;
  /** Processes on the machine while the runs ran. */
  processes: number;
  /** What one scan of the machine (a fresh LinuxProcessTable's snapshot) took here then, median of 3: the unit the runs cost. */
  scanMs: number;
  rows: CrowdRow[];
}

const OWNER = path.join(REPO, 'out', 'bench', 'crowdOwner.js');
const CLI = path.join(REPO, 'dist', 'cli.js');
/** A run not clean after this long counts as a failure (and what is left is ended by the run's cleanup). */
const LIMIT_MS = 60_000;

/** ms one scan of the machine takes now (a fresh table's snapshot, as a watchdog's first), median of 3. */
function scanTime(): number {
  const times = [0, 1, 2].map(() => {
    const t0 = nowNs();
    new LinuxProcessTable().snapshot();
    return msSince(t0);
  });
  return summarize(times).median;
}

/** One owner with `trees` trees, SIGKILLed: how long until they are dead and the record gone. */
async function oneRun(trees: number, cgroups: 'auto' | 'off', cli: string): Promise<{ deadMs?: number; recordMs?: number }> {
  const records = tmpDir();
  const owner = spawn(process.execPath, [OWNER, records, String(trees), cli, cgroups], { stdio: ['ignore', 'pipe', 'inherit'] });
  register(owner.pid);
  const info = await new Promise<{ owner: number; watchdog: number; pids: number[] }>((resolve, reject) => {
    owner.stdout!.once('data', (d) => resolve(JSON.parse(String(d))));
    owner.once('exit', (code) => reject(new Error(`the owner exited with ${code}`)));
  });
  for (const pid of [info.watchdog, ...info.pids]) register(pid);
  const keys = info.pids.map((pid) => readStat(pid)?.startKey ?? -1);
  await sleep(200); // the watchdog runs; let everything settle
  const t0 = nowNs();
  owner.kill('SIGKILL');
  let deadMs: number | undefined;
  let recordMs: number | undefined;
  while ((deadMs === undefined || recordMs === undefined) && msSince(t0) < LIMIT_MS) {
    if (deadMs === undefined && info.pids.every((pid, i) => !isAlive(pid, keys[i]))) deadMs = msSince(t0);
    if (recordMs === undefined && fs.readdirSync(records).length === 0) recordMs = msSince(t0);
    await sleep(5);
  }
  return { deadMs, recordMs };
}

/** `cli`: the command line the watchdog runs (this checkout's dist/cli.js; another build's, to compare). */
export async function runWatchdogCrowd(o: {
  trees: number;
  idle: number;
  reps: number;
  tiers: ('cgroup' | 'group')[];
  cli?: string;
}): Promise<CrowdResults> {
  log(`crowd: starting ${o.idle} idle processes`);
  const crowd = await spawnDetachedTree(o.idle, 3600);
  const pgid = crowd.child.pid!;
  try {
    const processes = processCount();
    const scanMs = scanTime();
    log(`crowd: ${processes} processes on the machine; one scan of them ${scanMs.toFixed(0)} ms`);
    const rows: CrowdRow[] = [];
    for (const tier of o.tiers) {
      const dead: number[] = [];
      const record: number[] = [];
      let failures = 0;
      for (let i = 0; i < o.reps; i++) {
        const r = await oneRun(o.trees, tier === 'cgroup' ? 'auto' : 'off', o.cli ?? CLI);
        if (r.deadMs === undefined || r.recordMs === undefined) failures++;
        else {
          dead.push(r.deadMs);
          record.push(r.recordMs);
        }
        log(
          `crowd: ${tier} tier, run ${i + 1}/${o.reps}: dead after ${r.deadMs?.toFixed(0) ?? 'never'} ms, record after ${r.recordMs?.toFixed(0) ?? 'never'} ms`,
        );
      }
      rows.push({ tier, deadMs: { ...summarize(dead), samples: dead }, recordMs: { ...summarize(record), samples: record }, failures });
    }
    return { trees: o.trees, idle: o.idle, processes, scanMs, rows };
  } finally {
    // The idle processes, by their process group (the leader is our child, so the group is ours).
    realKill(-pgid, 'SIGKILL');
    const exited = new Promise((resolve) => crowd.child.once('exit', resolve));
    if (crowd.child.exitCode === null && crowd.child.signalCode === null) await exited;
    for (let i = 0; i < 600 && crowd.members.some((m) => isAlive(m.pid, m.startKey)); i++) await sleep(50);
  }
}
