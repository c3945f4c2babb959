// Starting code-server (a real VS Code server) for one host run: in its own process group on 127.0.0.1,
// with its config, user data, extensions and temp files inside the run's temp folder.
'use strict';

const fs = require('fs');
const net = require('net');
const path = require('path');
const { spawn } = require('child_process');
const processes = require('../../test/support/processes');
const { MARKER_VAR, cleanEnv } = require('./marker');

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
  // VS Code 1.10x+ opens its chat in the secondary side bar of every new window: keep the window as it was.
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
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
 * The environment of everything a host run starts: its temp folders, and the run's marker. HOME is the run's own:
 * VS Code resolves the environment through a login shell and each terminal starts an interactive one, so the
 * user's shell start-up files (a `pyenv init` that takes 30 s on a loaded machine, past VS Code's 10 s wait)
 * would otherwise decide whether the terminals' tests pass.
 */
function hostEnv(dirs, marker, extra = {}) {
  return cleanEnv({
    HOME: dirs.home,
    TMPDIR: dirs.tmp,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    ...extra,
    [MARKER_VAR]: marker,
  });
}

/**
 * Starts `host`'s code-server with its own Node, in its own process group on 127.0.0.1 (`port`, or a free
 * one), and waits for "HTTP server listening". Its output goes to `logFile` (and to `onOutput` if given).
 * `workspaceTrust`: workspace trust on and the opened folder left untrusted (Restricted Mode).
 * Returns { pid, port, url, exited (promise), logFile, isRunning(), stop(graceMs), stopOwn() }.
 */
async function startCodeServer({
  host,
  dirs,
  userDataDir,
  extensionsDir,
  env,
  marker,
  logFile,
  onOutput,
  extraArgs = [],
  readyTimeoutMs = 90000,
  port,
  workspaceTrust = false,
}) {
  port = port || (await freePort());
  const configFile = path.join(dirs.root, 'code-server.yaml');
  fs.writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  fs.mkdirSync(userDataDir, { recursive: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  writeDefaultUserSettings(userDataDir, workspaceTrust ? UNTRUSTED_WORKSPACE_SETTINGS : {});
  const args = [
    host.entry,
    '--config',
    configFile,
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    ...(workspaceTrust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    '--ignore-last-opened',
    ...extraArgs,
  ];
  const out = fs.openSync(logFile, 'a');
  const child = spawn(host.node, args, {
    cwd: dirs.root,
    env: hostEnv(dirs, marker, env),
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
    host,
    pid: child.pid,
    pgid: child.pid,
    port,
    url: `http://127.0.0.1:${port}/`,
    logFile,
    exited,
    isRunning: () => child.exitCode === null && child.signalCode === null,
    /** Kills the whole process group (SIGTERM, grace, SIGKILL). graceMs 0 = SIGKILL at once. */
    async stop(graceMs = 3000) {
      const left = await processes.killGroup(child.pid, { graceMs });
      try {
        fs.closeSync(out);
      } catch {}
      return left;
    },
    /**
     * SIGKILLs code-server's own processes (those of its process group whose command line names its install:
     * the server, its extension hosts, pty host, file watcher and agent host), not what the extension host started:
     * a host's children share its process group, and what a killed host left is for the next phase to look at (the
     * run's end kills it by its marker). Returns the pids still alive.
     */
    async stopOwn() {
      const own = () =>
        processes
          .groupMembers(child.pid)
          .filter((pid) => processes.commandLine(pid).includes(host.dir))
          .map((pid) => processes.readStat(pid))
          .filter(Boolean);
      const until = Date.now() + 10000;
      let left = own();
      while (left.length > 0 && Date.now() < until) {
        for (const s of left) processes.signalIfSame(s.pid, s.startTicks, 'SIGKILL');
        await new Promise((r) => setTimeout(r, 50));
        left = own();
      }
      try {
        fs.closeSync(out);
      } catch {}
      return left.map((s) => s.pid);
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

/**
 * Kills the processes of `host`'s code-server that carry `marker` and run outside its process group. Its
 * extension host, file watcher, pty host and agent host are in code-server's group and session (`ps -o
 * pid,pgid,sid` under a host test, VS Code 1.100.3 and 1.139.1), so the group kill ends them; what it misses are
 * the shells of the window's terminals, which the pty host starts in sessions of their own (their command line
 * names the install's shell-integration script). Returns how many there were.
 */
async function killStrayServerProcesses(host, marker) {
  const strays = processes.processesWithEnv(MARKER_VAR, marker).filter((s) => processes.commandLine(s.pid).includes(host.dir));
  for (const s of strays) processes.signalIfSame(s.pid, s.startTicks, 'SIGKILL');
  const until = Date.now() + 5000;
  while (Date.now() < until && strays.some((s) => processes.isAlive(s.pid, s.startTicks))) await new Promise((r) => setTimeout(r, 50));
  return strays.length;
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

module.exports = { freePort, writeDefaultUserSettings, hostEnv, startCodeServer, killStrayServerProcesses, tail };
