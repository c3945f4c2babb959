/**
 * `npm run bench`: snapshot, sweep, kill, reach and extension benchmarks in one run, side by side with ps-list
 * and tree-kill. Writes bench/results/latest.json and latest.md and prints the tables and every ratio.
 *
 *   node out/bench/run.js [--only=snapshot,sweep,kill,reach,view,extension,watchdog,crowd,reload,terminal,attention,budget,otherExtensions] [--quick] [--out=DIR]
 *
 * --only and --quick (fewer repetitions) are for working on the benchmark itself: their results go to a temp
 * folder (or --out), never over latest.*.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { processCore, TreeOwner } from '../src/proc';
import { runBudget } from './budget';
import { ActivationFigure, ACTIVATION_ENV, ACTIVATION_FILE_ENV, runExtension } from './extension';
import { measureActivation } from './activation';
import { KillMethod, runKill } from './kill';
import {
  cleanUpAndVerify,
  installInterruptHandlers,
  killEverythingSync,
  log,
  processCount,
  REPO,
  removeTempDirs,
  RUN_ID,
  tmpDir,
  nowNs,
  msSince,
  MARKER,
  treeBuilderKind,
  summarize,
} from './lib';
import { runReach } from './reach';
import { AllResults, markdown, ratioLines, targets } from './report';
import { runSnapshot } from './snapshot';
import { runSweep } from './sweep';
import { runAttentionScan } from './attention';
import { runTerminal } from './terminal';
import { runReloadLoop, runWatchdogDeath, runWatchdogIdle } from './watchdog';
import { runWatchdogCrowd } from './watchdogCrowd';
import { runView } from './view';
import { measureViewInHost } from './viewHost';
import { measureOtherExtensions } from './otherExtensions';

const PHASES = [
  'snapshot',
  'sweep',
  'kill',
  'reach',
  'view',
  'extension',
  'watchdog',
  'crowd',
  'reload',
  'terminal',
  'attention',
  'budget',
  'otherExtensions',
] as const;
type Phase = (typeof PHASES)[number];

function args() {
  const only = process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice(7)
    .split(',') as Phase[] | undefined;
  const quick = process.argv.includes('--quick');
  const outArg = process.argv.find((a) => a.startsWith('--out='))?.slice(6);
  const partial = !!only || quick;
  const outDir = outArg
    ? path.resolve(outArg)
    : partial
      ? fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-bench-out-'))
      : path.join(REPO, 'bench', 'results');
  return { phases: new Set<Phase>(only ?? PHASES), quick, outDir };
}

function writeAtomic(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function main(): Promise<number> {
  const { phases, quick, outDir } = args();
  const started = nowNs();
  const startedAt = new Date();
  const meta: Record<string, string | number> = {
    date: startedAt.toISOString().replace(/\.\d+Z$/, 'Z'),
    cpus: os.cpus().length,
    kernel: os.release(),
    node: process.version,
    processes: processCount(),
    load: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
    runId: RUN_ID,
    marker: MARKER,
  };
  const owners = {
    cgroup: new TreeOwner({ core: processCore(), recordsDir: path.join(tmpDir(), 'records'), cgroups: 'auto' }),
    group: new TreeOwner({ core: processCore(), recordsDir: path.join(tmpDir(), 'records'), cgroups: 'off' }),
  };
  installInterruptHandlers();
  const tier = processCore().cgroupTier('auto').tier ? 'cgroup' : 'group';
  meta.tier =
    tier === 'cgroup'
      ? `cgroup (${processCore().cgroupTier('auto').tier!.reason})`
      : `group (no cgroup tier: ${processCore().cgroupTier('auto').unavailable})`;
  meta.treeBuilder = treeBuilderKind();
  const results: AllResults = {};
  const errors: string[] = [];
  const phase = async (name: Phase, fn: () => Promise<void>) => {
    if (!phases.has(name)) return;
    const t0 = nowNs();
    try {
      await fn();
    } catch (e) {
      errors.push(`${name}: ${(e as Error).stack ?? e}`);
      log(`${name} FAILED: ${(e as Error).message}`);
      killEverythingSync();
    }
    log(`${name}: ${(msSince(t0) / 1000).toFixed(1)} s`);
  };

  let filler: { id: string } | undefined;
  try {
    await phase('snapshot', async () => {
      const r = await runSnapshot({
        owner: owners.cgroup,
        rounds: quick ? [5, 5, 5] : [21, 17, 15],
        oneHzSeconds: quick ? 3 : 8,
        keepLast: phases.has('sweep'),
      });
      results.snapshot = r.results;
      filler = r.keptTree;
    });
    // The sweep runs with the +1000 tree of the snapshot phase still alive (~1000+ processes on the machine).
    await phase('sweep', async () => {
      results.sweep = await runSweep({ reps: quick ? 2 : 5, mixedReps: 1, records: 100, budgetMs: quick ? 5000 : 10_000 });
    });
    if (filler) {
      await owners.cgroup.kill(filler.id, 0);
      filler = undefined;
    }
    await phase('kill', async () => {
      // At 1001 processes tree-kill runs 3 times (about a minute each) and ours and the floor 5, so the ratios
      // have a spread over runs, not only a median.
      const reps = (m: KillMethod, size: number): number => {
        if (quick) return m === 'tree-kill' ? (size > 500 ? 0 : 1) : size > 500 ? 1 : 2;
        if (m === 'tree-kill') return size > 500 ? 3 : size > 100 ? 1 : 3;
        if (m === 'ours-direct') return size > 500 ? 1 : size > 100 ? 3 : 5;
        if (m === 'ours-group') return size > 500 ? 2 : size > 100 ? 4 : 7;
        return size > 500 ? 5 : size > 100 ? 4 : 7;
      };
      results.kill = await runKill({ owners, tier, sizes: [21, 201, 1001], reps, capMs: 60_000 });
    });
    await phase('reach', async () => {
      results.reach = await runReach(owners);
    });
    await phase('view', async () => {
      const baseline = Number(meta.processes);
      results.view = await runView({
        owners,
        rounds: quick ? 1 : 3,
        seconds: quick ? 10 : 20,
        bigSeconds: quick ? 5 : 10,
        escapes: quick ? [200] : [200, 5000, 9700],
        baseline,
      });
      results.viewHost = await measureViewInHost({
        tiers: quick ? ['group'] : ['group', 'cgroup'],
        windowS: quick ? 10 : 15,
        rounds: quick ? 1 : 4,
        escapes: quick ? 1 : 2,
        baseline,
      });
    });
    await phase('extension', async () => {
      // Measured in the real host unless a figure was handed in ($AGENT_TREES_ACTIVATION_MS or its file).
      let measured: ActivationFigure | undefined;
      if (!process.env[ACTIVATION_ENV] && !process.env[ACTIVATION_FILE_ENV]) {
        const act = measureActivation(quick ? 1 : 3);
        measured =
          act.activateMs.length > 0
            ? {
                ms: summarize(act.activateMs).median,
                source: `activate() in the real host (code-server 4.100.3), median of ${act.activateMs.length} fresh starts; loading the bundle before it: ${summarize(act.loadMs).median.toFixed(1)} ms`,
              }
            : { source: `not measured: ${act.error}` };
      }
      results.extension = runExtension(measured);
    });
    await phase('watchdog', async () => {
      const windowS = quick ? 5 : 20;
      const rounds = quick ? 1 : 3;
      results.watchdog = { windowS, rounds, idle: await runWatchdogIdle(windowS, rounds), death: await runWatchdogDeath(quick ? 3 : 10) };
    });
    // 30 SIGTERM-ignoring trees of one SIGKILLed owner among 20,000 idle processes (issue 21).
    await phase('crowd', async () => {
      const tiers: ('cgroup' | 'group')[] = tier === 'cgroup' ? ['cgroup', 'group'] : ['group'];
      results.crowd = await runWatchdogCrowd({ trees: 30, idle: quick ? 5000 : 20_000, reps: quick ? 1 : 3, tiers });
    });
    // The reload loop runs the phased integration suite in the real host (~10 min): full runs only, or --only=reload.
    await phase('reload', async () => {
      const reload = runReloadLoop(quick ? 3 : 20, quick ? 1 : 3);
      results.watchdog ??= { windowS: 0, rounds: 0, idle: [], death: [] };
      results.watchdog.reload = reload;
    });
    await phase('terminal', async () => {
      results.terminal = await runTerminal({ owner: owners.cgroup, quick });
    });
    await phase('attention', async () => {
      results.attention = await runAttentionScan({ owner: owners.cgroup, quick });
    });
    await phase('budget', async () => {
      results.budget = await runBudget({ owners, windowS: quick ? 5 : 20, rounds: quick ? 1 : 5, runs: quick ? 2 : 5 });
    });
    await phase('otherExtensions', async () => {
      results.otherExtensions = measureOtherExtensions({ windowS: quick ? 8 : 20, rounds: quick ? 1 : 4 });
    });
  } finally {
    if (filler) await owners.cgroup.kill(filler.id, 0).catch(() => undefined);
    await Promise.all([owners.cgroup.dispose(0), owners.group.dispose(0)]).catch(() => undefined);
  }

  // Nothing this run started may be left: kill and look again until none is (zombies count as gone).
  const left = await cleanUpAndVerify(8000);
  meta.leftovers =
    left.length === 0
      ? 'none (checked by pid and by the run marker in /proc/<pid>/environ)'
      : `${left.length}: ${left.map((s) => s.pid).join(' ')}`;
  removeTempDirs();
  meta.durationS = (msSince(started) / 1000).toFixed(0);

  const ts = targets(results);
  const md = markdown(results, meta, ts);
  const json = { meta, targets: ts, ratios: ratioLines(results), results, errors, leftovers: left };
  writeAtomic(path.join(outDir, 'latest.json'), JSON.stringify(json, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n');
  writeAtomic(path.join(outDir, 'latest.md'), md);
  process.stdout.write('\n' + md + '\n');
  process.stdout.write(
    `Ratios:\n${ratioLines(results)
      .map((l) => `  ${l}`)
      .join('\n')}\n`,
  );
  process.stdout.write(
    `\nTargets: ${ts.map((t) => `${t.id} ${t.met === true ? 'met' : t.met === false ? 'MISSED' : 'n/a'}`).join(', ')}\n`,
  );
  process.stdout.write(`Results: ${path.relative(process.cwd(), path.join(outDir, 'latest.md')) || outDir} and latest.json\n`);
  for (const e of errors) process.stderr.write(`error in ${e}\n`);
  if (left.length) process.stderr.write(`LEFTOVERS: ${meta.leftovers}\n`);
  return errors.length || left.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
    killEverythingSync();
    process.exit(1);
  },
);
