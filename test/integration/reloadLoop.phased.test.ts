// Reloads clean up every time: phase 5 reloads the window AGENT_TREES_RELOADS times (default 20) with
// workbench.action.reloadWindow, then crashes its renderer AGENT_TREES_RENDERER_CRASHES times (default 3): the old
// extension host is then never told and lingers, as code-server keeps it for its reconnection grace, until the
// window's next host takes over. Each host launches agents (a setsid child, a SIGTERM-ignoring tree), starts a
// monitor outside every tree and asks to continue in the next host; that host checks the monitor's report: every
// process gone and the old record removed. Sweeps are off for the whole phase, so nothing but the old host's own
// shutdown, its watchdog or the takeover ended them. The timings (ms from the reload request) are logged and, with
// AGENT_TREES_RELOAD_TIMINGS=<file>, written there for the benchmark; the test asserts what happened, not how fast.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { continueInNextHost, inPhase, log, uptimeMs } from './harness';
import { api, monitorReport, pidFile, startedAtMs, startMonitor } from './fixtures';
import { FIXTURE } from '../support/repo';
import { fixturePids } from '../support/fixtures';

const RELOADS = Number(process.env.AGENT_TREES_RELOADS ?? 20);
const CRASHES = Number(process.env.AGENT_TREES_RENDERER_CRASHES ?? 3);

type How = 'reload' | 'renderer-crash';

export interface ReloadRun {
  how: How;
  /** ms from the request until every process of the old window's trees was gone. */
  processesMs: number;
  /** ms from the request until the old window's record was removed. */
  recordMs: number;
  /** ms from the request until the old host was gone; null: it still ran when all was clean (a takeover). */
  hostGoneMs: number | null;
  /** ms from the request until the new host's process started. */
  newHostMs: number;
  /** ms from the request until the extension ran in the new host (the test: activation is just before). */
  newWindowMs: number;
}

interface LoopState {
  iteration: number;
  pending?: { how: How; hostPid: number; recordFile: string; monitor: string; requestedAt: number };
  runs: ReloadRun[];
}

const config = () => vscode.workspace.getConfiguration('agentTrees');

async function stateFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'reload-loop.json');
}

function summary(runs: ReloadRun[], how: How): string {
  const of = runs.filter((r) => r.how === how);
  if (of.length === 0) return `${how}: none`;
  const rec = of.map((r) => r.recordMs).sort((a, b) => a - b);
  const lingered = of.filter((r) => r.hostGoneMs === null || r.hostGoneMs > r.recordMs).length;
  return (
    `${how}: ${of.length} runs; record removed after median ${rec[Math.floor(rec.length / 2)]} ms, max ${rec[rec.length - 1]} ms; ` +
    `processes gone after max ${Math.max(...of.map((r) => r.processesMs))} ms; old host outlived the cleanup in ${lingered}`
  );
}

inPhase(5, 'reloads clean up every time', () => {
  it("the previous window's trees are gone and its record removed; then this window reloads", async function () {
    this.timeout(120_000);
    const file = await stateFile();
    const state: LoopState = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : { iteration: 0, runs: [] };
    if (state.iteration === 0) {
      // Nothing but the old host, its watchdog and the takeover may end the old trees.
      await config().update('sweepOnActivation', false, vscode.ConfigurationTarget.Global);
      await config().update('sweepIntervalMinutes', 0, vscode.ConfigurationTarget.Global);
    }
    const now = uptimeMs();
    if (state.pending) {
      const p = state.pending;
      assert.notStrictEqual(p.hostPid, process.pid, 'a new host');
      const report = await monitorReport(p.monitor, 60_000);
      assert.deepStrictEqual(report.survivors, [], `after ${p.how} ${state.iteration}: processes of the old window survived`);
      assert.ok(
        report.done && report.recordGoneAt !== null,
        `after ${p.how} ${state.iteration}: the old record ${p.recordFile} was not removed`,
      );
      const run: ReloadRun = {
        how: p.how,
        processesMs: report.processesGoneAt! - p.requestedAt,
        recordMs: report.recordGoneAt! - p.requestedAt,
        hostGoneMs: report.hostGoneAt === null ? null : report.hostGoneAt - p.requestedAt,
        newHostMs: startedAtMs() - p.requestedAt,
        newWindowMs: now - p.requestedAt,
      };
      state.runs.push(run);
      log(
        `[reload-loop] ${p.how} ${state.iteration}: old host ${p.hostPid}'s processes gone after ${run.processesMs} ms, ` +
          `record after ${run.recordMs} ms, host ${run.hostGoneMs === null ? 'still running (taken over)' : `gone after ${run.hostGoneMs} ms`}; ` +
          `this host started after ${run.newHostMs} ms, its test ran after ${run.newWindowMs} ms`,
      );
      state.pending = undefined;
    }
    if (state.iteration < RELOADS + CRASHES) {
      const trees = await api();
      const a = pidFile();
      const b = pidFile();
      await trees.launch({ name: 'loop-setsid', command: FIXTURE, args: ['setsid', a], timeoutSeconds: 0 });
      await trees.launch({ name: 'loop-stubborn', command: FIXTURE, args: ['ignore-term', b], timeoutSeconds: 0 });
      const pids = [...(await fixturePids(a)).all, ...(await fixturePids(b)).all];
      const recordFile = path.join(trees.recordsDir, `${process.pid}.json`);
      assert.ok(fs.existsSync(recordFile));
      const monitor = await startMonitor(`loop-${state.iteration}`, recordFile, pids);
      const how: How = state.iteration < RELOADS ? 'reload' : 'renderer-crash';
      state.iteration++;
      state.pending = { how, hostPid: process.pid, recordFile, monitor, requestedAt: uptimeMs() };
      fs.writeFileSync(file, JSON.stringify(state));
      continueInNextHost(how);
      return;
    }
    log(`[reload-loop] ${summary(state.runs, 'reload')}`);
    log(`[reload-loop] ${summary(state.runs, 'renderer-crash')}`);
    if (process.env.AGENT_TREES_RELOAD_TIMINGS) fs.writeFileSync(process.env.AGENT_TREES_RELOAD_TIMINGS, JSON.stringify(state.runs));
    fs.rmSync(file, { force: true });
    await config().update('sweepOnActivation', undefined, vscode.ConfigurationTarget.Global);
    await config().update('sweepIntervalMinutes', undefined, vscode.ConfigurationTarget.Global);
    assert.strictEqual(state.runs.length, RELOADS + CRASHES);
  });
});
