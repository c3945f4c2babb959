// Shared pieces of the real VS Code test host (code-server + headless Chromium): paths, /proc process
// inspection, the marker sweep, starting code-server and opening its workbench. Used by runTests.js,
// demo.js and screenshots.js. Plain Node (CommonJS), no build step.
'use strict';

const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { spawn } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const TOOLS = path.join(ROOT, '.tools');
/** Where code-server is installed; every one of its processes runs a file under it. */
const CODE_SERVER_DIR = path.join(TOOLS, 'code-server', 'node_modules', 'code-server') + path.sep;
const CODE_SERVER_ENTRY = path.join(CODE_SERVER_DIR, 'out', 'node', 'entry.js');
const CHROMIUM = process.env.AGENT_TREES_CHROMIUM || '/usr/bin/chromium';
/** Every process the host tools start carries this variable; its value names the run and its owner. */
const MARKER_VAR = 'AGENT_TREES_HOST_MARKER';
/** Chromium additionally carries this one, so one browser can be swept without touching the rest. */
const BROWSER_MARKER_VAR = 'AGENT_TREES_HOST_BROWSER';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Throws a readable error when the installer has not been run. */
function checkInstalled() {
  const missing = [];
  if (!fs.existsSync(CODE_SERVER_ENTRY)) missing.push(`code-server (${path.relative(ROOT, CODE_SERVER_ENTRY)})`);
  if (!fs.existsSync(CHROMIUM)) missing.push(`chromium (${CHROMIUM})`);
  try {
    require.resolve('playwright-core', { paths: [ROOT] });
  } catch {
    missing.push('playwright-core (npm ci)');
  }
  if (missing.length) {
    throw new Error(`the VS Code test host is not installed: missing ${missing.join(', ')}. Run: bash scripts/host/install.sh`);
  }
}

// ------------------------------------------------------------------------------------------- /proc

/**
 * Fields of /proc/<pid>/stat after the command name, or undefined if the process is gone.
 * Index 0 is field 3 (state), so field n of proc(5) is at index n - 3.
 */
function readStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = text.slice(close + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), startTicks: f[19] };
}

/** True while the process exists and is neither a zombie nor dead (kill(pid, 0) succeeds on zombies). */
function isAlive(pid) {
  const st = readStat(pid);
  return !!st && st.state !== 'Z' && st.state !== 'X' && st.state !== 'x';
}

/** Start time of a process in clock ticks since boot (a string), or undefined. */
function startTicks(pid) {
  const st = readStat(pid);
  return st && st.startTicks;
}

function allPids() {
  return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
}

/** The environment a process started with, as a Map, or undefined if unreadable. */
function readEnviron(pid) {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
    const env = new Map();
    for (const entry of raw.split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
    return env;
  } catch {
    return undefined;
  }
}

/** Live processes (not this one) whose environment holds `name=value` exactly. */
function findMarked(name, value) {
  const found = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const env = readEnviron(pid);
    if (env && env.get(name) === value && isAlive(pid)) found.push(pid);
  }
  return found;
}

/** Live members of a process group. */
function groupMembers(pgid) {
  return allPids().filter((pid) => {
    const st = readStat(pid);
    return st && st.pgrp === pgid && st.state !== 'Z' && st.state !== 'X';
  });
}

/** `<pid> <command line>` (the command line cut to `max` characters). */
function describe(pid, max = 400) {
  let cmd = '';
  try {
    cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {}
  return `${pid} ${cmd.slice(0, max)}`;
}

function signal(target, sig) {
  try {
    process.kill(target, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Kills a process group: SIGTERM (unless graceMs is 0), up to graceMs for it to empty, then SIGKILL
 * until it is empty. Returns the members that survived (normally none).
 */
async function killGroup(pgid, { graceMs = 3000, deadlineMs = 10000 } = {}) {
  if (!(pgid > 1) || pgid === process.pid) throw new Error(`refusing to kill process group ${pgid}`);
  const until = Date.now() + deadlineMs;
  if (graceMs > 0 && groupMembers(pgid).length) {
    signal(-pgid, 'SIGTERM');
    signal(-pgid, 'SIGCONT'); // a stopped member could not act on SIGTERM
    const graceEnd = Date.now() + graceMs;
    while (Date.now() < graceEnd && groupMembers(pgid).length) await sleep(50);
  }
  let left = groupMembers(pgid);
  while (left.length && Date.now() < until) {
    signal(-pgid, 'SIGKILL');
    await sleep(50);
    left = groupMembers(pgid);
  }
  return left;
}

/**
 * SIGKILLs every live process whose environment holds `name=value` exactly, repeating until none is
 * left (a process may fork while we sweep) or the deadline passes. Returns { killed, survivors }.
 */
async function sweepMarked(name, value, { deadlineMs = 10000 } = {}) {
  const killed = new Set();
  const until = Date.now() + deadlineMs;
  let left = findMarked(name, value);
  while (left.length && Date.now() < until) {
    for (const pid of left) {
      if (!killed.has(pid)) killed.add(pid);
      signal(pid, 'SIGKILL');
    }
    await sleep(50);
    left = findMarked(name, value);
  }
  return { killed: [...killed], survivors: left.map(describe) };
}

/**
 * A marker value for this process: `<pid>.<start ticks>.<random>`. A process carrying a marker whose
 * owner is gone (pid dead, or reused by a later process) was left behind by a tool that was killed.
 */
function newMarker() {
  return `${process.pid}.${startTicks(process.pid)}.${crypto.randomBytes(6).toString('hex')}`;
}

/** Whether the owner named in a marker value is gone (dead, or its pid reused by a later process). */
function markerOwnerGone(value) {
  const m = /^(\d+)\.(\d+)\.[0-9a-f]+$/.exec(value);
  if (!m) return false; // not ours: never guess
  const ownerPid = Number(m[1]);
  if (ownerPid === process.pid) return false;
  return !(isAlive(ownerPid) && startTicks(ownerPid) === m[2]);
}

/** Marks a run's temp folder as kept on purpose (for its logs), so sweepStale leaves it alone. */
function keepRunDir(root) {
  try {
    fs.writeFileSync(path.join(root, '.kept'), '');
  } catch {}
}

/**
 * Cleans up after earlier runs whose owner died without cleaning up (SIGKILL, a closed terminal):
 * kills the processes carrying their marker and removes their temp folders (unless kept on purpose).
 */
async function sweepStale(log = () => {}) {
  const stale = new Map(); // marker value -> pids
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const env = readEnviron(pid);
    const value = env && env.get(MARKER_VAR);
    if (!value || !isAlive(pid)) continue;
    if (!markerOwnerGone(value)) continue;
    if (!stale.has(value)) stale.set(value, []);
    stale.get(value).push(pid);
  }
  for (const [value, pids] of stale) {
    log(`removing ${pids.length} process(es) left behind by a dead host run (${MARKER_VAR}=${value})`);
    const { survivors } = await sweepMarked(MARKER_VAR, value);
    if (survivors.length) log(`could not kill: ${survivors.join('; ')}`);
  }
  const tmp = os.tmpdir();
  for (const name of fs.readdirSync(tmp)) {
    if (!RUN_DIR_PREFIXES.some((p) => name.startsWith(p))) continue;
    const root = path.join(tmp, name);
    let owner;
    try {
      if (fs.existsSync(path.join(root, '.kept'))) continue;
      owner = fs.readFileSync(path.join(root, '.owner'), 'utf8').trim();
    } catch {
      continue; // not one of ours, or not readable
    }
    if (!markerOwnerGone(owner)) continue;
    log(`removing ${root}, left behind by a dead host run`);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------- code-server

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Environment for processes we start: no variables of an enclosing VS Code, plus the given ones. */
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VSCODE_') || k === 'ELECTRON_RUN_AS_NODE' || k === MARKER_VAR || k === BROWSER_MARKER_VAR) continue;
    env[k] = v;
  }
  return Object.assign(env, extra);
}

const RUN_DIR_PREFIXES = ['agent-trees-host-', 'agent-trees-demo-'];

/**
 * Makes the temp folder layout of one run. Its `.owner` file holds the run's marker, so a later run
 * can remove the folder of a run that was killed before it could clean up (see sweepStale).
 */
function makeRunDirs(marker, prefix = RUN_DIR_PREFIXES[0]) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.writeFileSync(path.join(root, '.owner'), marker);
  const dirs = {
    root,
    tmp: path.join(root, 'tmp'),
    config: path.join(root, 'xdg-config'),
    data: path.join(root, 'xdg-data'),
    cache: path.join(root, 'xdg-cache'),
    home: path.join(root, 'home'),
    logs: path.join(root, 'logs'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  return dirs;
}

/** User settings for a fresh host: no welcome page, no network look-ups, no prompts that cover the UI. */
const DEFAULT_USER_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'git.openRepositoryInParentFolders': 'never',
  'git.autofetch': false,
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
};

/** With `workspaceTrust`: trust on, and no prompt, so the opened folder stays untrusted (Restricted Mode). */
const UNTRUSTED_WORKSPACE_SETTINGS = {
  'security.workspace.trust.enabled': true,
  'security.workspace.trust.startupPrompt': 'never',
};

/** Writes `<userDataDir>/User/settings.json` unless it exists (a later phase keeps what the first wrote). */
function writeDefaultUserSettings(userDataDir, extra = {}) {
  const file = path.join(userDataDir, 'User', 'settings.json');
  if (fs.existsSync(file)) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ ...DEFAULT_USER_SETTINGS, ...extra }, null, 2) + '\n');
}

/**
 * Starts code-server in its own process group on 127.0.0.1 (`port`, or a free one) and waits for
 * "HTTP server listening". Its output goes to `logFile` (and to `onOutput` if given).
 * Returns { pid, port, url, exited (promise), logFile, stop(graceMs) }.
 */
async function startCodeServer({ dirs, userDataDir, extensionsDir, env, marker, logFile, onOutput, extraArgs = [], readyTimeoutMs = 60000, port, workspaceTrust = false }) {
  port = port || (await freePort());
  const configFile = path.join(dirs.root, 'code-server.yaml');
  fs.writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  fs.mkdirSync(userDataDir, { recursive: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  writeDefaultUserSettings(userDataDir, workspaceTrust ? UNTRUSTED_WORKSPACE_SETTINGS : {});
  const args = [
    CODE_SERVER_ENTRY,
    '--config', configFile,
    '--auth', 'none',
    '--bind-addr', `127.0.0.1:${port}`,
    '--user-data-dir', userDataDir,
    '--extensions-dir', extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    ...(workspaceTrust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    '--ignore-last-opened',
    ...extraArgs,
  ];
  const childEnv = cleanEnv({
    TMPDIR: dirs.tmp,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    ...env,
    [MARKER_VAR]: marker,
  });
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, {
    cwd: dirs.root,
    env: childEnv,
    detached: true, // own process group: the whole server dies with one kill(-pgid)
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, signal: sig })));
  let ready = false;
  let buffered = '';
  const readyPromise = new Promise((resolve, reject) => {
    const onData = (chunk) => {
      fs.writeSync(out, chunk);
      if (onOutput) onOutput(chunk.toString());
      if (!ready) {
        buffered += chunk.toString();
        if (/HTTP server listening on/.test(buffered)) {
          ready = true;
          buffered = '';
          resolve();
        } else if (buffered.length > 100000) buffered = buffered.slice(-10000);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    exited.then(({ code, signal: sig }) => {
      if (!ready) reject(new Error(`code-server exited before it was ready (code ${code}, signal ${sig})`));
    });
    setTimeout(() => !ready && reject(new Error(`code-server was not ready after ${readyTimeoutMs} ms`)), readyTimeoutMs).unref();
  });
  const server = {
    pid: child.pid,
    pgid: child.pid,
    port,
    url: `http://127.0.0.1:${port}/`,
    logFile,
    exited,
    isRunning: () => child.exitCode === null && child.signalCode === null,
    /** Kills the whole process group (SIGTERM, grace, SIGKILL). graceMs 0 = SIGKILL at once. */
    async stop(graceMs = 3000) {
      const left = await killGroup(child.pid, { graceMs });
      try { fs.closeSync(out); } catch {}
      return left;
    },
  };
  try {
    await readyPromise;
  } catch (e) {
    await server.stop(0);
    throw e;
  }
  return server;
}

/** Last `lines` lines of a text file ('' if unreadable). */
function tail(file, lines = 60) {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// ------------------------------------------------------------------------------------------- browser

const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

/**
 * Init script run in the page before the workbench reads its configuration: rewrites the JSON in the
 * data-settings attribute of <meta id="vscode-workbench-web-configuration"> (code-server's command
 * line rejects --extensionDevelopmentPath / --extensionTestsPath; these are the fields @vscode/test-web sets).
 */
function patchWorkbenchConfig(cfg) {
  const patch = () => {
    const el = document.getElementById('vscode-workbench-web-configuration');
    if (!el || el.dataset.agentTreesPatched) return !!el;
    const raw = el.getAttribute('data-settings');
    if (!raw) return false;
    const settings = JSON.parse(raw);
    const authority = location.host;
    settings.developmentOptions = settings.developmentOptions || {};
    if (cfg.extensionDevelopmentPath) {
      settings.developmentOptions.extensions = [{ scheme: 'vscode-remote', authority, path: cfg.extensionDevelopmentPath }];
    }
    if (cfg.extensionTestsPath) {
      settings.developmentOptions.extensionTestsPath = { scheme: 'vscode-remote', authority, path: cfg.extensionTestsPath };
    }
    settings.enableWorkspaceTrust = !!cfg.workspaceTrust;
    el.setAttribute('data-settings', JSON.stringify(settings));
    el.dataset.agentTreesPatched = '1';
    return true;
  };
  if (patch()) return;
  const observer = new MutationObserver(() => {
    if (patch()) observer.disconnect();
  });
  observer.observe(document, { childList: true, subtree: true });
}

/**
 * Launches headless Chromium (its own profile and HOME inside the run's temp folder, carrying the
 * marker variables) and opens the workbench of `server` on `folder`.
 * Returns { context, page, browserMarker, close() }.
 */
async function openWorkbench({ server, dirs, folder, marker, browserMarker, extensionDevelopmentPath, extensionTestsPath, workspaceTrust = false,
  onLog, onExit, onPageError, viewport = { width: 1400, height: 900 }, profileName = 'chromium-profile' }) {
  const { chromium } = require(require.resolve('playwright-core', { paths: [ROOT] }));
  const profile = path.join(dirs.root, profileName);
  fs.mkdirSync(profile, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    env: cleanEnv({
      HOME: dirs.home,
      XDG_CONFIG_HOME: dirs.config,
      XDG_DATA_HOME: dirs.data,
      XDG_CACHE_HOME: dirs.cache,
      TMPDIR: dirs.tmp,
      [MARKER_VAR]: marker,
      [BROWSER_MARKER_VAR]: browserMarker,
    }),
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  if (onLog) await context.exposeFunction('codeAutomationLog', (type, args) => onLog(type, args));
  if (onExit) await context.exposeFunction('codeAutomationExit', (code) => onExit(code));
  await context.addInitScript(patchWorkbenchConfig, { extensionDevelopmentPath, extensionTestsPath, workspaceTrust });
  const page = context.pages()[0] || (await context.newPage());
  if (onPageError) {
    page.on('pageerror', (e) => onPageError(`pageerror: ${e.message}`));
  }
  const url = folder ? `${server.url}?folder=${encodeURIComponent(folder)}` : server.url;
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
  return {
    context,
    page,
    /**
     * Closes the browser, then kills what is left of it: the process groups led by a process carrying
     * this browser's marker (Chromium's helpers rewrite their environment block for their process
     * titles, so only the main processes show the marker; they share its group), then marked processes.
     */
    async close() {
      const groups = findMarked(BROWSER_MARKER_VAR, browserMarker).filter((pid) => readStat(pid)?.pgrp === pid);
      await Promise.race([context.close().catch(() => {}), sleep(10000)]);
      for (const pgid of groups) await killGroup(pgid, { graceMs: 0 });
      return sweepMarked(BROWSER_MARKER_VAR, browserMarker);
    },
  };
}

module.exports = {
  ROOT, TOOLS, CODE_SERVER_DIR, CODE_SERVER_ENTRY, CHROMIUM, MARKER_VAR, BROWSER_MARKER_VAR,
  sleep, checkInstalled, readStat, isAlive, startTicks, readEnviron, findMarked, groupMembers, describe,
  killGroup, sweepMarked, sweepStale, keepRunDir, newMarker, freePort, cleanEnv, makeRunDirs, writeDefaultUserSettings, startCodeServer, tail,
  openWorkbench,
};
