/**
 * A suite module for the real-host runner (scripts/host/runTests.js) that measures activation: the extension
 * activates on startup (onStartupFinished) and reports how long loading its bundle and activate() took
 * (the test hooks' `timings`); this writes those to $AGENT_TREES_ACTIVATION_OUT and the result file the runner reads.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { AgentTreesTestExports } from '../src/extension/testHooks';

export async function run(): Promise<void> {
  const api: Partial<AgentTreesTestExports> = await vscode.extensions
    .getExtension<AgentTreesTestExports>('agent-trees.agent-trees')!
    .activate();
  const timings = api.testHooks?.timings;
  const out = process.env.AGENT_TREES_ACTIVATION_OUT;
  const ok = typeof timings?.activateMs === 'number';
  if (out) fs.writeFileSync(out, JSON.stringify(timings ?? {}));
  const resultFile = process.env.AGENT_TREES_TEST_RESULT;
  if (resultFile) {
    fs.writeFileSync(
      resultFile,
      JSON.stringify({ state: 'done', pid: process.pid, phase: null, passed: ok ? 1 : 0, failed: ok ? 0 : 1, pending: 0, failures: [] }),
    );
  }
  if (!ok) throw new Error('the extension reported no activation timings');
}
