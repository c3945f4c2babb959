#!/usr/bin/env node
// Takes the README's screenshots in a real workbench: packages and installs the extension like the demo
// (scripts/host/demo.js), opens demo/workspace (its settings define demo-agent and demo-mcp) in headless
// Chromium at 1280x800 and drives the UI as a user would:
//   agent-trees-welcome.png  the Agent Trees view with no agent (welcome view, Launch Agent button)
//   agent-trees-launch.png   F1 > "Agent Trees: Launch Agent...": the quick pick of agents
//   agent-trees-view.png     demo-agent picked and running: its process tree expanded in the view, the
//                            status bar countdown, the agent's terminal in the panel
//   agent-trees-log.png      after "Agent Trees: Kill Agent Tree" and "Sweep Orphaned Trees": the log
// Every screenshot is quantised to 256 colours (pngquant, which scripts/host/install.sh installs): a full-colour
// 1280x800 workbench is 3 times the size.
// Then it closes the browser, stops code-server and kills every process carrying the run's marker
// (the agent's tree was already killed through the UI). Leaves nothing running.
//
// With --view-after-launch the view is first opened after demo-agent was launched (as a newcomer may do): no
// welcome picture, and the launch picture shows the Explorer.
//
// Usage: npm run screenshots  [-- --vsix agent-trees.vsix (skip packaging)] [-- --out DIR] [-- --view-after-launch]
'use strict';

const { counted } = require('../counted');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT } = require('./hosts');
const { tail } = require('./codeServer');
const { openWorkbench } = require('./workbench');
const { prepareDemo, startDemoServer, teardown } = require('./demo');

const say = (msg) => process.stdout.write(`[screenshots] ${msg}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const SHOTS = ['agent-trees-welcome.png', 'agent-trees-launch.png', 'agent-trees-view.png', 'agent-trees-log.png'];
const VIEWPORT = { width: 1280, height: 800 };
const SIDEBAR_WIDTH = 560;
const LOG_SIDEBAR_WIDTH = 360;

/** Polls `fn` until it returns a truthy value; throws `what` after `timeoutMs`. */
async function waitUntil(what, fn, timeoutMs = 20000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const quickInput = (page) => page.locator('.quick-input-widget');
const quickRows = (page) => page.locator('.quick-input-widget .quick-input-list .monaco-list-row');

/** Opens the command palette (F1) and types `label` ("Category: Title"); leaves the palette open on it. */
async function typeCommand(page, label) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`>${label}`);
  await quickRows(page).filter({ hasText: label }).first().waitFor({ state: 'visible', timeout: 10000 });
}

/** Runs a command through the command palette by its label. */
async function runCommand(page, label) {
  await typeCommand(page, label);
  await page.keyboard.press('Enter');
}

/** Waits for the quick pick a command opened (by its title), e.g. "Launch Agent". */
async function waitForQuickPick(page, title) {
  await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: 10000 });
  await quickRows(page).first().waitFor({ state: 'visible', timeout: 10000 });
}

/** Picks the row of the open quick pick that shows `text`. */
async function pick(page, text) {
  await quickRows(page).filter({ hasText: text }).first().click();
  await quickInput(page).waitFor({ state: 'hidden', timeout: 10000 });
}

/** Opens a workspace file with Quick Open (Ctrl+P), e.g. ".vscode/settings.json". */
async function openFile(page, relPath) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(relPath);
  await quickRows(page)
    .filter({ hasText: path.basename(relPath) })
    .first()
    .waitFor({ state: 'visible', timeout: 10000 });
  await page.keyboard.press('Enter');
  await page
    .locator('.part.editor .tabs-container .tab', { hasText: path.basename(relPath) })
    .waitFor({ state: 'visible', timeout: 10000 });
}

/** Dismisses every notification toast, if any shows. */
async function clearNotifications(page) {
  if (!(await page.locator('.notifications-toasts .notification-toast').count())) return;
  await runCommand(page, 'Notifications: Clear All Notifications');
  await page
    .locator('.notifications-toasts .notification-toast')
    .first()
    .waitFor({ state: 'detached', timeout: 5000 })
    .catch(() => {});
}

/**
 * Drags the sash between the side bar and the editor until the side bar is `width` px wide. VS Code 1.139 marks
 * that sash (and leaves a gap between the parts); in 1.100 it sits on the side bar's right edge.
 */
async function setSidebarWidth(page, width) {
  const sidebar = page.locator('.part.sidebar');
  const box = await sidebar.boundingBox();
  if (!box) return;
  const sash = await page
    .locator('.monaco-sash.primary-sidebar-sash')
    .first()
    .boundingBox({ timeout: 1000 })
    .catch(() => null);
  const x = sash ? sash.x + sash.width / 2 : box.x + box.width - 1;
  const y = box.y + box.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + (width - box.width), y, { steps: 10 });
  await page.mouse.up();
  await sleep(300);
}

/** Moves the pointer to an empty spot of the activity bar: no hover, no tooltip in the picture. */
async function parkMouse(page) {
  await page.mouse.move(24, 560);
  await sleep(300);
}

/** Text of the rows of the Agent Trees view. */
async function viewRows(page) {
  return page.locator('.part.sidebar .pane-body .monaco-list-row').allTextContents();
}

/**
 * Expands the collapsed items of the Agent Trees view by clicking their twisties (an item first shown
 * without children stays collapsed in VS Code when children appear). Returns how many it expanded.
 */
async function expandView(page) {
  const collapsed = page.locator('.part.sidebar .pane-body .monaco-list-row .monaco-tl-twistie.collapsible.collapsed');
  let n = 0;
  while (n < 10 && (await collapsed.count())) {
    await collapsed.first().click();
    n++;
    await sleep(200);
  }
  return n;
}

/** Waits until the extension host has been launched and the extension activated (or the timeout passes). */
async function waitForExtensionHost(userDataDir, timeoutMs = 60000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const logs = path.join(userDataDir, 'logs');
    for (const session of fs.existsSync(logs) ? fs.readdirSync(logs) : []) {
      const file = path.join(logs, session, 'exthost1', 'remoteexthost.log');
      if (fs.existsSync(file) && /_doActivateExtension agent-trees\.agent-trees/.test(fs.readFileSync(file, 'utf8'))) return true;
    }
    await sleep(250);
  }
  return false;
}

/** pngquant's settings for the README's screenshots: 256 colours at most, the best it can do, no metadata. */
const PNGQUANT_ARGS = ['--quality=60-85', '--speed', '1', '--strip', '--force'];

/** Throws, saying how to get it, when pngquant is missing: checked before a run, not after its minutes of work. */
function checkPngquant() {
  const r = spawnSync('pngquant', ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error('pngquant is not installed (the screenshots are quantised with it): bash scripts/host/install.sh installs it');
}

/**
 * Quantises a PNG in place with pngquant. Returns its size before and after; a picture pngquant cannot bring
 * within the quality range (exit 99) is left as it is (`after` equals `before`). Throws when pngquant fails.
 */
function compressPng(file) {
  const before = fs.statSync(file).size;
  const q = spawnSync('pngquant', [...PNGQUANT_ARGS, '--output', file, '--', file], { encoding: 'utf8' });
  if (q.error) throw new Error(`pngquant: ${q.error.message}`);
  if (q.status !== 0 && q.status !== 99) throw new Error(`pngquant failed on ${file} (exit ${q.status}): ${q.stderr.trim()}`);
  return { before, after: fs.statSync(file).size };
}

/** Takes a screenshot of the page into `file`, quantised (compressPng). Returns the path relative to the repository. */
async function saveScreenshot(page, file) {
  await page.screenshot({ path: file });
  const { before, after } = compressPng(file);
  const saved = path.relative(ROOT, file);
  say(
    `saved ${saved} (${Math.round(after / 1024)} KB${after < before ? `, ${Math.round(before / 1024)} KB before pngquant` : ', pngquant could not reduce it'})`,
  );
  return saved;
}

async function shoot(page, outDir, name, saved) {
  const file = path.join(outDir, name);
  await saveScreenshot(page, file);
  saved.push(file);
}

/**
 * Starts the demo host's code-server, opens its workbench on `folder` at the screenshots' size, and waits until
 * the extension is active and the views have settled. Sets `session.server` and `session.browser` as each one
 * starts, so the caller's cleanup ends whatever started even when this throws. Returns the page.
 */
async function openDemoWorkbench(session, folder) {
  const { demo } = session;
  session.server = await startDemoServer(demo);
  session.browser = await openWorkbench({
    server: session.server,
    dirs: demo.dirs,
    folder,
    marker: demo.marker,
    browserMarker: `${demo.marker}.browser`,
    viewport: VIEWPORT,
  });
  const { page } = session.browser;
  await page.locator('.monaco-workbench .part.activitybar').waitFor({ state: 'visible', timeout: 60000 });
  if (!(await waitForExtensionHost(demo.userDataDir))) throw new Error('the extension was not activated within 60 s');
  await sleep(2000); // let the views settle
  return page;
}

/** After a failure: a picture of the workbench as it was (in the temp folder, `name`) and the end of code-server's log. */
async function reportFailure(session, name, log) {
  if (session.browser) {
    const file = path.join(os.tmpdir(), name);
    if (
      await session.browser.page.screenshot({ path: file }).then(
        () => true,
        () => false,
      )
    )
      log(`the workbench at the failure: ${file}`);
  }
  if (session.server) process.stdout.write(tail(session.server.logFile, 30) + '\n');
}

/** Closes the browser, stops the server and sweeps the run (see demo.js teardown). */
async function closeSession(session) {
  if (session.browser) await session.browser.close().catch(() => {});
  session.browser = undefined;
  if (session.demo) await teardown(session.demo, session.server);
  session.demo = undefined;
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const outDir = path.resolve(opt('--out') || path.join(ROOT, 'media', 'screenshots'));
  const viewAfterLaunch = argv.includes('--view-after-launch');
  fs.mkdirSync(outDir, { recursive: true });
  const started = Date.now();
  checkPngquant();

  const session = {};
  let failed = false;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => closeSession(session).finally(() => process.exit(130)));
  }

  const saved = [];
  try {
    session.demo = await prepareDemo({ vsix: opt('--vsix') });
    const page = await openDemoWorkbench(session, session.demo.workspace);

    // The demo's agent definitions in the editor, for the pictures' sake.
    await openFile(page, '.vscode/settings.json');

    const openView = () => page.locator('.part.activitybar .action-item a.action-label[aria-label^="Agent Trees"]').first().click();
    // 1. The view container, no agent yet: the welcome view.
    if (viewAfterLaunch) {
      say('agent-trees-welcome.png not taken: the view opens after the launch');
    } else {
      await openView();
      await page.locator('.part.sidebar .welcome-view-content', { hasText: 'Launch Agent' }).waitFor({ state: 'visible', timeout: 10000 });
      await setSidebarWidth(page, SIDEBAR_WIDTH);
      await clearNotifications(page);
      await page.keyboard.press('Control+1'); // focus the editor: no focus outline around the view
      await parkMouse(page);
      await sleep(1000);
      await shoot(page, outDir, 'agent-trees-welcome.png', saved);
    }

    // 2. Command palette > Agent Trees: Launch Agent...: the quick pick of the configured agents.
    await runCommand(page, 'Agent Trees: Launch Agent');
    await waitForQuickPick(page, 'Launch Agent');
    await quickRows(page).filter({ hasText: 'demo-mcp' }).first().waitFor({ state: 'visible', timeout: 10000 });
    await parkMouse(page);
    await sleep(500);
    await shoot(page, outDir, 'agent-trees-launch.png', saved);

    // 3. Pick demo-agent: its terminal opens, its tree fills the view, the status bar counts down.
    await pick(page, 'demo-agent');
    if (viewAfterLaunch) {
      await sleep(3000);
      await openView();
      await setSidebarWidth(page, SIDEBAR_WIDTH);
    }
    let expanded = 0;
    await waitUntil(
      "the demo agent's tree in the view (agent, loop, daemon, MCP server)",
      async () => {
        expanded += await expandView(page);
        const text = (await viewRows(page)).join('\n');
        return /agent\.sh/.test(text) && /demo-agent-daemon/.test(text) && /fake-mcp-server/.test(text) && /sleep 5/.test(text);
      },
      30000,
    );
    if (expanded) {
      say(`expanded ${counted(expanded, 'collapsed item')} of the view`);
      // Clicking a twistie selected its row and focused the view: clear that, back to the terminal.
      await page.keyboard.press('Escape');
      await runCommand(page, 'Terminal: Focus Terminal');
    }
    await page.locator('.part.statusbar', { hasText: 'demo-agent' }).waitFor({ state: 'visible', timeout: 10000 });
    await sleep(2500); // two more refreshes (1 s apart): CPU percentages need two samples
    await clearNotifications(page);
    await parkMouse(page);
    await shoot(page, outDir, 'agent-trees-view.png', saved);

    // 4. Kill it through the command palette, sweep, and show the log.
    await runCommand(page, 'Agent Trees: Kill Agent Tree');
    await waitForQuickPick(page, 'Kill which agent tree?');
    await pick(page, 'demo-agent');
    // The MCP server ignores SIGTERM: the kill takes the grace period (5 s), then SIGKILL.
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: 'demo-agent: killed: ended' })
      .waitFor({ state: 'visible', timeout: 30000 });
    await waitUntil(
      'the view to show demo-agent killed',
      async () => (await viewRows(page)).some((r) => /demo-agent.*killed/.test(r)),
      15000,
    );
    await clearNotifications(page);
    await runCommand(page, 'Agent Trees: Sweep Orphaned Trees');
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: 'orphaned' })
      .waitFor({ state: 'visible', timeout: 15000 })
      .catch(() => {});
    await clearNotifications(page);
    await runCommand(page, 'Agent Trees: Show Log');
    const output = page.locator('.part.panel .monaco-editor .view-lines').first();
    await output.waitFor({ state: 'visible', timeout: 10000 });
    // A narrower side bar and the maximized panel: the whole log, with few wrapped lines.
    await setSidebarWidth(page, LOG_SIDEBAR_WIDTH);
    await runCommand(page, 'View: Toggle Maximized Panel');
    await waitUntil(
      'the launch, kill and sweep lines in the log',
      async () => {
        const text = (await output.innerText()).replace(/\s+/g, ' '); // the editor renders spaces as U+00A0
        return /launched demo-agent/.test(text) && /killed: ended [1-9]/.test(text) && /sweep \(command\)/.test(text);
      },
      10000,
    );
    await parkMouse(page);
    await sleep(1000);
    await shoot(page, outDir, 'agent-trees-log.png', saved);

    // Screenshots this script took once but no longer takes.
    for (const name of fs.readdirSync(outDir)) {
      if (/^agent-trees-.*\.png$/.test(name) && !SHOTS.includes(name)) {
        fs.rmSync(path.join(outDir, name));
        say(`removed ${path.relative(ROOT, path.join(outDir, name))} (no longer taken)`);
      }
    }
  } catch (e) {
    failed = true;
    say(`failed: ${e.message}`);
    await reportFailure(session, 'agent-trees-screenshots-failure.png', say);
  } finally {
    await closeSession(session);
  }
  say(`${failed ? 'failed' : `${saved.length} screenshots`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  process.exit(failed ? 1 : 0);
}

module.exports = {
  expandView,
  runCommand,
  waitForQuickPick,
  pick,
  viewRows,
  waitUntil,
  clearNotifications,
  checkPngquant,
  compressPng,
  saveScreenshot,
  openDemoWorkbench,
  reportFailure,
  closeSession,
};

if (require.main === module) main();
