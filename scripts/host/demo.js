#!/usr/bin/env node
// The demo anyone can open: builds and packages the extension (npm run package), installs the .vsix
// into a fresh code-server of the newest host (VS Code 1.139.1 in the browser, as users run it; see
// scripts/host/hosts.json) bound to 127.0.0.1, opens the demo
// workspace (demo/workspace, whose settings define `demo-agent`, a fake agent that leaves helpers
// behind, and `demo-mcp`, a fake MCP server), prints the URL and runs until Ctrl-C. Nothing it started
// is left running afterwards: the server's process group is killed, then every process carrying the
// run's marker variable (which includes the agents the extension started and what they left behind).
//
// Usage: npm run demo  [-- --port 8080] [-- --vsix agent-trees.vsix (skip packaging)]
// The host must be installed: bash scripts/host/install.sh --host newest (npm run demo does it).
'use strict';

const { counted } = require('../counted');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const processes = require('../../test/support/processes');
const hosts = require('./hosts');
const marker = require('./marker');
const { hostEnv, startCodeServer } = require('./codeServer');

const say = (msg) => process.stdout.write(`[demo] ${msg}\n`);

/** Builds the production bundle and packages it (`npm run package`); returns the .vsix path. */
function packageExtension() {
  say('packaging the extension (npm run package)');
  const r = spawnSync('npm', ['run', '--silent', 'package'], { cwd: hosts.ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const vsix = path.join(hosts.ROOT, 'agent-trees.vsix');
  if (r.status !== 0 || !fs.existsSync(vsix)) throw new Error(`npm run package failed (exit code ${r.status})`);
  return vsix;
}

/** The folder to open: demo/workspace, whose settings find demo/agent.sh through ${workspaceFolder}. */
const DEMO_WORKSPACE = path.join(hosts.ROOT, 'demo', 'workspace');

/** Installs a .vsix into `extensionsDir` with the host's code-server installer (offline). */
async function installVsix({ host, dirs, userDataDir, extensionsDir, vsix, marker: runMarker, logFile }) {
  fs.mkdirSync(userDataDir, { recursive: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  const out = fs.openSync(logFile, 'a');
  const child = spawn(
    host.node,
    [host.entry, '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, '--install-extension', vsix, '--force'],
    {
      cwd: dirs.root,
      detached: true,
      stdio: ['ignore', out, out],
      env: hostEnv(dirs, runMarker),
    },
  );
  const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
  fs.closeSync(out);
  await processes.killGroup(child.pid, { graceMs: 0 });
  if (code !== 0) throw new Error(`installing ${vsix} failed (exit code ${code}); see ${logFile}`);
  const installed = fs.readdirSync(extensionsDir).filter((n) => n.startsWith('agent-trees.agent-trees-'));
  if (!installed.length) throw new Error(`${vsix} did not land in ${extensionsDir}`);
  return installed[0];
}

/**
 * Prepares a demo host (`host`, default the newest): temp folders, packaged and installed extension, workspace.
 * Shared with screenshots.js and agentClis.js. Returns { host, dirs, marker, userDataDir, extensionsDir, workspace }.
 */
async function prepareDemo({ vsix, host = hosts.newestHost() } = {}) {
  hosts.checkInstalled(host);
  await marker.sweepStale(say);
  const vsixPath = vsix ? path.resolve(vsix) : packageExtension();
  const runMarker = marker.newMarker();
  const dirs = marker.makeRunDirs(runMarker, 'agent-trees-demo-');
  const userDataDir = path.join(dirs.root, 'user-data');
  const extensionsDir = path.join(dirs.root, 'extensions');
  const installed = await installVsix({
    host,
    dirs,
    userDataDir,
    extensionsDir,
    vsix: vsixPath,
    marker: runMarker,
    logFile: path.join(dirs.logs, 'install.log'),
  });
  say(`installed ${installed} from ${path.relative(hosts.ROOT, vsixPath) || vsixPath} into ${host.label}`);
  return { host, dirs, marker: runMarker, userDataDir, extensionsDir, workspace: DEMO_WORKSPACE };
}

/** Starts the demo host's code-server (its log: `<logs>/code-server.log`) on `port`, or a free one. */
function startDemoServer(demo, { port } = {}) {
  return startCodeServer({
    host: demo.host,
    dirs: demo.dirs,
    userDataDir: demo.userDataDir,
    extensionsDir: demo.extensionsDir,
    // The user's own HOME: their agents' sign-ins and their shell, as in their own VS Code.
    env: { HOME: os.homedir() },
    marker: demo.marker,
    logFile: path.join(demo.dirs.logs, 'code-server.log'),
    port,
  });
}

/**
 * Stops the server, gives the extension's watchdogs their time to end the agents' trees, kills whatever is left of
 * the run (removing the trees' cgroups), removes the temp folder. Returns the survivors.
 */
async function teardown(demo, server) {
  if (server) await server.stop(3000).catch(() => {});
  const { killed, survivors, cgroupsRemoved } = await marker.endMarked(demo.marker);
  if (killed.length) say(`killed ${counted(killed.length, 'process', 'processes')} started under the demo`);
  if (cgroupsRemoved.length) say(`removed the cgroups of ${counted(cgroupsRemoved.length, 'agent tree')} they ran in`);
  if (survivors.length) say(`could not kill: ${survivors.join('; ')}`);
  fs.rmSync(demo.dirs.root, { recursive: true, force: true });
  return survivors;
}

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    if (flag === '--port') opts.port = Number(value());
    else if (flag === '--vsix') opts.vsix = value();
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let demo;
  let server;
  let stopping = false;
  const stop = async (why, code) => {
    if (stopping) return;
    stopping = true;
    say(`${why}: stopping`);
    const survivors = demo ? await teardown(demo, server) : [];
    say(survivors.length ? 'stopped, but some processes survived (listed above)' : 'stopped; nothing left running');
    process.exit(survivors.length ? 1 : code);
  };
  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGHUP', () => stop('SIGHUP', 0));

  try {
    demo = await prepareDemo(opts);
    if (stopping) return;
    server = await startDemoServer(demo, { port: opts.port });
    if (stopping) return;
    server.exited.then(({ code, signal }) => stop(`code-server exited (code ${code}, signal ${signal})`, 1));
    const url = `${server.url}?folder=${encodeURIComponent(demo.workspace)}`;
    say(`code-server ${server.pid} is serving ${demo.host.label} with Agent Trees installed (log: ${server.logFile})`);
    say(`workspace: ${demo.workspace} (demo-agent: demo/agent.sh; demo-mcp: demo/fake-mcp-server.js)`);
    process.stdout.write(`\n  Open ${url}\n\n  Press Ctrl-C to stop; everything the demo started stops with it.\n\n`);
  } catch (e) {
    say(`failed: ${e.message}`);
    await stop('error', 1);
  }
}

module.exports = { prepareDemo, startDemoServer, teardown, packageExtension, DEMO_WORKSPACE };

if (require.main === module) main();
