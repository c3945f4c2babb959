// One phase of a host run: a code-server and a workbench on the run's user data folder, the suite running in
// its extension host, and the phase's end read from the suite's result file (see runTests.js for the protocol).
'use strict';

const { counted } = require('../counted');
const fs = require('fs');
const path = require('path');
const util = require('util');
const processes = require('../../test/support/processes');
const { startCodeServer, killStrayServerProcesses, tail } = require('./codeServer');
const { openWorkbench } = require('./workbench');
const { startPageChannel, PAGE_VAR } = require('./pageChannel');

const RESULT_FILE_VAR = 'AGENT_TREES_TEST_RESULT';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Copies what the suite appends to its log (`<result file>.log`) to our output; it survives a killed host. */
class SuiteLogPump {
  constructor(file) {
    this.file = file;
    this.offset = 0;
  }

  pump() {
    let fd;
    try {
      fd = fs.openSync(this.file, 'r');
      const size = fs.fstatSync(fd).size;
      if (size > this.offset) {
        const buf = Buffer.alloc(size - this.offset);
        fs.readSync(fd, buf, 0, buf.length, this.offset);
        this.offset = size;
        process.stdout.write(buf);
      }
    } catch {
      // not there yet
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }
}

/** The suite's result file, or undefined while absent or (briefly) being replaced. */
function readResult(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Starts code-server and opens the workbench on it; registers both in `p.active` for cleanup. The suite reaches
 * the workbench's page through the page channel (pageChannel.js), whose address its environment names.
 */
async function startSession(p, files) {
  const session = { exitCode: undefined, browserGone: false, server: undefined, browser: undefined, pageChannel: undefined };
  session.pageChannel = await startPageChannel(() => session.browser && session.browser.page);
  p.say(`${p.label}: starting code-server (${p.host.label})`);
  session.server = await startCodeServer({
    host: p.host,
    dirs: p.dirs,
    userDataDir: p.userDataDir,
    extensionsDir: p.extensionsDir,
    env: { ...p.env, [RESULT_FILE_VAR]: files.result, [PAGE_VAR]: session.pageChannel.url },
    marker: p.marker,
    logFile: files.serverLog,
    workspaceTrust: p.untrustedWorkspace,
  });
  p.active.server = session.server;
  p.say(`${p.label}: code-server pid ${session.server.pid} on ${session.server.url}; opening the workbench`);
  session.browser = await openWorkbench({
    server: session.server,
    dirs: p.dirs,
    folder: p.workspacePath,
    marker: p.marker,
    browserMarker: `${p.marker}.browser${p.index + 1}`,
    profileName: `chromium-profile-${p.index + 1}`,
    extensionDevelopmentPath: p.extensionDevelopmentPath,
    extensionTestsPath: p.extensionTestsPath,
    workspaceTrust: p.untrustedWorkspace,
    // The workbench's log (which includes the extension host's console): to a file, and live with --verbose.
    onLog: (type, args) => {
      const text = Array.isArray(args) ? util.format(...args) : String(args);
      const line = `[${type}] ${text.endsWith('\n') ? text : text + '\n'}`;
      fs.appendFileSync(files.browserLog, line);
      if (p.verbose) process.stdout.write(`[workbench] ${line}`);
    },
    onExit: (code) => {
      if (session.exitCode === undefined) session.exitCode = code;
    },
    onPageError: (msg) => fs.appendFileSync(files.browserLog, `[page] ${msg}\n`),
  });
  p.active.browser = session.browser;
  session.browser.context.on('close', () => (session.browserGone = true));
  return session;
}

/**
 * After a reload, the host the reload started runs the phase's after-reload tests in the same window and writes
 * `<result file>.after-reload.json`: waits for it. Returns { afterReload, error? }.
 */
async function waitForAfterReload(p, session, files, log, deadline) {
  let afterReload;
  while (Date.now() <= deadline && !p.active.interrupted && session.server.isRunning()) {
    log.pump();
    afterReload = readResult(files.afterReload);
    if (afterReload && afterReload.state === 'done') return { afterReload };
    await sleep(50);
  }
  return { afterReload, error: 'the extension host started by the reload did not finish its after-reload tests' };
}

/**
 * Waits until the phase is over: the result file is done and its host gone (killed on request, reloaded on
 * request, or exited before codeAutomationExit reached us), run() settled, or something broke.
 * Returns { result, afterReload?, error?, hostKilled }.
 */
async function waitForPhaseEnd(p, session, files, log) {
  let deadline = p.started + p.timeout;
  let lastHost;
  for (;;) {
    log.pump();
    const result = readResult(files.result);
    if (result && result.pid !== lastHost) {
      lastHost = result.pid;
      deadline = Date.now() + p.timeout; // a phase that goes on in the next host gets its time anew
    }
    if (fs.existsSync(files.crashRequest)) {
      fs.rmSync(files.crashRequest, { force: true });
      await crashAndReopen(p, session);
    }
    if (result && result.state === 'done' && !processes.isAlive(result.pid)) {
      if (!result.reloadRequested) return { result, hostKilled: !!result.hostKillRequested };
      return { result, hostKilled: false, ...(await waitForAfterReload(p, session, files, log, deadline)) };
    }
    if (session.exitCode !== undefined) {
      // run() settled. Its result file was written before that; allow a moment for a slow file system.
      let settled = result;
      for (let i = 0; i < 20 && !(settled && settled.state === 'done'); i++) {
        await sleep(50);
        settled = readResult(files.result);
      }
      return { result: settled, hostKilled: false };
    }
    if (!session.server.isRunning()) {
      // A suite that asked for code-server's whole group to be killed wrote its result first; the kill can land
      // between the read above and this check, so read once more before calling the exit an error. Its host,
      // SIGKILLed with the group or right after it, may still be exiting (a large process on a loaded machine):
      // wait for that, within the phase's time.
      const last = readResult(files.result);
      if (last && last.state === 'done' && last.hostKillRequested) {
        if (!processes.isAlive(last.pid)) return { result: last, hostKilled: true };
        if (Date.now() <= deadline && !p.active.interrupted) {
          await sleep(50);
          continue;
        }
      }
    }
    let error;
    if (result && result.state === 'running' && !processes.isAlive(result.pid))
      error = `the extension host (pid ${result.pid}) died while the suite was running`;
    else if (p.active.interrupted) error = 'interrupted';
    else if (!session.server.isRunning()) error = 'code-server exited during the run';
    else if (session.browserGone) error = 'the browser closed during the run';
    else if (Date.now() > deadline)
      error =
        `timed out after ${Math.round(p.timeout / 1000)} s` + (result ? ` (suite state: ${result.state})` : ' (the suite never started)');
    if (error) return { result, error, hostKilled: false };
    await sleep(50);
  }
}

/**
 * Crashes the workbench's renderer (its extension host is not told: it lingers, as after a tab that died) and
 * opens the same folder in a new page of the same browser, as the suite asked (`<result file>.crash-renderer`).
 */
async function crashAndReopen(p, session) {
  p.say(`${p.label}: crashing the workbench renderer and opening the folder in a new page, as the suite asked`);
  const browser = session.browser;
  const old = browser.page;
  const cdp = await browser.context.newCDPSession(old);
  const crashed = new Promise((resolve) => old.once('crash', resolve));
  cdp.send('Page.crash').catch(() => {}); // never answered: the page is gone
  const t0 = Date.now();
  const how = await Promise.race([crashed.then(() => 'crashed'), sleep(5000).then(() => 'no crash event after 5 s')]);
  const crashMs = Date.now() - t0;
  browser.page = await browser.context.newPage();
  await browser.page.goto(`${session.server.url}?folder=${encodeURIComponent(p.workspacePath)}`, {
    waitUntil: 'domcontentloaded',
    timeout: 60000,
  });
  p.say(`${p.label}: renderer ${how} (${crashMs} ms); new page loaded ${Date.now() - t0} ms after the crash request`);
  old.close().catch(() => {});
}

/**
 * Ends the session. After a crash or an error the server goes first (SIGKILL), so the workbench cannot start
 * another extension host meanwhile; otherwise the workbench closes first (so it does not reconnect) and the
 * server gets SIGTERM (so the extension host can deactivate). The extension host is in code-server's process
 * group and session, so it goes with the group; then every code-server process of the phase left outside the
 * group is killed: a terminal's shell, which the pty host starts in a session of its own, must not outlive the
 * phase. What the extension started is left alone: the next phase must find it.
 */
async function tearDown(p, session, outcome) {
  const started = Date.now();
  if (outcome.hostKilled) {
    // The suite killed its extension host: what the host started (in code-server's process group, as a host's
    // children are) stays for the next phase, as after a real crash; code-server itself goes.
    await session.server.stopOwn();
    p.active.server = undefined;
    await session.browser.close();
    p.active.browser = undefined;
  } else if (outcome.error) {
    await session.server.stop(0);
    p.active.server = undefined;
    await session.browser.close();
    p.active.browser = undefined;
  } else {
    await session.browser.close();
    p.active.browser = undefined;
    await session.server.stop(3000);
    p.active.server = undefined;
  }
  await session.pageChannel.close();
  const strays = await killStrayServerProcesses(p.host, p.marker);
  if (strays)
    p.say(
      `${p.label}: ${counted(strays, 'code-server process', 'code-server processes')} outside its process group still ran; killed them`,
    );
  return Date.now() - started;
}

/** What the phase counts: product tests, harness self-tests, and why it failed if it did. */
function judge(outcome, exitCode) {
  const verdict = { passed: 0, failed: 0, pending: 0, harnessPassed: 0, harnessFailed: 0, error: outcome.error };
  if (verdict.error) return verdict;
  const r = outcome.result;
  if (!r) verdict.error = `no result file: the suite never ran or its extension host died (exit code ${exitCode})`;
  else if (r.state !== 'done') verdict.error = `the suite did not finish (state ${r.state}, exit code ${exitCode})`;
  else {
    // The after-reload tests (run by the host a reload started) count with the phase.
    const counts = [r, outcome.afterReload].filter(Boolean);
    const sum = (key) => counts.reduce((n, c) => n + (c[key] || 0), 0);
    verdict.passed = sum('passed');
    verdict.failed = sum('failed');
    verdict.pending = sum('pending');
    verdict.harnessPassed = sum('harnessPassed');
    verdict.harnessFailed = sum('harnessFailed');
    if (verdict.failed + verdict.harnessFailed > 0) verdict.error = `${counted(verdict.failed + verdict.harnessFailed, 'test')} failed`;
    else if (exitCode !== undefined && exitCode !== 0)
      verdict.error = `the workbench reported exit code ${exitCode} although the result file says 0 failed`;
    else if (verdict.passed === 0) verdict.error = 'no test ran';
  }
  return verdict;
}

function report(p, files, outcome, verdict, seconds, teardownMs) {
  const harness =
    verdict.harnessPassed || verdict.harnessFailed
      ? ` (harness self-tests: ${verdict.harnessPassed} passed, ${verdict.harnessFailed} failed; not counted)`
      : '';
  const pending = verdict.pending ? `, ${verdict.pending} pending` : '';
  p.say(
    `${p.label}: ${verdict.passed} passed, ${verdict.failed} failed${pending}${harness} in ${seconds} s (teardown ${teardownMs} ms)` +
      (outcome.hostKilled ? ' (the suite killed its extension host after writing its result)' : ''),
  );
  const failures = [outcome.result, outcome.afterReload].flatMap((r) => (r && r.failures) || []);
  if (failures.length) {
    p.say(`${p.label}: failures:`);
    for (const f of failures) process.stdout.write(`  - ${f.title}\n    ${String(f.error).split('\n').slice(0, 6).join('\n    ')}\n`);
  }
  if (verdict.error && !p.active.interrupted) {
    p.say(`${p.label}: FAILED: ${verdict.error}`);
    p.say(`---- tail of code-server's log (${files.serverLog}) ----`);
    process.stdout.write(tail(files.serverLog, 60) + '\n');
    const workbench = tail(files.browserLog, 30);
    if (workbench) {
      p.say(`---- tail of the workbench's log (${files.browserLog}) ----`);
      process.stdout.write(workbench + '\n');
    }
    p.say(`extension host logs: ${path.join(p.userDataDir, 'logs')}`);
  }
}

/**
 * Runs one phase. `p`: { index, label, host, dirs, marker, userDataDir, extensionsDir, workspacePath,
 * extensionDevelopmentPath, extensionTestsPath, env, untrustedWorkspace, timeout, verbose, active, say }.
 * Resolves with { passed, failed, pending, harnessPassed, harnessFailed, error?, hostKilled, seconds }.
 */
async function runPhase(p) {
  const n = p.index + 1;
  const result = path.join(p.dirs.root, 'results', `phase-${n}.json`);
  const files = {
    result,
    afterReload: `${result}.after-reload.json`,
    crashRequest: `${result}.crash-renderer`,
    suiteLog: `${result}.log`,
    serverLog: path.join(p.dirs.logs, `code-server-${n}.log`),
    browserLog: path.join(p.dirs.logs, `workbench-${n}.log`),
  };
  const log = new SuiteLogPump(files.suiteLog);
  p = { ...p, started: Date.now() };
  const session = await startSession(p, files);
  const outcome = await waitForPhaseEnd(p, session, files, log);
  log.pump();
  const teardownMs = await tearDown(p, session, outcome);
  const verdict = judge(outcome, session.exitCode);
  const seconds = Number(((Date.now() - p.started) / 1000).toFixed(1));
  report(p, files, outcome, verdict, seconds, teardownMs);
  return { ...verdict, hostKilled: outcome.hostKilled, seconds };
}

module.exports = { runPhase, RESULT_FILE_VAR };
