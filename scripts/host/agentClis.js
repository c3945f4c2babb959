#!/usr/bin/env node
// Tries the real agent CLIs as a new user would (issue 11, item 7): Codex (@openai/codex), Gemini CLI
// (@google/gemini-cli) and Claude Code (@anthropic-ai/claude-code), installed from npm into a temporary folder
// (never project dependencies), each defined in agentTrees.agents with its absolute path and launched from the
// command palette ("Agent Trees: Launch Agent...") of a real workbench running the packaged extension. For each:
// its first screen in the agent terminal, a key that reaches it (an arrow key moves its selection), then
// "Agent Trees: Kill Agent Tree" from the palette, and a check that nothing of its tree is left (every process
// carrying its tree tag). Saves a screenshot of the Codex terminal as media/screenshots/codex-agent-terminal.png
// (not named agent-trees-*.png: screenshots.js removes those it does not take itself), quantised with pngquant
// as screenshots.js does (the packaged README inlines it).
// The agents get a home folder of their own (HOME), removed at the end; nothing is signed in.
//
// Usage: node scripts/host/agentClis.js [--clis DIR (with node_modules/.bin/{codex,gemini,claude})] [--vsix FILE]
//        [--out DIR] [--json FILE]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT } = require('./hosts');
const { writeDefaultUserSettings } = require('./codeServer');
const processes = require('../../test/support/processes');
const { prepareDemo } = require('./demo');
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

function ensureClis(dir) {
  const missing = Object.keys(PACKAGES).filter((bin) => !fs.existsSync(path.join(dir, 'node_modules', '.bin', bin)));
  if (missing.length === 0) return;
  say(`installing ${missing.map((b) => PACKAGES[b]).join(', ')} into ${dir}`);
  fs.mkdirSync(dir, { recursive: true });
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', dir, ...missing.map((b) => PACKAGES[b])], {
    stdio: 'inherit',
    env: { ...process.env, npm_config_dangerously_allow_all_scripts: 'true', npm_config_yes: 'true' },
  });
  if (r.status !== 0) throw new Error(`npm install failed (exit code ${r.status})`);
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

/** Processes whose environment carries an agent-trees tag and the trial's HOME: the agents and all they started. */
function trialProcesses(home) {
  const out = [];
  for (const pid of fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)) {
    const env = processes.readEnviron(pid);
    if (env && env.get('HOME') === home && env.has('AGENT_TREES_TREE_ID'))
      out.push({ pid, tag: env.get('AGENT_TREES_TREE_ID'), command: processes.describe(pid, 100) });
  }
  return out;
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const clis = path.resolve(opt('--clis') || fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-clis-')));
  const outDir = path.resolve(opt('--out') || path.join(ROOT, 'media', 'screenshots'));
  checkPngquant();
  ensureClis(clis);
  // Not under /tmp: Codex refuses to put its helper binaries under the temp folder and says so on screen.
  const home = fs.mkdtempSync('/var/tmp/agent-trees-cli-home-');
  const workspace = path.join(home, 'project');
  fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(workspace, 'README.md'), '# A project to try agent CLIs in\n');
  const agents = Object.keys(PACKAGES).map((bin) => ({
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
    const demo = (session.demo = await prepareDemo({ vsix: opt('--vsix') }));
    // The DOM renderer, so the terminal's text can be read back.
    const userSettings = path.join(demo.userDataDir, 'User', 'settings.json');
    writeDefaultUserSettings(demo.userDataDir);
    fs.writeFileSync(
      userSettings,
      JSON.stringify({ ...JSON.parse(fs.readFileSync(userSettings, 'utf8')), 'terminal.integrated.gpuAcceleration': 'off' }, null, 2),
    );
    const page = await openDemoWorkbench(session, workspace);
    await page.locator('.part.activitybar .action-item a.action-label[aria-label^="Agent Trees"]').first().click();

    const plans = {
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
    for (const bin of ['codex', 'gemini', 'claude']) {
      const plan = plans[bin];
      const r = { agent: bin, package: `${PACKAGES[bin]}@${version(clis, bin)}` };
      results.push(r);
      say(`${r.package}: Launch Agent... > ${bin}`);
      await clearNotifications(page);
      await runCommand(page, 'Agent Trees: Launch Agent');
      await waitForQuickPick(page, 'Launch Agent');
      await pick(page, bin);
      let text = '';
      r.firstScreen = await waitUntil(
        `${bin}'s first screen`,
        async () => {
          text = await terminalText(page);
          return plan.screen.test(text) ? true : undefined;
        },
        60000,
      ).then(
        () => true,
        () => false,
      );
      await sleep(1500); // let it finish drawing
      text = await terminalText(page);
      r.screen = text
        .split('\n')
        .map((l) => l.trimEnd())
        .filter(Boolean)
        .slice(0, 30)
        .join('\n');
      say(
        `${bin} shows:\n${r.screen
          .split('\n')
          .map((l) => `    | ${l}`)
          .join('\n')}`,
      );
      const tree = trialProcesses(home);
      r.processesBeforeKill = tree.length;
      r.alive = tree.length > 0;
      if (plan.key && r.alive) {
        await page.locator('.terminal-wrapper.active .xterm').first().click();
        await page.keyboard.press(plan.key);
        if (plan.moved) {
          r.keyReached = await waitUntil(
            `${bin} to react to ${plan.key}`,
            async () => (plan.moved.test(await terminalText(page)) ? true : undefined),
            10000,
          ).then(
            () => true,
            () => false,
          );
          say(`${bin}: ${plan.key} ${r.keyReached ? 'moved its selection' : 'did not visibly change its screen'}`);
        }
      }
      if (plan.shot && r.alive) {
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
        const toast = page.locator('.notifications-toasts .notification-toast', { hasText: `${bin}: ended` });
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
      r.leftAlive = await waitUntil(
        `${bin}'s tree to be gone`,
        async () => {
          const left = trialProcesses(home).filter((p) => tags.has(p.tag));
          return left.length === 0 ? [] : undefined;
        },
        15000,
      ).catch(() =>
        trialProcesses(home)
          .filter((p) => tags.has(p.tag))
          .map((p) => p.command),
      );
      say(
        `${bin}: ${r.processesBeforeKill} processes in its tree; ${r.notification ? `notification "${r.notification}"; ` : ''}terminal "${r.ending}"; left alive: ${r.leftAlive.length}`,
      );
      if (!r.firstScreen || r.leftAlive.length) failed = true;
    }
  } catch (e) {
    failed = true;
    say(`failed: ${e.stack || e.message}`);
    await reportFailure(session, 'agent-trees-clis-failure.png', say);
  } finally {
    await closeSession(session);
    const left = trialProcesses(home);
    if (left.length) {
      failed = true;
      say(`LEFT RUNNING: ${left.map((p) => p.command).join('; ')}`);
    }
    fs.rmSync(home, { recursive: true, force: true });
  }
  const json = opt('--json');
  if (json) fs.writeFileSync(json, JSON.stringify(results, null, 2) + '\n');
  say(failed ? 'FAILED' : 'done');
  process.exit(failed ? 1 : 0);
}

main();
