/**
 * What the benchmark's suites for the real host (bench/viewHostSuite.ts, bench/otherExtensionsSuite.ts) share:
 * waiting on a condition, showing or hiding the view, and the result file the host runner reads
 * (scripts/host/runTests.js).
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { AgentTreesTestExports, ViewRefreshStats } from '../src/extension/testHooks';
import { sleep, waitFor } from '../test/support/wait';

export { sleep };

/** Waits until `probe` holds (looking every 50 ms); throws naming `what` after `timeoutMs`. */
export async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  await waitFor(what, probe, { timeoutMs, everyMs: 50 });
}

/** Shows the Process Trees view (or the Explorer instead), and waits until the extension knows. */
export async function show(api: AgentTreesTestExports, visible: boolean): Promise<void> {
  await vscode.commands.executeCommand(visible ? 'agentTrees.processTrees.focus' : 'workbench.view.explorer');
  await until(`the view ${visible ? 'shown' : 'hidden'}`, () => api.testHooks.viewRefresh().visible === visible, 15_000);
}

/** Writes the runner's result file: one test, passed unless there were errors. */
export function writeSuiteResult(title: string, errors: string[]): void {
  const resultFile = process.env.AGENT_TREES_TEST_RESULT;
  if (!resultFile) return;
  const ok = errors.length === 0;
  fs.writeFileSync(
    resultFile,
    JSON.stringify({
      state: 'done',
      pid: process.pid,
      phase: null,
      passed: ok ? 1 : 0,
      failed: ok ? 0 : 1,
      pending: 0,
      failures: errors.map((e) => ({ title, error: e })),
    }),
  );
}

/** One measured window: the extension host's CPU over `seconds` (`cpuMs` reads it so far), and the view's counts before and after. */
export async function measureWindow(
  api: AgentTreesTestExports,
  seconds: number,
  cpuMs: () => number,
): Promise<{ seconds: number; cpuMs: number; pct: number; before: ViewRefreshStats; after: ViewRefreshStats }> {
  const before = api.testHooks.viewRefresh();
  const c0 = cpuMs();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const used = cpuMs() - c0;
  const took = (performance.now() - t0) / 1000;
  return { seconds: took, cpuMs: used, pct: used / (took * 10), before, after: api.testHooks.viewRefresh() };
}
