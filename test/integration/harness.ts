// Helpers shared by the integration suite (index.ts) and its tests: the test phase this extension host
// runs in, phase-only test blocks, and the request to SIGKILL this extension host once the result is written.
// Waiting, fixtures and the harness-side process helper are test/support's, shared with the other suites.
import * as fs from 'fs';
import * as util from 'util';

/** Environment variable naming the file the suite writes its result to (set by the runner). */
export const RESULT_FILE_VAR = 'AGENT_TREES_TEST_RESULT';
/** Environment variable holding the phase number (1, 2, ...) of a phased run; unset in a single run. */
export const PHASE_VAR = 'AGENT_TREES_PHASE';
/** Environment variable the host runner (scripts/host/runTests.js) puts in code-server's environment. */
export const HOST_MARKER_VAR = 'AGENT_TREES_HOST_MARKER';
/** The extension's identifier (`publisher.name`). */
export const EXTENSION_ID = 'agent-trees.agent-trees';

/** The phase this extension host runs in, or undefined when the run has no phases. */
export const currentPhase: number | undefined = process.env[PHASE_VAR] ? Number(process.env[PHASE_VAR]) : undefined;

/**
 * Declares a describe block that exists only in phase `phase` of a phased run. In a run without phases
 * (e.g. under @vscode/test-electron) it declares nothing: such tests need the runner's phases.
 */
export function inPhase(phase: number, title: string, fn: (this: Mocha.Suite) => void): void {
  if (currentPhase === phase) describe(`[phase ${phase}] ${title}`, fn);
}

/**
 * Prints to the run's output: appends to the suite log (`<result file>.log`, which the runner shows)
 * and writes to the console (which reaches the workbench's log). Use it instead of console.log in
 * tests: the extension host does not let the console be redirected.
 */
export function log(...args: unknown[]): void {
  const file = process.env[RESULT_FILE_VAR];
  if (file) {
    try {
      fs.appendFileSync(`${file}.log`, util.format(...args) + '\n');
    } catch {
      // the log is a convenience; the result file is what counts
    }
  }
  console.log(...args);
}

let killRequested: 'host' | 'server' | undefined;

/**
 * Asks the suite to SIGKILL this extension host right after it has written the result file (`'server'`: the
 * whole code-server process group, and this host, as when the editor itself is killed). The runner then ends
 * the phase once the result file exists and this host is gone. Only allowed in a phased run.
 */
export function killHostAfterResult(scope: 'host' | 'server' = 'host'): void {
  if (currentPhase === undefined) throw new Error('killHostAfterResult() needs a phased run');
  killRequested = scope;
}

/** What a test asked to be killed after the result, if anything. */
export function hostKillScope(): 'host' | 'server' | undefined {
  return killRequested;
}

let continueRequested: 'reload' | 'renderer-crash' | undefined;

/**
 * Asks the suite to run this phase's tests again in the window's next extension host, after this one has
 * written its counts: `'reload'` runs workbench.action.reloadWindow; `'renderer-crash'` asks the runner to
 * crash the workbench's renderer and open the same folder in a new page (the old host then lingers, as after a
 * renderer that died). Tests keep their own state across hosts (in global storage) and stop asking when done.
 */
export function continueInNextHost(how: 'reload' | 'renderer-crash'): void {
  if (currentPhase === undefined) throw new Error('continueInNextHost() needs a phased run');
  continueRequested = how;
}

export function continueRequest(): 'reload' | 'renderer-crash' | undefined {
  return continueRequested;
}

/** Milliseconds since boot (CLOCK_BOOTTIME, the clock of process start times). */
export function uptimeMs(): number {
  return Math.round(parseFloat(fs.readFileSync('/proc/uptime', 'latin1')) * 1000);
}

let reloadRequested = false;

/**
 * Asks the suite to reload the window right after it has written the result file, so the extension host
 * shuts down the way a user's reload shuts it down. The phase ends once that host is gone; the next phase
 * checks what the shutdown did. Only allowed in a phased run.
 */
export function reloadWindowAfterResult(): void {
  if (currentPhase === undefined) throw new Error('reloadWindowAfterResult() needs a phased run');
  reloadRequested = true;
}

/** Whether a test called reloadWindowAfterResult(). */
export function isReloadRequested(): boolean {
  return reloadRequested;
}

/** Whether a test called killHostAfterResult(). */
export function isHostKillRequested(): boolean {
  return killRequested !== undefined;
}
