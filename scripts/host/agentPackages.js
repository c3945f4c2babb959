#!/usr/bin/env node
// The real agent packages the tests run offline against test/fixtures/agents' model endpoint, installed from npm
// into the git-ignored .tools/agents/ (one npm prefix shared by every checkout that shares .tools; installers take
// turns on a lock). Pinned versions, so a test run does not change under its feet; a second call finds the
// manifest and returns at once.
//
//   const agents = require('./scripts/host/agentPackages');
//   const status = agents.ensureAgentPackages();      // installs what is missing (or not the pinned version)
//   if (!status.available) this.skip();               // status.why says why not, e.g. the registry is unreachable
//   status.packages['@anthropic-ai/claude-code'].version, agents.claudeBinary(status), ...
//
// CLI: node scripts/host/agentPackages.js [--dir DIR] [--force] [--json]   (prints what is installed, or why not)
'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const DEFAULT_DIR = path.join(ROOT, '.tools', 'agents');
const MANIFEST = 'agent-packages.json';

/** The packages and the versions installed. Change a version here to move every checkout to it. */
const PACKAGES = {
  '@anthropic-ai/claude-code': '2.1.332',
  '@anthropic-ai/claude-agent-sdk': '0.3.333',
  '@modelcontextprotocol/server-filesystem': '2026.8.31',
  '@openai/codex': '0.171.0',
};

/** The platform packages that hold the native `claude` binary (npm installs the one for this machine). */
const CLAUDE_NATIVE = {
  cli: (platform = `${process.platform}-${process.arch}`) => `@anthropic-ai/claude-code-${platform}`,
  sdk: (platform = `${process.platform}-${process.arch}`) => `@anthropic-ai/claude-agent-sdk-${platform}`,
};

const log = (msg) => process.stderr.write(`[agent-packages] ${msg}\n`);

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The installed version of `name` under `dir`, or undefined. */
function installedVersion(dir, name) {
  return readJson(path.join(dir, 'node_modules', name, 'package.json'))?.version;
}

/** Whether an installed version is the one wanted ('latest': whichever was installed). */
const matches = (installed, wanted) => wanted === 'latest' || installed === wanted;

/** Whether every pinned package is installed at its version (the manifest is written last, after a good install). */
function upToDate(dir, packages) {
  const manifest = readJson(path.join(dir, MANIFEST));
  if (!manifest) return false;
  return Object.entries(packages).every(([name, version]) => {
    const got = installedVersion(dir, name);
    return got !== undefined && matches(got, version) && manifest.packages?.[name]?.version === got;
  });
}

/** The status of `dir` as a test reads it: { available, why?, dir, packages: { name: { version, path } } }. */
function status(dir = DEFAULT_DIR, packages = PACKAGES) {
  const out = { available: true, dir, packages: {} };
  const missing = [];
  for (const [name, wanted] of Object.entries(packages)) {
    const version = installedVersion(dir, name);
    if (version !== undefined && matches(version, wanted)) out.packages[name] = { version, path: path.join(dir, 'node_modules', name) };
    else missing.push(version ? `${name}@${version} (wanted ${wanted})` : `${name}@${wanted}`);
  }
  if (missing.length) {
    out.available = false;
    out.why = `not installed in ${dir}: ${missing.join(', ')}`;
  }
  return out;
}

/** The last lines of npm's output that say what went wrong (network errors first). */
function npmFailure(r) {
  const text = `${r.stdout || ''}\n${r.stderr || ''}`;
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const network = lines.find((l) => /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network|proxy/i.test(l));
  const errors = lines.filter((l) => /^npm (error|ERR!)/.test(l)).slice(0, 6);
  const reason = network ? `the npm registry cannot be reached (${network})` : errors.join(' | ') || lines.slice(-4).join(' | ');
  return `npm install failed (${r.error ? r.error.message : `exit code ${r.status}`}): ${reason}`;
}

/**
 * Installs the pinned packages into `dir` unless they are there already, under a lock (flock on `<dir>.lock`)
 * so two checkouts never install into one folder at once. Never throws for an install that cannot be done:
 * returns the status, whose `why` names the cause (npm's own words) so a test can skip with it.
 *
 * @param {{ dir?: string, packages?: Record<string,string>, force?: boolean, quiet?: boolean }} [options]
 */
function ensureAgentPackages({ dir = DEFAULT_DIR, packages = PACKAGES, force = false, quiet = false } = {}) {
  if (!force && upToDate(dir, packages)) return withManifest(status(dir, packages), dir);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // The install runs as a child under `flock`, which waits for any other installer and frees the lock even if
  // this process is killed; the child checks again once it holds the lock (the other one may have installed).
  const args = [`${dir}.lock`, process.execPath, __filename, '--locked', '--dir', dir, '--packages', JSON.stringify(packages)];
  if (force) args.push('--force');
  const r = spawnSync('flock', args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', quiet ? 'pipe' : 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const result = readJson(path.join(dir, '.last-install.json'));
  const now = status(dir, packages);
  if (r.error) return { ...now, available: false, why: `could not run flock: ${r.error.message}` };
  if (!now.available && result && result.why) now.why = result.why;
  return withManifest(now, dir);
}

/** Adds what the manifest says (when installed, by which npm) to a status. */
function withManifest(s, dir) {
  const manifest = readJson(path.join(dir, MANIFEST));
  if (manifest) s.installed = { at: manifest.at, npm: manifest.npm, node: manifest.node, platform: manifest.platform };
  return s;
}

/** The install itself, run under the lock by ensureAgentPackages. Writes `.last-install.json` ({ ok, why? }). */
function installLocked(dir, packages, force) {
  fs.mkdirSync(dir, { recursive: true });
  const lastInstall = path.join(dir, '.last-install.json');
  if (!force && upToDate(dir, packages)) {
    fs.writeFileSync(lastInstall, JSON.stringify({ ok: true, already: true }));
    return 0;
  }
  // A package.json of its own: npm installs into this prefix and never walks up into a checkout's.
  const pkg = path.join(dir, 'package.json');
  fs.writeFileSync(
    pkg,
    JSON.stringify(
      { name: 'agent-trees-test-agents', private: true, description: 'Real agent packages for the tests (scripts/host/agentPackages.js)' },
      null,
      2,
    ) + '\n',
  );
  const specs = Object.entries(packages).map(([name, version]) => `${name}@${version}`);
  log(`installing ${specs.join(' ')} into ${dir}`);
  const started = Date.now();
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--save-exact', '--loglevel=warn', ...specs], {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      // npm 11 blocks install scripts not listed in allowScripts; the CLIs' postinstall places their native binary.
      npm_config_dangerously_allow_all_scripts: 'true',
      npm_config_update_notifier: 'false',
      npm_config_yes: 'true',
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error || r.status !== 0) {
    const why = npmFailure(r);
    log(why);
    fs.writeFileSync(lastInstall, JSON.stringify({ ok: false, why }));
    return 1;
  }
  const got = status(dir, packages);
  if (!got.available) {
    fs.writeFileSync(lastInstall, JSON.stringify({ ok: false, why: got.why }));
    return 1;
  }
  const npmVersion = spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout.trim();
  const manifest = {
    at: new Date().toISOString(),
    npm: npmVersion,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    seconds: Math.round((Date.now() - started) / 1000),
    packages: Object.fromEntries(Object.keys(packages).map((name) => [name, { version: installedVersion(dir, name) }])),
    native: Object.fromEntries([CLAUDE_NATIVE.cli(), CLAUDE_NATIVE.sdk()].map((name) => [name, installedVersion(dir, name) ?? null])),
  };
  fs.writeFileSync(path.join(dir, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
  fs.writeFileSync(lastInstall, JSON.stringify({ ok: true }));
  log(`installed in ${manifest.seconds} s`);
  return 0;
}

/**
 * The native `claude` executable: `which` is 'cli' (@anthropic-ai/claude-code's platform package) or 'sdk' (the
 * one the Agent SDK ships and runs unless given pathToClaudeCodeExecutable). Undefined when not installed.
 */
function claudeBinary(s = status(), which = 'cli') {
  const file = path.join(s.dir, 'node_modules', CLAUDE_NATIVE[which](), 'claude');
  return fs.existsSync(file) ? file : undefined;
}

/** An executable of a package's `bin` (node_modules/.bin/NAME), or undefined. */
function binOf(s, name) {
  const file = path.join(s.dir, 'node_modules', '.bin', name);
  return fs.existsSync(file) ? file : undefined;
}

/**
 * The way a test asks: `requireAgents(['@openai/codex'])` → { ok: true, status } or { ok: false, why }, installing
 * first if needed. `why` is one line, fit to print as a skip reason.
 */
function requireAgents(names = Object.keys(PACKAGES), options) {
  const s = ensureAgentPackages({ quiet: true, ...options });
  const missing = names.filter((n) => !s.packages[n]);
  if (!missing.length) return { ok: true, status: s };
  return { ok: false, status: s, why: `${missing.join(', ')} not available: ${s.why || 'not installed'}` };
}

module.exports = { PACKAGES, DEFAULT_DIR, CLAUDE_NATIVE, status, ensureAgentPackages, requireAgents, claudeBinary, binOf };

if (require.main === module) {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dir = path.resolve(opt('--dir') || DEFAULT_DIR);
  const packages = opt('--packages') ? JSON.parse(opt('--packages')) : PACKAGES;
  if (argv.includes('--locked')) process.exit(installLocked(dir, packages, argv.includes('--force')));
  const s = ensureAgentPackages({ dir, packages, force: argv.includes('--force') });
  if (argv.includes('--json'))
    process.stdout.write(JSON.stringify({ ...s, claude: { cli: claudeBinary(s, 'cli'), sdk: claudeBinary(s, 'sdk') } }, null, 2) + '\n');
  else if (s.available) {
    for (const [name, p] of Object.entries(s.packages)) process.stdout.write(`${name}@${p.version}\n`);
    process.stdout.write(
      `claude binary: ${claudeBinary(s, 'cli') ?? '(none)'}\nthe SDK's claude binary: ${claudeBinary(s, 'sdk') ?? '(none)'}\n`,
    );
  } else process.stdout.write(`not available: ${s.why}\n`);
  process.exit(s.available ? 0 : 1);
}
