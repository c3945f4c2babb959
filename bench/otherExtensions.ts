/**
 * What other extensions' processes of the extension host cost it (issue 22): runs bench/otherExtensionsSuite.ts in
 * a fresh real host (code-server 4.100.3) with the stand-in extensions loaded beside Agent Trees, and reads back
 * what it measured. Skipped, with the reason, where the host or the stand-ins' packages are not installed.
 * Alone: node --expose-gc out/bench/run.js --only=otherExtensions
 */
import * as fs from 'fs';
import * as path from 'path';
import { log, REPO, runInHost, summarize, Summary, tmpDir } from './lib';
import type { OthersCondition, OthersResult } from './otherExtensionsSuite';

export interface OthersBenchResults {
  run?: OthersResult;
  /** Per condition: the host's CPU over its windows, % of one core (median over rounds). */
  conditions?: Record<OthersCondition, Summary>;
  error?: string;
}

/** Target of issue 22: the view visible with the section costs at most this much more than the host hidden. */
export const OTHERS_VISIBLE_TARGET_PCT = 0.5;

export function measureOtherExtensions(opts: { windowS: number; rounds: number }): OthersBenchResults {
  if (!fs.existsSync(path.join(REPO, '.tools', 'code-server', '.installed')))
    return { error: 'the real host is not installed (bash scripts/host/install.sh)' };
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the stand-ins' plain JavaScript, by path
  const { prepareStandIns } = require(path.join(REPO, 'test', 'fixtures', 'extensions', 'standIns.js'));
  const standIns = prepareStandIns({ quiet: true });
  if (!standIns.ok) return { error: `the stand-in extensions: ${standIns.why}` };
  const dir = tmpDir('agent-trees-bench-others-');
  const userData = path.join(dir, 'user-data');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  // code-server's port forwarding scans every process every few seconds (see bench/viewHost.ts): off, so it does
  // not drown what is measured.
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify({ 'remote.autoForwardPorts': false, 'remote.autoForwardPortsSource': 'output' }),
  );
  const out = path.join(dir, 'result.json');
  const budgetS = 150 + opts.rounds * 4 * (opts.windowS + 12);
  log(
    `other extensions (real host): 15 host children, ${opts.rounds} rounds of 4 windows of ${opts.windowS} s; about ${Math.round(budgetS / 60)} min`,
  );
  const r = runInHost({
    suite: path.join(REPO, 'out', 'bench', 'otherExtensionsSuite.js'),
    args: ['--user-data-dir', userData, '--extension', standIns.claudeCode.dir, '--extension', standIns.codex.dir],
    env: {
      AGENT_TREES_OTHERS_BENCH_OUT: out,
      AGENT_TREES_OTHERS_BENCH_WINDOW_S: opts.windowS,
      AGENT_TREES_OTHERS_BENCH_ROUNDS: opts.rounds,
    },
    timeoutS: budgetS,
  });
  if (!fs.existsSync(out)) return { error: `host run failed (exit ${r.status}): ${r.tail(6)}` };
  const run = JSON.parse(fs.readFileSync(out, 'utf8')) as OthersResult;
  const of = (c: OthersCondition) => summarize(run.windows.filter((w) => w.condition === c).map((w) => w.pct));
  const conditions = {
    'off-hidden': of('off-hidden'),
    'end-hidden': of('end-hidden'),
    'end-visible': of('end-visible'),
    'off-visible': of('off-visible'),
  };
  for (const [c, s] of Object.entries(conditions))
    log(`other extensions (real host): ${c}: ${s.median.toFixed(3)} % of a core (median of ${s.n})`);
  return { run, conditions, error: run.errors[0]?.split('\n')[0] };
}
