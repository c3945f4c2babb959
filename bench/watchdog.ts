/**
 * Watchdog benchmark, side by side with no watchdog:
 *   1. idle cost per owner (window): the owner with 3 sleeping trees, without a watchdog and with each way of
 *      noticing its death: ours (/bin/sh blocked in read on a pipe whose write end the owner holds), a resident
 *      Node process on the same pipe, a resident Node process polling /proc every 500 ms, one sh per tree
 *      (shepherds). CPU of owner + watchers over an idle window, from /proc/<pid>/schedstat (ns on a CPU), and
 *      RSS / PSS of the watchers (/proc/<pid>/smaps_rollup: PSS shares the pages of sh or node among their users);
 *   2. death to clean: `agent-trees run` SIGKILLed with a tree running (one that dies on SIGTERM, one that
 *      ignores it), ms until every member is dead and until its record is removed, observed from here every 5 ms.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { fixturePids } from '../test/support/fixtures';
import { hostMissing, isAlive, log, readStat, register, REPO, runInHost, sleep, summarize, Summary, tmpDir, nowNs, msSince } from './lib';

export type WatchdogMode = 'none' | 'sh-pipe' | 'node-pipe' | 'node-poll' | 'shepherds';

export const WATCHDOG_TITLES: Record<WatchdogMode, string> = {
  none: 'no watchdog',
  'sh-pipe': 'ours: /bin/sh in read on a pipe (1 per owner)',
  'node-pipe': 'resident Node process on the same pipe',
  'node-poll': 'resident Node process polling /proc every 500 ms',
  shepherds: 'one sh-on-a-pipe shepherd per tree (3 trees)',
};

export interface IdleRow {
  mode: WatchdogMode;
  /** % of one core used by owner + watchers over the idle window, median over rounds. */
  cpuPct: Summary;
  /** Of that, the watchers alone. */
  watcherCpuPct: Summary;
  watchers: number;
  /** Sum over the watchers, kB. */
  rssKb: number;
  pssKb: number;
}

export interface DeathRow {
  tree: 'dies on SIGTERM' | 'ignores SIGTERM';
  /** ms from the SIGKILL until every member was dead. */
  deadMs: Summary & { samples: number[] };
  /** ms from the SIGKILL until the record was removed. */
  recordMs: Summary & { samples: number[] };
  /** Runs where anything was left after 10 s. */
  failures: number;
}

export interface WatchdogResults {
  windowS: number;
  rounds: number;
  idle: IdleRow[];
  death: DeathRow[];
  /** From the integration suite's reload loop (phase 5), when the bench ran it. */
  reload?: { runs: { how: string; processesMs: number; recordMs: number; hostGoneMs: number | null }[]; error?: string };
}

/** The real host the reload loop runs in (scripts/host/hosts.json): VS Code 1.100.3, the oldest supported. */
export const RELOAD_HOST = 'oldest';

const OWNER = path.join(REPO, 'out', 'bench', 'watchdogOwner.js');
const CLI = path.join(REPO, 'dist', 'cli.js');
const FIXTURE = path.join(REPO, 'test', 'fixtures', 'tree.sh');

/** ns this process has spent on a CPU (all threads), from /proc/<pid>/schedstat; 0 when gone. */
function cpuNs(pid: number): number {
  let total = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
      } catch {
        /* thread gone */
      }
    }
  } catch {
    return 0;
  }
  return total;
}

function memoryKb(pid: number): { rss: number; pss: number } {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { rss: field('Rss'), pss: field('Pss') };
  } catch {
    return { rss: 0, pss: 0 };
  }
}

async function startOwner(mode: WatchdogMode, trees: number) {
  const records = tmpDir();
  const child = spawn(process.execPath, [OWNER, mode, records, String(trees), CLI], { stdio: ['pipe', 'pipe', 'inherit'] });
  register(child.pid);
  const info = await new Promise<{ owner: number; watchers: number[]; trees: number[] }>((resolve, reject) => {
    child.stdout!.once('data', (d) => resolve(JSON.parse(String(d))));
    child.once('exit', (code) => reject(new Error(`owner (${mode}) exited with ${code}`)));
  });
  for (const pid of [...info.watchers, ...info.trees]) register(pid);
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin!.end();
    await exited;
    for (let i = 0; i < 200 && info.watchers.some((w) => isAlive(w)); i++) await sleep(10);
  };
  return { ...info, stop };
}

export async function runWatchdogIdle(windowS: number, rounds: number): Promise<IdleRow[]> {
  const modes: WatchdogMode[] = ['none', 'sh-pipe', 'node-pipe', 'node-poll', 'shepherds'];
  const samples = new Map<WatchdogMode, { all: number[]; watchers: number[]; rss: number; pss: number; n: number }>();
  for (let round = 0; round < rounds; round++) {
    // Every contender idles in the same window, so machine load hits them alike.
    const owners = await Promise.all(modes.map(async (mode) => ({ mode, o: await startOwner(mode, 3) })));
    await sleep(1000); // start-up work (Node's own) is not idle cost
    const before = owners.map(({ o }) => ({ owner: cpuNs(o.owner), watchers: o.watchers.map(cpuNs) }));
    const t0 = nowNs();
    await sleep(windowS * 1000);
    const seconds = msSince(t0) / 1000;
    owners.forEach(({ mode, o }, i) => {
      const w = o.watchers.reduce((sum, pid, j) => sum + (cpuNs(pid) - before[i].watchers[j]), 0);
      const all = cpuNs(o.owner) - before[i].owner + w;
      const mem = o.watchers.map(memoryKb);
      const s = samples.get(mode) ?? { all: [], watchers: [], rss: 0, pss: 0, n: o.watchers.length };
      s.all.push((all / 1e9 / seconds) * 100);
      s.watchers.push((w / 1e9 / seconds) * 100);
      s.rss = mem.reduce((a, m) => a + m.rss, 0);
      s.pss = mem.reduce((a, m) => a + m.pss, 0);
      samples.set(mode, s);
    });
    await Promise.all(owners.map(({ o }) => o.stop()));
    log(`watchdog: idle round ${round + 1}/${rounds}: ` + modes.map((m) => `${m} ${samples.get(m)!.all.at(-1)!.toFixed(3)} %`).join(', '));
  }
  return modes.map((mode) => {
    const s = samples.get(mode)!;
    return { mode, cpuPct: summarize(s.all), watcherCpuPct: summarize(s.watchers), watchers: s.n, rssKb: s.rss, pssKb: s.pss };
  });
}

export async function runWatchdogDeath(runs: number): Promise<DeathRow[]> {
  const rows: DeathRow[] = [];
  for (const [tree, mode] of [
    ['dies on SIGTERM', 'setsid'],
    ['ignores SIGTERM', 'ignore-term'],
  ] as const) {
    const dead: number[] = [];
    const record: number[] = [];
    let failures = 0;
    for (let i = 0; i < runs; i++) {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const run = spawn(process.execPath, [CLI, 'run', '--records', records, '--', FIXTURE, mode, pidfile], { stdio: 'ignore' });
      register(run.pid);
      const members = (await fixturePids(pidfile, { register })).all;
      for (const pid of members) register(pid);
      const keys = members.map((pid) => readStat(pid)?.startKey ?? -1);
      const recordFile = path.join(records, `${run.pid}.json`);
      while (!fs.existsSync(recordFile)) await sleep(5);
      await sleep(200); // the watchdog is started with the tree; let everything settle
      const t0 = nowNs();
      run.kill('SIGKILL');
      let deadAt: number | undefined;
      let goneAt: number | undefined;
      while ((deadAt === undefined || goneAt === undefined) && msSince(t0) < 10_000) {
        if (deadAt === undefined && members.every((pid, j) => !isAlive(pid, keys[j]))) deadAt = msSince(t0);
        if (goneAt === undefined && fs.readdirSync(records).length === 0) goneAt = msSince(t0); // neither record nor claim
        await sleep(5);
      }
      if (deadAt === undefined || goneAt === undefined) failures++;
      else {
        dead.push(deadAt);
        record.push(goneAt);
      }
    }
    rows.push({ tree, deadMs: { ...summarize(dead), samples: dead }, recordMs: { ...summarize(record), samples: record }, failures });
    log(
      `watchdog: SIGKILLed run, tree that ${tree}: dead after ${summarize(dead).median.toFixed(0)} ms (max ${summarize(dead).max.toFixed(0)}), record after ${summarize(record).median.toFixed(0)} ms (max ${summarize(record).max.toFixed(0)}), ${failures} failures`,
    );
  }
  return rows;
}

/**
 * The reload figures come from the integration suite's reload loop (test/integration/reloadLoop.phased.test.ts,
 * phase 5 of `runTests.js --phases 5`), which writes them to $AGENT_TREES_RELOAD_TIMINGS. Runs the whole phased
 * suite (~10 min here); skipped, with the reason, where the host is not installed.
 */
export function runReloadLoop(reloads: number, crashes: number): NonNullable<WatchdogResults['reload']> {
  const missing = hostMissing();
  if (missing) return { runs: [], error: missing };
  const out = path.join(tmpDir(), 'reload-timings.json');
  const r = runInHost({
    host: RELOAD_HOST,
    args: ['--phases', '5'],
    env: { AGENT_TREES_RELOAD_TIMINGS: out, AGENT_TREES_RELOADS: reloads, AGENT_TREES_RENDERER_CRASHES: crashes },
    timeoutS: 1680,
  });

  if (!fs.existsSync(out)) return { runs: [], error: `the integration run failed (exit ${r.status}): ${r.tail(6)}` };
  const runs = JSON.parse(fs.readFileSync(out, 'utf8'));
  log(`watchdog: reload loop: ${runs.length} runs${r.status !== 0 ? ` (the integration run itself failed, exit ${r.status})` : ''}`);
  return { runs, error: r.status !== 0 ? `the integration run exited ${r.status}` : undefined };
}
