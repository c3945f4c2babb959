#!/usr/bin/env node
// Tries the real agent CLIs as a new user would: Codex (@openai/codex), Gemini CLI
// (@google/gemini-cli) and Claude Code (@anthropic-ai/claude-code), installed from npm into a temporary folder
// (never project dependencies), each defined in agentTrees.agents with its absolute path and launched from the
// command palette ("Agent Trees: Launch Agent...") of a real workbench running the packaged extension. For each:
// its first screen in the agent terminal, a key that reaches it (an arrow key moves its selection), then
// "Agent Trees: Kill Agent Tree" from the palette, and a check that nothing of its tree is left (every process
// carrying its tree tag). Saves a screenshot of the Codex terminal as media/screenshots/codex-agent-terminal.png
// (not named agent-trees-*.png: screenshots.js removes those it does not take itself), quantised with pngquant
// as screenshots.js does (the README and docs/screenshots.md show it).
// Then the ordinary-terminal path: in an integrated terminal of the window (bash, the CLIs on its PATH as a
// global install puts them) the user types `agent-trees run -- <cli>`, then plain `<cli>`; each time its first
// screen, its row in the view (a window tree of `agent-trees run`, or under the terminal's row), a key, and the
// kill from the view's inline action (Kill Agent Tree on the window tree, End Everything Under This Terminal on
// the terminal), then a check that no process of the CLI is left (every process with the trial's HOME).
// The agents get a home folder of their own (HOME), removed at the end; nothing is signed in.
//
// Usage: node scripts/host/agentClis.js [--clis DIR (with node_modules/.bin/{codex,gemini,claude})] [--vsix FILE]
//        [--host oldest|newest|all (repeatable; default newest)] [--path agent|terminal|all (default all)]
//        [--out DIR] [--json FILE]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { ROOT, selectHosts } = require('./hosts');
const { writeDefaultUserSettings } = require('./codeServer');
const processes = require('../../test/support/processes');
const agentPackages = require('./agentPackages');
const { prepareDemo, packageExtension } = require('./demo');
const {
  runCommand,
  waitForQuickPick,
  pick,
  waitUntil,
  clearNotifications,
  expandView,
  viewRows,
  checkPngquant,
  saveScreenshot,
  openDemoWorkbench,
  reportFailure,
  closeSession,
} = require('./screenshots');

const say = (msg) => process.stdout.write(`[agent-clis] ${msg}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const PACKAGES = { codex: '@openai/codex', gemini: '@google/gemini-cli', claude: '@anthropic-ai/claude-code' };

/** The CLIs' newest versions, as a new user gets them, installed into this run's folder (by agentPackages.js). */
function ensureClis(dir) {
  const latest = Object.fromEntries(Object.values(PACKAGES).map((name) => [name, 'latest']));
  const s = agentPackages.ensureAgentPackages({ dir, packages: latest });
  if (!s.available) throw new Error(s.why);
}

const version = (dir, bin) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', PACKAGES[bin], 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
};

/** The text the active terminal shows (the DOM renderer's rows). */
async function terminalText(page) {
  const rows = page.locator('.terminal-wrapper.active .xterm-rows');
  if (!(await rows.count())) return '';
  return (await rows.first().innerText()).replace(/\u00a0/g, ' ');
}

/**
 * Processes with the trial's HOME: the agents and all they started (with `tagged`, only those carrying an
 * agent-trees tree tag). A terminal's shell is not one: it gets HOME by `export`, its start environment keeps
 * the old one.
 */
function trialProcesses(home, tagged = true) {
  const out = [];
  for (const pid of fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)) {
    const env = processes.readEnviron(pid);
    if (env && env.get('HOME') === home && (!tagged || env.has('AGENT_TREES_TREE_ID')))
      out.push({ pid, tag: env.get('AGENT_TREES_TREE_ID'), command: processes.describe(pid, 100) });
  }
  return out;
}

/** What each CLI shows first (not signed in, no network), the key tried and what shows it reached the CLI. */
const PLANS = {
  codex: {
    screen: /Sign in with ChatGPT/,
    key: 'ArrowDown',
    moved: />\s*2\.\s*Sign in with Device Code/,
    shot: 'codex-agent-terminal.png',
  },
  gemini: {
    screen: /(Do you trust|Trust folder|Get started|How would you like to authenticate|Login with Google)/,
    key: 'ArrowDown',
    moved: /●\s*2\./,
  },
  // Without network Claude Code shows its welcome, then why it cannot go on, and exits (1).
  claude: { screen: /(Welcome to Claude Code|Unable to connect to Anthropic services)/, key: 'Enter' },
};
const BINS = ['codex', 'gemini', 'claude'];

const firstLines = (text, n = 30) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean)
    .slice(0, n)
    .join('\n');
const indent = (text) =>
  text
    .split('\n')
    .map((l) => `    | ${l}`)
    .join('\n');

/** Waits for the CLI's first screen in the active terminal; returns { firstScreen, screen }. */
async function awaitFirstScreen(page, bin) {
  const firstScreen = await waitUntil(
    `${bin}'s first screen`,
    async () => (PLANS[bin].screen.test(await terminalText(page)) ? true : undefined),
    60000,
  ).then(
    () => true,
    () => false,
  );
  await sleep(1500); // let it finish drawing
  const screen = firstLines(await terminalText(page));
  say(`${bin} shows:\n${indent(screen)}`);
  return { firstScreen, screen };
}

/** Presses the plan's key in the active terminal; returns whether the CLI visibly reacted (undefined: not checked). */
async function pressKey(page, bin) {
  const plan = PLANS[bin];
  await page.locator('.terminal-wrapper.active .xterm').first().click();
  await page.keyboard.press(plan.key);
  if (!plan.moved) return undefined;
  const reached = await waitUntil(
    `${bin} to react to ${plan.key}`,
    async () => (plan.moved.test(await terminalText(page)) ? true : undefined),
    10000,
  ).then(
    () => true,
    () => false,
  );
  say(`${bin}: ${plan.key} ${reached ? 'moved its selection' : 'did not visibly change its screen'}`);
  return reached;
}

/** Waits until none of `list()` is left (15 s); returns the commands of what is left. */
async function leftAlive(what, list) {
  return waitUntil(what, async () => (list().length === 0 ? [] : undefined), 15000).catch(() => list().map((p) => p.command));
}

/** The rows of the Agent Trees view with their depth: [{ level, text }]. */
async function viewRowsWithLevels(page) {
  return page
    .locator('.part.sidebar .pane-body .monaco-list-row')
    .evaluateAll((rows) => rows.map((r) => ({ level: Number(r.getAttribute('aria-level')), text: r.textContent || '' })));
}

/** Clicks the inline action `title` of the view's row `row` (a locator), shown on hover. */
async function clickInlineAction(page, row, title) {
  await row.hover();
  await row.locator(`.actions .action-label[aria-label^="${title}"]`).first().click();
}

/** Opens an ordinary integrated terminal (the user's shell) and waits for its prompt. */
async function openShellTerminal(page) {
  await runCommand(page, 'Terminal: Create New Terminal');
  await waitUntil('a shell prompt', async () => (/[$#] *$/.test((await terminalText(page)).trimEnd() + ' ') ? true : undefined), 30000);
}

/** Types a command line into the active terminal and presses Enter. */
async function typeLine(page, line) {
  await page.locator('.terminal-wrapper.active .xterm').first().click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}

/** The agent-terminal path: Launch Agent... > bin, a key, Kill Agent Tree from the palette. */
async function tryAgentTerminal(page, bin, { clis, home, outDir, shots }) {
  const plan = PLANS[bin];
  const r = { path: 'agent terminal', agent: bin, package: `${PACKAGES[bin]}@${version(clis, bin)}` };
  say(`${r.package}: Launch Agent... > ${bin}`);
  await clearNotifications(page);
  await runCommand(page, 'Agent Trees: Launch Agent');
  await waitForQuickPick(page, 'Launch Agent');
  await pick(page, bin);
  Object.assign(r, await awaitFirstScreen(page, bin));
  const tree = trialProcesses(home);
  r.processesBeforeKill = tree.length;
  r.alive = tree.length > 0;
  if (plan.key && r.alive) r.keyReached = await pressKey(page, bin);
  if (shots && plan.shot && r.alive) {
    // Its tree in the view beside it, as the view refreshes it; then the terminal in front again.
    await waitUntil(
      `${bin}'s processes in the view`,
      async () => {
        await expandView(page);
        return (await viewRows(page)).length > 2 ? true : undefined;
      },
      15000,
    ).catch(() => undefined);
    await page.locator('.terminal-wrapper.active .xterm').first().click();
    await page.mouse.move(24, 560);
    await sleep(800);
    r.screenshot = await saveScreenshot(page, path.join(outDir, plan.shot));
  }
  const tags = new Set(tree.map((p) => p.tag));
  if (r.alive) {
    await clearNotifications(page);
    await runCommand(page, 'Agent Trees: Kill Agent Tree');
    await waitForQuickPick(page, 'Kill which agent tree?');
    await pick(page, bin);
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: `${bin}: killed: ended` });
    await toast.first().waitFor({ state: 'visible', timeout: 30000 });
    r.notification = (await toast.first().innerText()).split('\n')[0];
    r.ending = await waitUntil(
      `${bin}'s ending line`,
      async () => (await terminalText(page)).match(/\[Agent Trees: ([^\]]+)\]/)?.[1],
      15000,
    ).catch(() => undefined);
  } else {
    r.ending = (await terminalText(page)).match(/\[Agent Trees: ([^\]]+)\]/)?.[1];
  }
  r.leftAlive = await leftAlive(`${bin}'s tree to be gone`, () => trialProcesses(home).filter((p) => tags.has(p.tag)));
  say(
    `${bin}: ${r.processesBeforeKill} processes in its tree; ${r.notification ? `notification "${r.notification}"; ` : ''}terminal "${r.ending}"; left alive: ${r.leftAlive.length}`,
  );
  r.ok = r.firstScreen && r.leftAlive.length === 0 && r.keyReached !== false;
  return r;
}

/**
 * The ordinary-terminal path: `agent-trees run -- bin` (how = 'run') or plain `bin` (how = 'plain') typed in the
 * shell terminal; its row in the view, a key, the view's inline kill, nothing left.
 */
async function tryShellTerminal(page, bin, how, { clis, home }) {
  const plan = PLANS[bin];
  const line = how === 'run' ? `agent-trees run -- ${bin}` : bin;
  const r = { path: `ordinary terminal: ${line}`, agent: bin, package: `${PACKAGES[bin]}@${version(clis, bin)}` };
  say(`${r.package}: typed "${line}" in the terminal`);
  await clearNotifications(page);
  await typeLine(page, 'clear');

  await sleep(300);
  await typeLine(page, line);
  Object.assign(r, await awaitFirstScreen(page, bin));
  const tree = trialProcesses(home, false);
  r.processesBeforeKill = tree.length;
  r.alive = tree.length > 0;
  say(`${bin}: its processes: ${tree.map((p) => `${p.pid} ${p.command}`).join('; ')}`);
  if (r.alive) {
    // Its row: a window tree of `agent-trees run`, or a process under the terminal's row.
    const shown = await waitUntil(
      `${bin} in the view`,
      async () => {
        await expandView(page);
        const rows = await viewRowsWithLevels(page);
        if (how === 'run') return rows.find((x) => x.text.includes('agent-trees run') && x.text.includes(bin));
        const t = rows.findLastIndex((x) => /shell \d+/.test(x.text));
        return t >= 0 && rows.slice(t + 1).find((x) => x.level > rows[t].level && x.text.includes(bin));
      },
      20000,
    ).catch(() => undefined);
    r.inView = !!shown;
    say(`${bin}: in the view: ${shown ? `"${shown.text.trim()}" (level ${shown.level})` : 'NOT FOUND'}`);
    say(`view rows:\n${indent((await viewRowsWithLevels(page)).map((x) => `${'  '.repeat(x.level - 1)}${x.text.trim()}`).join('\n'))}`);
    if (plan.key) r.keyReached = await pressKey(page, bin);
    await clearNotifications(page);
    const rowsLocator = page.locator('.part.sidebar .pane-body .monaco-list-row');
    if (how === 'run') {
      await clickInlineAction(page, rowsLocator.filter({ hasText: 'agent-trees run' }).filter({ hasText: bin }).first(), 'Kill Agent Tree');
    } else {
      // The newest terminal's row (the last): an earlier one may still be listed.
      await clickInlineAction(page, rowsLocator.filter({ hasText: /shell \d+/ }).last(), 'End Everything Under This Terminal');
    }
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: ': ended' });
    r.notification = await toast
      .first()
      .waitFor({ state: 'visible', timeout: 30000 })
      .then(async () => (await toast.first().innerText()).split('\n')[0])
      .catch(() => undefined);
  }
  r.leftAlive = await leftAlive(`${bin}'s processes to be gone`, () => trialProcesses(home, false));
  await sleep(1000);
  r.after = firstLines(await terminalText(page), 12);
  say(`${bin}: the terminal after it ended:\n${indent(r.after)}`);
  say(
    `${bin}: ${r.processesBeforeKill} processes; ${r.notification ? `notification "${r.notification}"; ` : ''}left alive: ${r.leftAlive.length}`,
  );
  // The terminal still takes a command line as typed (a keyboard protocol left on sends every key as CSI … u).
  await typeLine(page, 'echo "typed $((6 * 7))"');
  r.usableAfter = await waitUntil(
    'the shell to run a typed line',
    async () => ((await terminalText(page)).includes('typed 42') ? true : undefined),
    10000,
  ).catch(() => false);
  say(`${bin}: the terminal ${r.usableAfter ? 'takes typed lines' : 'NO LONGER takes typed lines'} after it ended`);
  r.ok =
    r.firstScreen && r.leftAlive.length === 0 && r.keyReached !== false && (!r.alive || (r.inView && !!r.notification)) && r.usableAfter;
  return r;
}

/** One host: a workbench with the packaged extension, every CLI on every path asked for. */
async function trialHost(host, { vsix, clis, outDir, paths, shots }) {
  // Not under /tmp: Codex refuses to put its helper binaries under the temp folder and says so on screen.
  const home = fs.mkdtempSync('/var/tmp/agent-trees-cli-home-');
  const workspace = path.join(home, 'project');
  fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(workspace, 'README.md'), '# A project to try agent CLIs in\n');
  const agents = BINS.map((bin) => ({
    name: bin,
    command: path.join(clis, 'node_modules', '.bin', bin),
    env: { HOME: home },
    timeoutSeconds: 600,
  }));
  fs.writeFileSync(
    path.join(workspace, '.vscode', 'settings.json'),
    JSON.stringify({ 'agentTrees.agents': agents, 'agentTrees.killGraceSeconds': 2 }, null, 2),
  );

  const session = {};
  const results = [];
  let failed = false;
  try {
    const demo = (session.demo = await prepareDemo({ vsix, host }));
    // The DOM renderer, so the terminal's text can be read back.
    const userSettings = path.join(demo.userDataDir, 'User', 'settings.json');
    writeDefaultUserSettings(demo.userDataDir);
    fs.writeFileSync(
      userSettings,
      JSON.stringify({ ...JSON.parse(fs.readFileSync(userSettings, 'utf8')), 'terminal.integrated.gpuAcceleration': 'off' }, null, 2),
    );
    const page = await openDemoWorkbench(session, workspace);
    await page.locator('.part.activitybar .action-item a.action-label[aria-label^="Agent Trees"]').first().click();
    const context = { clis, home, outDir, shots };
    if (paths.includes('agent')) {
      for (const bin of BINS) {
        const r = await tryAgentTerminal(page, bin, context);
        results.push({ host: host.name, ...r });
        if (!r.ok) failed = true;
      }
    }
    if (paths.includes('terminal')) {
      const newShell = async () => {
        // Opened after activation, so it has the window's terminal environment (agent-trees on its PATH).
        await openShellTerminal(page);
        // The CLIs on the PATH, as a global install puts them; their own HOME.
        await typeLine(page, `export HOME=${home} PATH="$PATH:${path.join(clis, 'node_modules', '.bin')}"`);
      };
      await newShell();
      for (const bin of BINS) {
        for (const how of ['run', 'plain']) {
          const r = await tryShellTerminal(page, bin, how, context);
          results.push({ host: host.name, ...r });
          if (!r.ok) failed = true;
          if (!r.usableAfter) await newShell(); // as a user would: that one no longer takes what they type
        }
      }
    }
  } catch (e) {
    failed = true;
    say(`failed: ${e.stack || e.message}`);
    await reportFailure(session, `agent-trees-clis-failure-${host.name}.png`, say);
  } finally {
    await closeSession(session);
    const left = trialProcesses(home, false);
    if (left.length) {
      failed = true;
      say(`LEFT RUNNING: ${left.map((p) => p.command).join('; ')}`);
    }
    fs.rmSync(home, { recursive: true, force: true });
  }
  return { results, failed };
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const optAll = (name) => argv.flatMap((a, i) => (a === name && i + 1 < argv.length ? [argv[i + 1]] : []));
  const hostNames = optAll('--host');
  // The newest by default, as users run it (and the screenshot is of it); `--host all` for every host.
  const hosts = selectHosts(hostNames.length ? hostNames : ['newest']);
  const pathOpt = opt('--path') || 'all';
  if (!['agent', 'terminal', 'all'].includes(pathOpt)) throw new Error(`--path ${pathOpt}: agent, terminal or all`);
  const paths = pathOpt === 'all' ? ['agent', 'terminal'] : [pathOpt];
  const clis = path.resolve(opt('--clis') || fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-clis-')));
  const outDir = path.resolve(opt('--out') || path.join(ROOT, 'media', 'screenshots'));
  fs.mkdirSync(outDir, { recursive: true });
  checkPngquant();
  ensureClis(clis);
  const vsix = opt('--vsix') || packageExtension();

  const results = [];
  let failed = false;
  for (const host of hosts) {
    say(`${host.label}`);
    // The screenshot is of the newest host only.
    const r = await trialHost(host, { vsix, clis, outDir, paths, shots: host === hosts[hosts.length - 1] && host.name === 'newest' });
    results.push(...r.results);
    if (r.failed) failed = true;
  }
  say('summary:');
  for (const r of results) {
    say(
      `  ${r.host} ${r.agent} (${r.path}): first screen ${r.firstScreen ? 'yes' : 'NO'}; key ${r.keyReached === undefined ? '-' : r.keyReached ? 'yes' : 'NO'}` +
        `${r.inView === undefined ? '' : `; in view ${r.inView ? 'yes' : 'NO'}`}; ${r.alive ? `killed (${r.notification || r.ending || '?'})` : 'had exited'}; left ${r.leftAlive.length}` +
        `${r.usableAfter === undefined ? '' : `; terminal usable after: ${r.usableAfter ? 'yes' : 'NO'}`}`,
    );
  }
  const json = opt('--json');
  if (json) fs.writeFileSync(json, JSON.stringify(results, null, 2) + '\n');
  say(failed ? 'FAILED' : 'done');
  process.exit(failed ? 1 : 0);
}

main();
