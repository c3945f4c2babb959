// Entry of the integration suite, loaded by VS Code as `extensionTestsPath` (by scripts/host/runTests.js
// in code-server, or by @vscode/test-electron in desktop VS Code). Runs mocha on the compiled
// `*.test.js` files beside it and writes the result to the file named by AGENT_TREES_TEST_RESULT.
//
// Result file protocol (read by scripts/host/runTests.js):
//   - at start the suite claims the file (exclusive create) with {state: 'running', pid, phase};
//     if the file already exists, this is an extension host that the workbench restarted after the
//     phase's host died: it runs nothing and leaves the file alone;
//   - at the end it replaces it (write + rename) with {state: 'done', pid, phase, vscode, passed, failed, pending,
//     harnessPassed, harnessFailed, failures}; the harness's self-tests (files under selftest/) are counted
//     apart from the product's tests;
//   - meanwhile it appends its output (mocha's report, and what tests print with harness.log) to
//     `<result file>.log`, synchronously, so the runner shows it even if the extension host is killed;
//   - if a test asked for it (killHostAfterResult), it then freezes code-server, so the workbench
//     cannot start a new extension host, and SIGKILLs its own extension host;
//   - if a test asked for a reload (reloadWindowAfterResult), it reloads the window and never settles; the
//     host the reload starts finds the result file written with reloadRequested, runs the phase's
//     `*.afterReload.test.js` files (what must hold after a reload in the same window: terminals VS Code kept,
//     say), writes {state: 'done', pid, passed, failed, pending, harnessPassed, harnessFailed, failures} to `<result file>.after-reload.json` and
//     waits; the runner ends the phase once the old host is gone and that file is written;
//   - if a test asked to continue in the next host (continueInNextHost), it writes {state: 'continuing'} with
//     the counts so far and reloads the window (or asks the runner, with `<result file>.crash-renderer`, to
//     crash the renderer and open the folder again); the next host finds 'continuing', takes the file over
//     ({state: 'running', pid: its own}) and runs the phase's tests again, adding to the counts;
//   - killHostAfterResult('server') SIGKILLs code-server's whole process group and this host.
import * as fs from 'fs';
import * as path from 'path';
import Mocha from 'mocha';
import * as vscode from 'vscode';
import {
  continueRequest,
  currentPhase,
  HOST_MARKER_VAR,
  hostKillScope,
  isHostKillRequested,
  isReloadRequested,
  log,
  RESULT_FILE_VAR,
} from './harness';
import { processes } from '../support/repo';

interface Failure {
  title: string;
  error: string;
}

/** The stand-in extensions (test/fixtures/extensions) a run with stand-ins loads beside Agent Trees. */
const STAND_IN = 'agent-trees-tests.claude-code-stand-in';

/**
 * Compiled test files under `dir`: every `*.test.js`, or in phase 2+ only the `*.phased.test.js` ones; after a
 * reload, only the `*.afterReload.test.js` ones (which run nowhere else). A run that loads the stand-in extensions
 * (runTests.js --extension test/fixtures/extensions/...) runs the `*.standIns.*` files, and only those; any other
 * run, none of them.
 */
function testFiles(dir: string, afterReload = false): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...testFiles(full, afterReload));
    else if (entry.name.endsWith('.test.js') && entry.name.includes('.standIns.') === withStandIns) files.push(full);
  }
  if (afterReload) return files.filter((f) => f.endsWith('.afterReload.test.js')).sort();
  const later = currentPhase !== undefined && currentPhase > 1;
  // A Restricted Mode run (runTests.js --untrusted-workspace) runs the *.untrusted.test.js files, and only those.
  const untrusted = process.env.AGENT_TREES_WORKSPACE_TRUST === 'untrusted';
  return files
    .filter((f) => f.endsWith('.untrusted.test.js') === untrusted && !f.endsWith('.afterReload.test.js'))
    .filter((f) => !later || f.endsWith('.phased.test.js'))
    .sort();
}

const withStandIns = vscode.extensions.getExtension(STAND_IN) !== undefined;

function writeAtomically(file: string, data: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(data, null, 2));
  fs.renameSync(tmp, file);
}

/** Whether `pid`'s environment holds the host runner's marker (so the process belongs to a test run). */
function carriesHostMarker(pid: number): boolean {
  const own = process.env[HOST_MARKER_VAR];
  return !!own && processes.envOf(pid, HOST_MARKER_VAR) === own;
}

/** The harness's self-tests live in selftest/: they prove the runner works and are not product tests. */
const isHarnessSelfTest = (test: Mocha.Runnable) => !!test.file && test.file.split(path.sep).includes('selftest');

/**
 * Sends mocha's reporter output through log() as well, so it lands in the suite log the runner prints.
 * (The console itself cannot be redirected: the extension host makes its methods read-only.)
 * Returns a function that undoes it.
 */
function teeReporter(): () => void {
  const base = Mocha.reporters.Base as unknown as { consoleLog: (...args: unknown[]) => void };
  const saved = base.consoleLog;
  base.consoleLog = (...args) => log(...args);
  return () => {
    base.consoleLog = saved;
  };
}

/** Whether the result file was written by a suite that then asked for a window reload. */
function reloadedFrom(resultFile: string): boolean {
  try {
    const r = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
    return r.state === 'done' && r.reloadRequested === true;
  } catch {
    return false;
  }
}

interface Counts {
  passed: number;
  failed: number;
  pending: number;
  /** The harness's self-tests (selftest/), counted apart from the product's tests. */
  harnessPassed: number;
  harnessFailed: number;
  failures: Failure[];
}

/** Counts of earlier hosts of this phase, when the result file says the phase continues in this host. */
function continuedFrom(resultFile: string): Counts | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
    if (r.state !== 'continuing') return undefined;
    return {
      passed: r.passed,
      failed: r.failed,
      pending: r.pending,
      harnessPassed: r.harnessPassed,
      harnessFailed: r.harnessFailed,
      failures: r.failures,
    };
  } catch {
    return undefined;
  }
}

/** The topmost ancestor of this host that carries the runner's marker: code-server's main process. */
function codeServerMain(): number | undefined {
  let top: number | undefined;
  for (let pid = process.ppid; pid > 1 && carriesHostMarker(pid); pid = processes.readStat(pid)?.ppid ?? 0) top = pid;
  return top;
}

/** Runs mocha on `files`; never rejects (a suite that cannot load counts as one failure). */
async function runMocha(files: string[]): Promise<Counts> {
  // AGENT_TREES_TEST_GREP (runTests.js --env): only the tests whose full title matches, while working on them.
  const grep = process.env.AGENT_TREES_TEST_GREP;
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 30000, reporter: 'spec', ...(grep ? { grep } : {}) });
  const failures: Failure[] = [];
  let passed = 0;
  let failed = 0;
  let pending = 0;
  let harnessPassed = 0;
  let harnessFailed = 0;
  try {
    for (const file of files) mocha.addFile(file);
    await new Promise<void>((resolve) => {
      const runner = mocha.run(() => resolve());
      runner.on('pass', (test) => (isHarnessSelfTest(test) ? harnessPassed++ : passed++));
      runner.on('pending', () => pending++);
      runner.on('fail', (test, err: Error) => {
        if (isHarnessSelfTest(test)) harnessFailed++;
        else failed++;
        failures.push({ title: test.fullTitle(), error: String(err && (err.stack || err.message || err)) });
      });
    });
  } catch (e) {
    failed++;
    failures.push({ title: 'loading the suite', error: String((e as Error).stack || e) });
    log(e);
  }
  return { passed, failed, pending, harnessPassed, harnessFailed, failures };
}

/** Called by VS Code's test harness in the extension host; rejects when a test failed. */
export async function run(): Promise<void> {
  const resultFile = process.env[RESULT_FILE_VAR];
  const base = { pid: process.pid, phase: currentPhase ?? null, vscode: vscode.version };
  let carried: Counts = { passed: 0, failed: 0, pending: 0, harnessPassed: 0, harnessFailed: 0, failures: [] };
  if (resultFile) {
    try {
      fs.writeFileSync(resultFile, JSON.stringify({ state: 'running', ...base, startedAt: new Date().toISOString() }), { flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
        if (reloadedFrom(resultFile)) {
          log(`[suite] extension host ${process.pid} started by the reload: running the after-reload tests`);
          const untee = teeReporter();
          const counts = await runMocha(testFiles(__dirname, true));
          untee();
          writeAtomically(`${resultFile}.after-reload.json`, { state: 'done', ...base, ...counts, endedAt: new Date().toISOString() });
          return new Promise<void>(() => {});
        }
        const earlier = continuedFrom(resultFile);
        if (!earlier) {
          throw new Error(
            `${resultFile} already exists: this extension host was restarted after the phase ended; not running the suite again`,
            { cause: e },
          );
        }
        carried = earlier;
        writeAtomically(resultFile, { state: 'running', ...base, startedAt: new Date().toISOString() });
        log(`[suite] extension host ${process.pid} continues the phase (${carried.passed} passed, ${carried.failed} failed so far)`);
      } else {
        throw e;
      }
    }
  }

  const untee = teeReporter();
  const here = await runMocha(testFiles(__dirname));
  const passed = carried.passed + here.passed;
  const productFailed = carried.failed + here.failed;
  const pending = carried.pending + here.pending;
  const harnessPassed = carried.harnessPassed + here.harnessPassed;
  const harnessFailed = carried.harnessFailed + here.harnessFailed;
  const failures = [...carried.failures, ...here.failures];
  const failed = productFailed + harnessFailed;
  /** What the result file says of this phase so far, whether it goes on in the next host or ends here. */
  const counts = { passed, failed: productFailed, pending, harnessPassed, harnessFailed, failures };

  const next = failed === 0 ? continueRequest() : undefined;
  if (next && resultFile) {
    writeAtomically(resultFile, { state: 'continuing', ...base, ...counts, how: next });
    untee();
    if (next === 'reload') {
      log(`[suite] counts written; reloading the window to continue in the next host (this one, ${process.pid}, shuts down)`);
      await vscode.commands.executeCommand('workbench.action.reloadWindow');
    } else {
      log(`[suite] counts written; asking the runner to crash the renderer and open the folder again (this host, ${process.pid}, lingers)`);
      fs.writeFileSync(`${resultFile}.crash-renderer`, String(process.pid));
    }
    return new Promise<void>(() => {}); // the phase goes on in the next host
  }

  if (resultFile) {
    writeAtomically(resultFile, {
      state: 'done',
      ...base,
      ...counts,
      hostKillRequested: isHostKillRequested(),
      reloadRequested: isReloadRequested() && failed === 0,
      endedAt: new Date().toISOString(),
    });
  }

  if (isReloadRequested() && failed === 0) {
    log(`[suite] result written; reloading the window (extension host ${process.pid} shuts down)`);
    untee();
    await vscode.commands.executeCommand('workbench.action.reloadWindow');
    return new Promise<void>(() => {}); // the phase ends when this host is gone, not when run() settles
  }

  if (isHostKillRequested()) {
    log(`[suite] result written; SIGKILLing this extension host (pid ${process.pid}) as a test asked`);
    untee();
    await new Promise((r) => setTimeout(r, 500)); // lets the console lines above reach the workbench
    // Freeze code-server (our parent), so the workbench cannot start a new extension host before the
    // runner has taken the server down: that host would activate the extension a second time.
    const server = hostKillScope() === 'server' ? codeServerMain() : undefined;
    const group = server !== undefined ? processes.readStat(server)?.pgid : undefined;
    // The editor killed outright: code-server's whole process group at once, this host with it (it is in that
    // group and session in 1.100.3 and 1.139.1 alike; the SIGKILL below is for a host that is not).
    if (group && group > 1 && group !== process.pid) process.kill(-group, 'SIGKILL');
    if (carriesHostMarker(process.ppid)) process.kill(process.ppid, 'SIGSTOP');
    process.kill(process.pid, 'SIGKILL');
  }
  untee();
  if (failed > 0) throw new Error(`${failed} integration test(s) failed`);
}
