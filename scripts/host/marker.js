// What ties a host run's processes and files to the run: the marker variable every process it starts
// carries (and the clean environment they start with), the run's temp folder, and the cleanup of runs that
// died before they could clean up after themselves.
'use strict';

const { counted } = require('../counted');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const processes = require('../../test/support/processes');

/** Every process the host tools start carries this variable; its value names the run and its owner. */
const MARKER_VAR = 'AGENT_TREES_HOST_MARKER';
/** Chromium additionally carries this one, so one browser can be swept without touching the rest. */
const BROWSER_MARKER_VAR = 'AGENT_TREES_HOST_BROWSER';
const RUN_DIR_PREFIXES = ['agent-trees-host-', 'agent-trees-demo-'];
/** Every owner's watchdog carries this (src/proc/watchdog.ts). */
const WATCHDOG_VAR = 'AGENT_TREES_WATCHDOG';
/** How long the watchdogs of a run's dead owners get to end those owners' trees. */
const WATCHDOG_WAIT_MS = 10000;

/**
 * A marker value for this process: `<pid>.<start ticks>.<random>`. A process carrying a marker whose
 * owner is gone (pid dead, or reused by a later process) was left behind by a tool that was killed.
 */
function newMarker() {
  return `${process.pid}.${processes.readStat(process.pid).startTicks}.${crypto.randomBytes(6).toString('hex')}`;
}

/** Whether the owner named in a marker value is gone (dead, or its pid reused by a later process). */
function markerOwnerGone(value) {
  const m = /^(\d+)\.(\d+)\.[0-9a-f]+$/.exec(value);
  if (!m) return false; // not ours: never guess
  const ownerPid = Number(m[1]);
  if (ownerPid === process.pid) return false;
  return !processes.isAlive(ownerPid, Number(m[2]));
}

/** Environment for processes we start: no variables of an enclosing VS Code or host run, plus the given ones. */
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VSCODE_') || k === 'ELECTRON_RUN_AS_NODE' || k === MARKER_VAR || k === BROWSER_MARKER_VAR) continue;
    env[k] = v;
  }
  return Object.assign(env, extra);
}

/**
 * Ends what a run started, once its code-server is down: first the watchdogs of its dead owners (extension hosts,
 * `agent-trees run`) get up to 10 s to end their owners' trees, the product's own way, which removes the trees'
 * cgroups too; then every process still carrying `marker` is killed, and the agent trees' cgroups they ran in are
 * removed (see processes.killWithEnv). Resolves as killWithEnv does.
 */
async function endMarked(marker) {
  const watchdogs = () => processes.processesWithEnv(MARKER_VAR, marker).filter((s) => processes.envOf(s.pid, WATCHDOG_VAR) !== undefined);
  for (const until = Date.now() + WATCHDOG_WAIT_MS; watchdogs().length && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
  return processes.killWithEnv(MARKER_VAR, marker);
}

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
  const stale = new Set();
  for (const pid of processes.allPids()) {
    if (pid === process.pid) continue;
    const value = processes.envOf(pid, MARKER_VAR);
    if (value && !stale.has(value) && processes.isAlive(pid) && markerOwnerGone(value)) stale.add(value);
  }
  for (const value of stale) {
    const { killed, survivors } = await processes.killWithEnv(MARKER_VAR, value);
    log(`removed ${counted(killed.length, 'process', 'processes')} left behind by a dead host run (${MARKER_VAR}=${value})`);
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

module.exports = {
  MARKER_VAR,
  BROWSER_MARKER_VAR,
  WATCHDOG_VAR,
  newMarker,
  markerOwnerGone,
  cleanEnv,
  endMarked,
  makeRunDirs,
  keepRunDir,
  sweepStale,
};
