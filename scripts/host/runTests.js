#!/usr/bin/env node
// Runs an extension test suite inside real VS Code extension hosts: code-server (scripts/host/hosts.json:
// VS Code 1.100.3 on Node 20, the oldest supported, and 1.139.1 on Node 24, the newest) with its workbench
// opened in headless Chromium. Same contract as @vscode/test-electron's runTests: the suite module
// (`extensionTestsPath`) exports `run(): Promise<void>`, and the extension is loaded from
// `extensionDevelopmentPath`. Install the hosts first: bash scripts/host/install.sh
//
// Not fooled by a dead extension host: the suite must write its result ({state, pid, passed, failed})
// to the file named by AGENT_TREES_TEST_RESULT; no file, state 'running' with its host dead, failures,
// zero tests or a timeout all fail the run.
//
// Phases: several runs against ONE user data folder, each with its own code-server, browser and result
// file, and AGENT_TREES_PHASE=1, 2, ... in the environment. A phase may SIGKILL its own extension host
// after writing its result (the suite's killHostAfterResult()); the phase then ends once the result
// file is written and that host is dead. Processes the extension started survive into the next phase
// (that is what a crash leaves behind); everything is killed after the last phase. A phase may go on in the
// window's next extension host (the suite's continueInNextHost(): result state 'continuing'); its timeout
// restarts with each host, and on `<result file>.crash-renderer` the runner crashes the workbench's renderer
// and opens the folder anew (see phase.js).
//
// Cleanup: every process started here carries AGENT_TREES_HOST_MARKER=<pid.start.random>; at the end
// (and on SIGINT/SIGTERM) code-server's process group is killed, then every process still carrying
// the marker. A later run also kills what a run that was SIGKILLed left behind.
//
// CLI: node scripts/host/runTests.js [options]
//   --host NAME|all                  the host(s) to run in, in turn (repeatable; default all): oldest, newest
//   --extensionDevelopmentPath DIR   default: the repository root
//   --extension DIR                  another extension folder loaded beside it (repeatable; a stand-in, say)
//   --extensionTestsPath FILE        default: out/test/integration/index.js
//   --workspace DIR                  folder to open (default: an empty temp folder)
//   --user-data-dir DIR              default: a temp folder (kept only if given; one host only)
//   --phases N                       run N phases (AGENT_TREES_PHASE=1..N) on one user data folder
//   --env NAME=VALUE                 extra environment for code-server and the extension host (repeatable)
//   --timeout SECONDS                per phase (default 600: a hang guard, not a budget)
//   --untrusted-workspace            workspace trust on and the folder not trusted (Restricted Mode); the suite
//                                    runs only its *.untrusted.test.js files (AGENT_TREES_WORKSPACE_TRUST=untrusted)
//   --keep                           keep the temp folder (it is also kept when the run fails)
//   --verbose                        also print the workbench's log (codeAutomationLog) as it comes
// Prints the suite's output, a line per host (`[host] VS Code 1.139.1 (...): N passed, N failed`), then
// `N passed, N failed` over every host on a line of its own; exit code 0 only on success.
'use strict';

const { counted } = require('../counted');
const fs = require('fs');
const path = require('path');
const processes = require('../../test/support/processes');
const hosts = require('./hosts');
const marker = require('./marker');
const { runPhase } = require('./phase');

const PHASE_VAR = 'AGENT_TREES_PHASE';
/** Tells the suite which VS Code it runs in, as the runner installed it (the suite checks vscode.version against it). */
const HOST_VSCODE_VAR = 'AGENT_TREES_HOST_VSCODE';
const TRUST_VAR = 'AGENT_TREES_WORKSPACE_TRUST';

/** What cleanup() must undo when the run ends or is interrupted. */
const active = { server: undefined, browser: undefined, marker: undefined, dirs: undefined, interrupted: false };

function say(msg) {
  process.stdout.write(`[host] ${msg}\n`);
}

/**
 * Runs the suite in one host, in one or more phases. Resolves with { passed, failed, pending, harnessPassed, phases }
 * when every phase passed; rejects with an Error carrying `.summary` otherwise.
 *
 * @param {object} options
 * @param {import('./hosts').Host} [options.host]    the host (default: the newest)
 * @param {string|string[]} options.extensionDevelopmentPath  folder of the extension under test; as a list (as in
 *   @vscode/test-electron), the others are loaded beside it as development extensions too
 * @param {string} options.extensionTestsPath        compiled suite module exporting run()
 * @param {string} [options.workspacePath]           folder to open in the workbench
 * @param {string} [options.userDataDir]             user data folder shared by all phases
 * @param {Record<string,string>} [options.extensionTestsEnv]  extra environment (every phase)
 * @param {number} [options.timeout]                 ms per phase (default 600000)
 * @param {boolean} [options.untrustedWorkspace]   every phase in Restricted Mode (a phase may set it for itself)
 * @param {Array<{extensionTestsPath?: string, env?: Record<string,string>, timeout?: number, untrustedWorkspace?: boolean}>} [options.phases]
 * @param {boolean} [options.keep]                   keep the temp folder
 * @param {boolean} [options.verbose]                print the workbench's log live
 */
async function runTests(options) {
  const host = options.host || hosts.newestHost();
  hosts.checkInstalled(host);
  const extensionDevelopmentPath = [options.extensionDevelopmentPath].flat().map((p) => path.resolve(p));
  const phases = options.phases && options.phases.length ? options.phases : [{}];
  await marker.sweepStale(say);

  const runMarker = marker.newMarker();
  const dirs = marker.makeRunDirs(runMarker);
  active.marker = runMarker;
  active.dirs = dirs;
  const userDataDir = options.userDataDir ? path.resolve(options.userDataDir) : path.join(dirs.root, 'user-data');
  const extensionsDir = path.join(dirs.root, 'extensions');
  const workspacePath = options.workspacePath ? path.resolve(options.workspacePath) : path.join(dirs.root, 'workspace');
  fs.mkdirSync(workspacePath, { recursive: true });
  fs.mkdirSync(path.join(dirs.root, 'results'), { recursive: true });
  say(`${host.label}: temp folder ${dirs.root}`);

  const summary = { host, passed: 0, failed: 0, pending: 0, harnessPassed: 0, phases: [] };
  let error;
  try {
    for (let i = 0; i < phases.length; i++) {
      const phase = phases[i];
      const untrusted = phase.untrustedWorkspace ?? !!options.untrustedWorkspace;
      const label = `${host.vscode} ` + (phases.length > 1 ? `phase ${i + 1}/${phases.length}` : 'run');
      const result = await runPhase({
        index: i,
        label,
        host,
        dirs,
        marker: runMarker,
        userDataDir,
        extensionsDir,
        workspacePath,
        extensionDevelopmentPath,
        extensionTestsPath: path.resolve(phase.extensionTestsPath || options.extensionTestsPath),
        env: {
          ...(options.extensionTestsEnv || {}),
          [HOST_VSCODE_VAR]: host.vscode,
          ...(phases.length > 1 ? { [PHASE_VAR]: String(i + 1) } : {}),
          ...(untrusted ? { [TRUST_VAR]: 'untrusted' } : {}),
          ...(phase.env || {}),
        },
        untrustedWorkspace: untrusted,
        timeout: phase.timeout || options.timeout || 600000,
        verbose: !!options.verbose,
        active,
        say,
      });
      summary.phases.push(result);
      summary.passed += result.passed;
      summary.failed += result.failed + result.harnessFailed;
      summary.harnessPassed += result.harnessPassed;
      summary.pending += result.pending;
      if (result.error) {
        error = new Error(`${label}: ${result.error}`);
        break;
      }
    }
    if (!error) error = await leakCheck(runMarker, summary);
  } catch (e) {
    error = e;
  } finally {
    const leftovers = await cleanup();
    if (leftovers.length && !error) error = new Error(`processes survived the cleanup: ${leftovers.join('; ')}`);
  }
  if (error) {
    error.summary = summary;
    marker.keepRunDir(dirs.root);
    say(`temp folder kept: ${dirs.root}`);
    throw error;
  }
  if (!options.keep) fs.rmSync(dirs.root, { recursive: true, force: true });
  else {
    marker.keepRunDir(dirs.root);
    say(`temp folder kept: ${dirs.root}`);
  }
  return summary;
}

/**
 * Once the last host has shut down, no process of an owned agent tree may be left, nor an owner's watchdog (it
 * sweeps its dead owner's record, then exits: it gets a few seconds to). Counts a leak as a failure.
 */
async function leakCheck(runMarker, summary) {
  const marked = (variable) =>
    processes.processesWithEnv(marker.MARKER_VAR, runMarker).filter((s) => processes.envOf(s.pid, variable) !== undefined);
  for (let i = 0; i < 200 && marked(marker.WATCHDOG_VAR).length; i++) await new Promise((r) => setTimeout(r, 50));
  const leaked = [...marked('AGENT_TREES_TREE_ID'), ...marked(marker.WATCHDOG_VAR)];
  if (!leaked.length) return undefined;
  summary.failed += 1;
  return new Error(
    `leak check: ${counted(leaked.length, 'process', 'processes')} of agent trees or their watchdogs outlived the run: ${leaked.map((s) => processes.describe(s.pid, 120)).join('; ')}`,
  );
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
  const { killed, survivors, cgroupsRemoved } = await marker.endMarked(active.marker);
  if (killed.length) say(`killed ${counted(killed.length, 'leftover process', 'leftover processes')} carrying the run's marker`);
  if (cgroupsRemoved.length) say(`removed the cgroups of ${counted(cgroupsRemoved.length, 'agent tree')} they ran in`);
  if (survivors.length) say(`could not kill: ${survivors.join('; ')}`);
  active.marker = undefined;
  return survivors;
}

// ------------------------------------------------------------------------------------------- CLI

function parseArgs(argv) {
  const opts = {
    extensionDevelopmentPath: hosts.ROOT,
    extensionTestsPath: path.join(hosts.ROOT, 'out', 'test', 'integration', 'index.js'),
    extensionTestsEnv: {},
  };
  const hostNames = [];
  const extraExtensions = [];
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
      case '--host':
        hostNames.push(next());
        break;
      case '--extensionDevelopmentPath':
        opts.extensionDevelopmentPath = next();
        break;
      case '--extension':
        extraExtensions.push(next());
        break;
      case '--extensionTestsPath':
        opts.extensionTestsPath = next();
        break;
      case '--workspace':
        opts.workspacePath = next();
        break;
      case '--user-data-dir':
        opts.userDataDir = next();
        break;
      case '--phases':
        phases = Number(next());
        break;
      case '--timeout':
        opts.timeout = Number(next()) * 1000;
        break;
      case '--keep':
        opts.keep = true;
        break;
      case '--verbose':
        opts.verbose = true;
        break;
      case '--untrusted-workspace':
        opts.untrustedWorkspace = true;
        break;
      case '--env': {
        const kv = next();
        const k = kv.indexOf('=');
        if (k <= 0) throw new Error(`--env needs NAME=VALUE, got ${kv}`);
        opts.extensionTestsEnv[kv.slice(0, k)] = kv.slice(k + 1);
        break;
      }
      case '-h':
      case '--help':
        process.stdout.write(
          fs
            .readFileSync(__filename, 'utf8')
            .split('\n')
            .filter((l) => l.startsWith('//'))
            .map((l) => l.slice(3))
            .join('\n') + '\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${arg}`);
    }
  }
  if (!(phases >= 1 && Number.isInteger(phases))) throw new Error('--phases needs a positive integer');
  if (phases > 1) opts.phases = Array.from({ length: phases }, () => ({}));
  if (extraExtensions.length) opts.extensionDevelopmentPath = [opts.extensionDevelopmentPath, ...extraExtensions];
  opts.hosts = hosts.selectHosts(hostNames);
  if (opts.userDataDir && opts.hosts.length > 1) throw new Error('--user-data-dir needs a single --host');
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

  // Every host in turn, whatever the one before did; the totals cover them all.
  const lines = [];
  let passed = 0;
  let failed = 0;
  for (const host of opts.hosts) {
    const started = Date.now();
    let s;
    try {
      s = await runTests({ ...opts, host });
    } catch (e) {
      if (interrupted) return; // the signal handler prints and exits
      say(`${host.label}: FAILED: ${e.message}`);
      // A failure that no test counted (dead host, timeout, no result) still counts as one failure.
      s = { ...(e.summary || { passed: 0, failed: 0, harnessPassed: 0 }) };
      s.failed = Math.max(s.failed, 1);
    }
    passed += s.passed;
    failed += s.failed;
    const pending = s.pending ? `, ${s.pending} pending (not for this VS Code)` : '';
    lines.push(
      `${host.label}: ${s.passed} passed, ${s.failed} failed${pending} (harness self-tests: ${s.harnessPassed || 0} passed, not counted) in ${Math.round((Date.now() - started) / 1000)} s`,
    );
  }
  for (const line of lines) say(line);
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

module.exports = { runTests };

if (require.main === module) main();
