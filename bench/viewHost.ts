/**
 * The view's cost in the real extension host (code-server + headless Chromium, see scripts/host/): runs
 * bench/viewHostSuite.ts in a fresh host per tier, on a machine brought to ≥ 1000 processes by sleepers started
 * here, and reads back what it measured. Skipped, with the reason, where the host is not installed.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ChildProcess } from 'child_process';
import { log, processCount, REPO, runInHost, spawnDetachedTree, tmpDir, treeCommand } from './lib';
import type { HostViewResult } from './viewHostSuite';

export interface ViewHostResults {
  runs: (HostViewResult & { requestedTier: 'cgroup' | 'group' })[];
  error?: string;
}

/** Processes a host run adds by itself (code-server, Chromium, the extension host, the pty host) besides the agent and terminals. */
const HOST_PROCESSES = 10;

export async function measureViewInHost(opts: {
  tiers: ('cgroup' | 'group')[];
  windowS: number;
  rounds: number;
  escapes: number;
  /** Processes on the machine when the run started. */
  baseline?: number;
}): Promise<ViewHostResults> {
  const results: ViewHostResults = { runs: [] };
  if (!fs.existsSync(path.join(REPO, '.tools', 'code-server', '.installed'))) {
    results.error = 'the real host is not installed (bash scripts/host/install.sh)';
    return results;
  }
  const suite = path.join(REPO, 'out', 'bench', 'viewHostSuite.js');
  const tree = treeCommand(1);
  if (tree.args.length > 2) {
    results.error = 'needs the C tree builder (cc): the host suite starts it as the agent';
    return results;
  }
  for (const tier of opts.tiers) {
    let filler: ChildProcess | undefined;
    try {
      const budgetS = 150 + opts.rounds * 3 * (opts.windowS + 6) + opts.escapes * 45;
      // Counted against the fewest processes seen (the machine is shared: others' come and go): ≥ 1000 even if theirs leave.
      const fill = Math.max(0, 1030 - Math.min(processCount(), opts.baseline ?? Infinity) - HOST_PROCESSES - 20 - 15);
      // The sleepers outlive the host run (they end with it, or after a while if this run is killed).
      if (fill > 0) filler = (await spawnDetachedTree(fill, budgetS + 300)).child;
      const dir = tmpDir('agent-trees-bench-host-');
      const userData = path.join(dir, 'user-data');
      fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
      // code-server's remote extension host scans every process every few seconds for ports to forward
      // (ExtHostTunnelService: /proc/*/cmdline, cwd, `ls -l /proc/[0-9]*/fd/[0-9]*`): ~2-3 % of a core at 1000
      // processes, in bursts, the same with the view hidden or shown. Off (ports found from terminal output
      // instead), so it does not drown what is measured.
      const settings: Record<string, unknown> = { 'remote.autoForwardPorts': false, 'remote.autoForwardPortsSource': 'output' };
      if (tier === 'group') settings['agentTrees.cgroups'] = 'off';
      fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings));
      const out = path.join(dir, 'result.json');
      log(`view (real host, ${tier} tier): ${processCount()} processes before the host starts; about ${Math.round(budgetS / 60)} min`);
      // The host the issue measured in (VS Code 1.100.3), as the activation benchmark uses.
      const r = runInHost({
        suite,
        args: ['--user-data-dir', userData],
        env: {
          AGENT_TREES_VIEW_BENCH_OUT: out,
          AGENT_TREES_VIEW_BENCH_TREE: tree.command,
          AGENT_TREES_VIEW_BENCH_WINDOW_S: opts.windowS,
          AGENT_TREES_VIEW_BENCH_ROUNDS: opts.rounds,
          AGENT_TREES_VIEW_BENCH_ESCAPES: opts.escapes,
        },
        timeoutS: budgetS,
      });

      if (!fs.existsSync(out)) {
        results.error = `host run (${tier} tier) failed (exit ${r.status}): ${r.tail(6)}`;
        continue;
      }
      const run = JSON.parse(fs.readFileSync(out, 'utf8')) as HostViewResult;
      results.runs.push({ ...run, requestedTier: tier });
      if (run.errors.length) results.error = `host run (${tier} tier): ${run.errors[0].split('\n')[0]}`;
      for (const w of run.windows)
        log(
          `view (real host, ${run.tier}): ${w.condition}: ${w.pct.toFixed(2)} % (${w.refreshes} refreshes, ${w.fullScans} full, ${w.inWorker} in the worker, ${w.processReads} reads, ${w.processes} processes)`,
        );
    } finally {
      if (filler) {
        try {
          process.kill(-filler.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
  }
  return results;
}
