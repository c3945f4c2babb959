// The real VS Code hosts (scripts/host/hosts.json, oldest first): where each is installed, which Node runs
// it, and whether it is there. install.sh installs them; runTests.js runs the suite in each; the demo and
// the screenshots use the newest, as users do.
'use strict';

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
/** Real path: .tools may be a symlink, and the processes code-server starts name the real one. */
const TOOLS = (() => {
  const tools = path.join(ROOT, '.tools');
  try {
    return fs.realpathSync(tools);
  } catch {
    return tools;
  }
})();
const CHROMIUM = process.env.AGENT_TREES_CHROMIUM || '/usr/bin/chromium';

/**
 * @typedef {object} Host
 * @property {string} name        'oldest', 'newest'
 * @property {string} vscode      VS Code version, e.g. '1.100.3'
 * @property {string} codeServer  code-server version, e.g. '4.100.3'
 * @property {string} dir         where code-server is installed: every one of its processes runs a file under it
 * @property {string} entry       code-server's entry script
 * @property {string} node        the Node binary that runs it
 * @property {string} label       'VS Code 1.100.3 (code-server 4.100.3, Node 20)'
 */

/** @returns {Host[]} every host, oldest first */
function allHosts() {
  const { hosts } = JSON.parse(fs.readFileSync(path.join(__dirname, 'hosts.json'), 'utf8'));
  return hosts.map((h) => {
    const dir = path.join(TOOLS, h.dir, 'node_modules', 'code-server') + path.sep;
    const node = h.node === 'system' ? process.execPath : path.join(TOOLS, h.nodeDir, 'bin', 'node');
    const nodeMajor = h.node === 'system' ? process.versions.node.split('.')[0] : h.node.split('.')[0];
    return {
      name: h.name,
      vscode: h.vscode,
      codeServer: h.codeServer,
      dir,
      entry: path.join(dir, 'out', 'node', 'entry.js'),
      node,
      label: `VS Code ${h.vscode} (code-server ${h.codeServer}, Node ${nodeMajor})`,
    };
  });
}

/** The hosts named (`all` = every one), oldest first; throws on an unknown name. */
function selectHosts(names) {
  const hosts = allHosts();
  if (!names || names.length === 0 || names.includes('all')) return hosts;
  return names.map((n) => {
    const h = hosts.find((x) => x.name === n || x.vscode === n || x.codeServer === n);
    if (!h) throw new Error(`no host named ${n} (known: ${hosts.map((x) => x.name).join(', ')})`);
    return h;
  });
}

/** The newest host: what users run, so the demo and the screenshots use it. */
function newestHost() {
  const hosts = allHosts();
  return hosts[hosts.length - 1];
}

/** Throws a readable error when the installer has not been run for `host`. */
function checkInstalled(host) {
  const missing = [];
  if (!fs.existsSync(host.entry)) missing.push(`code-server ${host.codeServer} (${path.relative(ROOT, host.entry)})`);
  if (!fs.existsSync(host.node)) missing.push(`its Node (${path.relative(ROOT, host.node)})`);
  if (!fs.existsSync(CHROMIUM)) missing.push(`chromium (${CHROMIUM})`);
  try {
    require.resolve('playwright-core', { paths: [ROOT] });
  } catch {
    missing.push('playwright-core (npm ci)');
  }
  if (missing.length) {
    throw new Error(
      `the VS Code test host ${host.label} is not installed: missing ${missing.join(', ')}. Run: bash scripts/host/install.sh --host ${host.name}`,
    );
  }
}

module.exports = { ROOT, TOOLS, CHROMIUM, allHosts, selectHosts, newestHost, checkInstalled };
