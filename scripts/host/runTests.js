#!/usr/bin/env node
// Runs an extension test suite inside a real VS Code extension host: code-server 4.100.3 (VS Code 1.100.3)
// with its workbench opened in headless Chromium. Same contract as @vscode/test-electron's runTests: the
// suite module (`extensionTestsPath`) exports `run(): Promise<void>`, and the extension is loaded from
// `extensionDevelopmentPath`. Install the host first: bash scripts/host/install.sh
//
// Not fooled by a dead extension host: the suite must write its result ({state, pid, passed, failed})
// to the file named by AGENT_TREES_TEST_RESULT; no file, state 'running' with its host dead, failures,
// zero tests or a timeout all fail the run.
//
// Phases: several runs against ONE user data folder, each with its own code-server, browser and result
// file, and AGENT_TREES_PHASE=1, 2, ... in the environment. A phase may SIGKILL its own extension host
// after writing its result (the suite's killHostAfterResult()); the phase then ends once the result
// file is written and that host is dead. Processes the extension started survive into the next phase
// (that is what a crash leaves behind); everything is killed after the last phase.
//
// Cleanup: every process started here carries AGENT_TREES_HOST_MARKER=<pid.start.random>; at the end
// (and on SIGINT/SIGTERM) code-server's process group is killed, then every process still carrying
// the marker. A later run also kills what a run that was SIGKILLed left behind.
//
// CLI: node scripts/host/runTests.js [options]
//   --extensionDevelopmentPath DIR   default: the repository root
//   --extensionTestsPath FILE        default: out/test/integration/index.js
//   --workspace DIR                  folder to open (default: an empty temp folder)
//   --user-data-dir DIR              default: a temp folder (kept only if given)
//   --phases N                       run N phases (AGENT_TREES_PHASE=1..N) on one user data folder
//   --env NAME=VALUE                 extra environment for code-server and the extension host (repeatable)
//   --timeout SECONDS                per phase (default 180)
//   --untrusted-workspace            workspace trust on and the folder not trusted (Restricted Mode); the suite
//                                    runs only its *.untrusted.test.js files (AGENT_TREES_WORKSPACE_TRUST=untrusted)
//   --keep                           keep the temp folder (it is also kept when the run fails)
//   --verbose                        also print the workbench's log (codeAutomationLog) as it comes
// Prints the suite's output, then `N passed, N failed` on a line of its own; exit code 0 only on success.
'use strict';

const fs = require('fs');
const path = require('path');
const util = require('util');
const lib = require('./hostLib');

const RESULT_FILE_VAR = 'AGENT_TREES_TEST_RESULT';
const PHASE_VAR = 'AGENT_TREES_PHASE';
const TRUST_VAR = 'AGENT_TREES_WORKSPACE_TRUST';

/** What cleanup() must undo when the run ends or is interrupted. */
const active = { server: undefined, browser: undefined, marker: undefined, dirs: undefined, interrupted: false };

function say(msg) {
  process.stdout.write(`[host] ${msg}\n`);
}

/**
 * Runs the suite in one or more phases. Resolves with { passed, failed, phases } when every phase
 * passed; rejects with an Error carrying `.summary` otherwise.
 *
 * @param {object} options
 * @param {string} options.extensionDevelopmentPath  folder of the extension under test
 * @param {string} options.extensionTestsPath        compiled suite module exporting run()
 * @param {string} [options.workspacePath]           folder to open in the workbench
 * @param {string} [options.userDataDir]             user data folder shared by all phases
 * @param {Record<string,string>} [options.extensionTestsEnv]  extra environment (every phase)
 * @param {number} [options.timeout]                 ms per phase (default 180000)
 * @param {boolean} [options.untrustedWorkspace]   every phase in Restricted Mode (a phase may set it for itself)
 * @param {Array<{extensionTestsPath?: string, env?: Record<string,string>, timeout?: number, untrustedWorkspace?: boolean}>} [options.phases]
 * @param {boolean} [options.keep]                   keep the temp folder
 * @param {boolean} [options.verbose]                print the workbench's log live
 */
async function runTests(options) {
  lib.checkInstalled();
  const extensionDevelopmentPath = path.resolve(options.extensionDevelopmentPath);
  const phases = options.phases && options.phases.length ? options.phases : [{}];
  await lib.sweepStale(say);

  const marker = lib.newMarker();
  const dirs = lib.makeRunDirs(marker);
  active.marker = marker;
  active.dirs = dirs;
  const userDataDir = options.userDataDir ? path.resolve(options.userDataDir) : path.join(dirs.root, 'user-data');
  const extensionsDir = path.join(dirs.root, 'extensions');
  const workspacePath = options.workspacePath ? path.resolve(options.workspacePath) : path.join(dirs.root, 'workspace');
  fs.mkdirSync(workspacePath, { recursive: true });
  fs.mkdirSync(path.join(dirs.root, 'results'), { recursive: true });
  say(`temp folder ${dirs.root}`);

  const summary = { passed: 0, failed: 0, phases: [] };
  let error;
  try {
    for (let i = 0; i < phases.length; i++) {
      const phase = phases[i];
      const untrusted = phase.untrustedWorkspace ?? !!options.untrustedWorkspace;
      const label = phases.length > 1 ? `phase ${i + 1}/${phases.length}` : 'run';
      const result = await runPhase({
        index: i,
        label,
        dirs,
        marker,
        userDataDir,
        extensionsDir,
        workspacePath,
        extensionDevelopmentPath,
        extensionTestsPath: path.resolve(phase.extensionTestsPath || options.extensionTestsPath),
        env: {
          ...(options.extensionTestsEnv || {}),
          ...(phases.length > 1 ? { [PHASE_VAR]: String(i + 1) } : {}),
          ...(untrusted ? { [TRUST_VAR]: 'untrusted' } : {}),
          ...(phase.env || {}),
        },
        untrustedWorkspace: untrusted,
        timeout: phase.timeout || options.timeout || 180000,
        verbose: !!options.verbose,
      });
      summary.phases.push(result);
      summary.passed += result.passed;
      summary.failed += result.failed;
      if (result.error) {
        error = new Error(`${label}: ${result.error}`);
        break;
      }
    }
    // Leak check: once the last host has shut down, no process of an owned agent tree may be left.
    if (!error) {
      const leaked = lib.findMarked(lib.MARKER_VAR, marker).filter((pid) => {
        const env = lib.readEnviron(pid);
        return env && env.has('AGENT_TREES_TREE_ID');
      });
      if (leaked.length) {
        summary.failed += 1;
        error = new Error(`leak check: ${leaked.length} process(es) of agent trees outlived the run: ${leaked.map((pid) => lib.describe(pid, 120)).join('; ')}`);
      }
    }
  } catch (e) {
    error = e;
  } finally {
    const leftovers = await cleanup();
    if (leftovers.length && !error) error = new Error(`processes survived the cleanup: ${leftovers.join('; ')}`);
  }
  if (error) {
    error.summary = summary;
    lib.keepRunDir(dirs.root);
    say(`temp folder kept: ${dirs.root}`);
    throw error;
  }
  if (!options.keep) fs.rmSync(dirs.root, { recursive: true, force: true });
  else {
    lib.keepRunDir(dirs.root);
    say(`temp folder kept: ${dirs.root}`);
  }
  return summary;
}

/** One code-server + browser session. Resolves with { passed, failed, error?, hostKilled }. */
async function runPhase(p) {
  const resultFile = path.join(p.dirs.root, 'results', `phase-${p.index + 1}.json`);
  const logFile = path.join(p.dirs.logs, `code-server-${p.index + 1}.log`);
  const browserLog = path.join(p.dirs.logs, `workbench-${p.index + 1}.log`);
  const suiteLog = `${resultFile}.log`;
  let suiteLogOffset = 0;
  /** Prints what the suite appended to its log since the last call. */
  const pumpSuiteLog = () => {
    let fd;
    try {
      fd = fs.openSync(suiteLog, 'r');
      const size = fs.fstatSync(fd).size;
      if (size > suiteLogOffset) {
        const buf = Buffer.alloc(size - suiteLogOffset);
        fs.readSync(fd, buf, 0, buf.length, suiteLogOffset);
        suiteLogOffset = size;
        process.stdout.write(buf);
      }
    } catch {
      // not there yet
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  };
  say(`${p.label}: starting code-server`);
  const started = Date.now();
  const server = await lib.startCodeServer({
    dirs: p.dirs,
    userDataDir: p.userDataDir,
    extensionsDir: p.extensionsDir,
    env: { ...p.env, [RESULT_FILE_VAR]: resultFile },
    marker: p.marker,
    logFile,
    workspaceTrust: p.untrustedWorkspace,
  });
  active.server = server;
  say(`${p.label}: code-server pid ${server.pid} on ${server.url}; opening the workbench`);

  let exitCode; // from codeAutomationExit
  let browserGone = false;
  const browser = await lib.openWorkbench({
    server,
    dirs: p.dirs,
    folder: p.workspacePath,
    marker: p.marker,
    browserMarker: `${p.marker}.browser${p.index + 1}`,
    profileName: `chromium-profile-${p.index + 1}`,
    extensionDevelopmentPath: p.extensionDevelopmentPath,
    extensionTestsPath: p.extensionTestsPath,
    workspaceTrust: p.untrustedWorkspace,
    // The workbench's log (which includes the extension host's console): to a file, and live with --verbose.
    // The suite's own output comes from its log file (pumpSuiteLog), which survives a killed host.
    onLog: (type, args) => {
      const text = Array.isArray(args) ? util.format(...args) : String(args);
      const line = `[${type}] ${text.endsWith('\n') ? text : text + '\n'}`;
      fs.appendFileSync(browserLog, line);
      if (p.verbose) process.stdout.write(`[workbench] ${line}`);
    },
    onExit: (code) => {
      if (exitCode === undefined) exitCode = code;
    },
    onPageError: (msg) => fs.appendFileSync(browserLog, `[page] ${msg}\n`),
  });
  active.browser = browser;
  browser.context.on('close', () => (browserGone = true));

  // Wait until the phase is over.
  const readJson = (file) => {
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      return undefined; // absent, or (briefly) being replaced
    }
  };
  const readResult = () => readJson(resultFile);
  let afterReload; // the after-reload tests' result, after a reload
  const deadline = started + p.timeout;
  let result;
  let error;
  let hostKilled = false;
  for (;;) {
    pumpSuiteLog();
    result = readResult();
    if (result && result.state === 'done' && !lib.isAlive(result.pid)) {
      // The suite wrote its result, then its extension host ended: killed on request, reloaded on request, or
      // (in a normal run) exited before codeAutomationExit reached us. Either way the result file stands.
      hostKilled = !!result.hostKillRequested;
      // After a reload, the host the reload started runs the after-reload tests in the same window.
      if (result.reloadRequested) {
        afterReload = undefined;
        while (Date.now() <= deadline && !active.interrupted && server.isRunning()) {
          pumpSuiteLog();
          afterReload = readJson(`${resultFile}.after-reload.json`);
          if (afterReload && afterReload.state === 'done') break;
          await lib.sleep(50);
        }
        if (!afterReload || afterReload.state !== 'done') error = 'the extension host started by the reload did not finish its after-reload tests';
      }
      break;
    }
    if (exitCode !== undefined) {
      // run() settled. Its result file was written before that; allow a moment for a slow file system.
      for (let i = 0; i < 20 && !(result && result.state === 'done'); i++) {
        await lib.sleep(50);
        result = readResult();
      }
      break;
    }
    if (result && result.state === 'running' && !lib.isAlive(result.pid)) {
      error = `the extension host (pid ${result.pid}) died while the suite was running`;
      break;
    }
    if (active.interrupted) {
      error = 'interrupted';
      break;
    }
    if (!server.isRunning()) {
      error = 'code-server exited during the run';
      break;
    }
    if (browserGone) {
      error = 'the browser closed during the run';
      break;
    }
    if (Date.now() > deadline) {
      error = `timed out after ${Math.round(p.timeout / 1000)} s` + (result ? ` (suite state: ${result.state})` : ' (the suite never started)');
      break;
    }
    await lib.sleep(50);
  }

  pumpSuiteLog();
  const tornDown = Date.now();
  if (hostKilled || error) {
    // SIGKILL the server first, so the workbench cannot start another extension host meanwhile.
    await server.stop(0);
    active.server = undefined;
    await browser.close();
    active.browser = undefined;
  } else {
    // Close the workbench first, so it does not try to reconnect, then stop the server (SIGTERM first,
    // so the extension host can deactivate).
    await browser.close();
    active.browser = undefined;
    await server.stop(3000);
    active.server = undefined;
  }
  // The extension host runs in a session of its own, outside code-server's process group: make sure
  // every code-server process of this phase (the host among them) is gone before the next phase starts;
  // two live hosts would share the user data folder. What the extension started is left alone: it is
  // what the next phase's activation must find (the final sweep kills it).
  const serverLeft = lib.findMarked(lib.MARKER_VAR, p.marker).filter((pid) => lib.describe(pid).includes(lib.CODE_SERVER_DIR));
  if (serverLeft.length) {
    say(`${p.label}: ${serverLeft.length} code-server process(es) outside its process group still ran; killing them`);
    for (const pid of serverLeft) process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 100 && serverLeft.some(lib.isAlive); i++) await lib.sleep(50);
  }
  const teardownMs = Date.now() - tornDown;

  let passed = 0;
  let failed = 0;
  if (!error) {
    if (!result) error = `no result file: the suite never ran or its extension host died (exit code ${exitCode})`;
    else if (result.state !== 'done') error = `the suite did not finish (state ${result.state}, exit code ${exitCode})`;
    else {
      passed = result.passed + (afterReload ? afterReload.passed : 0);
      failed = result.failed + (afterReload ? afterReload.failed : 0);
      if (failed > 0) error = `${failed} test(s) failed`;
      else if (exitCode !== undefined && exitCode !== 0) error = `the workbench reported exit code ${exitCode} although the result file says 0 failed`;
      else if (passed === 0) error = 'no test ran';
    }
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  say(`${p.label}: ${passed} passed, ${failed} failed in ${secs} s (teardown ${teardownMs} ms)${hostKilled ? ' (the suite killed its extension host after writing its result)' : ''}`);
  const failures = [...((result && result.failures) || []), ...((afterReload && afterReload.failures) || [])];
  if (failures.length) {
    say(`${p.label}: failures:`);
    for (const f of failures) process.stdout.write(`  - ${f.title}\n    ${String(f.error).split('\n').slice(0, 6).join('\n    ')}\n`);
  }
  if (error && !active.interrupted) {
    say(`${p.label}: FAILED: ${error}`);
    say(`---- tail of code-server's log (${logFile}) ----`);
    process.stdout.write(lib.tail(logFile, 60) + '\n');
    const workbench = lib.tail(browserLog, 30);
    if (workbench) {
      say(`---- tail of the workbench's log (${browserLog}) ----`);
      process.stdout.write(workbench + '\n');
    }
    say(`extension host logs: ${path.join(p.userDataDir, 'logs')}`);
  }
  return { passed, failed, error, hostKilled, seconds: Number(secs) };
}

/** Kills the server's group, closes the browser, then sweeps every marked process. Returns survivors. */
async function cleanup() {
  if (active.server) {
    await active.server.stop(1500).catch(() => {});
    active.server = undefined;
  }
  if (active.browser) {
    await active.browser.close().catch(() => {});
    active.browser = undefined;
  }
  if (!active.marker) return [];
  const { killed, survivors } = await lib.sweepMarked(lib.MARKER_VAR, active.marker);
  if (killed.length) say(`killed ${killed.length} leftover process(es) carrying the run's marker`);
  if (survivors.length) say(`could not kill: ${survivors.join('; ')}`);
  active.marker = undefined;
  return survivors;
}

// ------------------------------------------------------------------------------------------- CLI

function parseArgs(argv) {
  const opts = {
    extensionDevelopmentPath: lib.ROOT,
    extensionTestsPath: path.join(lib.ROOT, 'out', 'test', 'integration', 'index.js'),
    extensionTestsEnv: {},
  };
  let phases = 1;
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0 && arg !== '--env') {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const next = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    switch (arg) {
      case '--extensionDevelopmentPath': opts.extensionDevelopmentPath = next(); break;
      case '--extensionTestsPath': opts.extensionTestsPath = next(); break;
      case '--workspace': opts.workspacePath = next(); break;
      case '--user-data-dir': opts.userDataDir = next(); break;
      case '--phases': phases = Number(next()); break;
      case '--timeout': opts.timeout = Number(next()) * 1000; break;
      case '--keep': opts.keep = true; break;
      case '--verbose': opts.verbose = true; break;
      case '--untrusted-workspace': opts.untrustedWorkspace = true; break;
      case '--env': {
        const kv = next();
        const k = kv.indexOf('=');
        if (k <= 0) throw new Error(`--env needs NAME=VALUE, got ${kv}`);
        opts.extensionTestsEnv[kv.slice(0, k)] = kv.slice(k + 1);
        break;
      }
      case '-h':
      case '--help':
        process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n') + '\n');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${arg}`);
    }
  }
  if (!(phases >= 1 && Number.isInteger(phases))) throw new Error('--phases needs a positive integer');
  if (phases > 1) opts.phases = Array.from({ length: phases }, () => ({}));
  return opts;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`runTests: ${e.message}\n`);
    process.exit(2);
  }
  let interrupted = false;
  const onSignal = (sig) => {
    if (interrupted) return;
    interrupted = true;
    active.interrupted = true;
    say(`${sig}: stopping and cleaning up`);
    cleanup().finally(() => {
      if (active.dirs) fs.rmSync(active.dirs.root, { recursive: true, force: true });
      process.stdout.write('0 passed, 1 failed\n');
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGHUP', () => onSignal('SIGHUP'));

  try {
    const summary = await runTests(opts);
    process.stdout.write(`${summary.passed} passed, ${summary.failed} failed\n`);
    process.exit(0);
  } catch (e) {
    if (interrupted) return; // the signal handler prints and exits
    const s = e.summary || { passed: 0, failed: 0 };
    say(`FAILED: ${e.message}`);
    // A failure that no test counted (dead host, timeout, no result) still counts as one failure.
    process.stdout.write(`${s.passed} passed, ${Math.max(s.failed, 1)} failed\n`);
    process.exit(1);
  }
}

module.exports = { runTests };

if (require.main === module) main();
