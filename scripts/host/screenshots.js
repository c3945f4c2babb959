#!/usr/bin/env node
// Takes screenshots of the extension in a real workbench: packages and installs the extension like the
// demo (scripts/host/demo.js), opens the demo workspace in headless Chromium, opens the "Agent Trees"
// view container from the activity bar (when the extension contributes one) and the extension's log
// (Agent Trees: Show Log), and saves PNGs under media/screenshots/. Leaves nothing running.
//
// Usage: npm run screenshots  [-- --vsix agent-trees.vsix (skip packaging)] [-- --out DIR]
'use strict';

const fs = require('fs');
const path = require('path');
const lib = require('./hostLib');
const { prepareDemo, teardown } = require('./demo');

const say = (msg) => process.stdout.write(`[screenshots] ${msg}\n`);

/** Runs a command through the command palette by its label ("Category: Title"). */
async function runCommand(page, label) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`>${label}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
  await row.waitFor({ state: 'visible', timeout: 10000 });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10000 }).catch(() => {});
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
    await lib.sleep(250);
  }
  return false;
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const outDir = path.resolve(opt('--out') || path.join(lib.ROOT, 'media', 'screenshots'));
  fs.mkdirSync(outDir, { recursive: true });

  let demo;
  let server;
  let browser;
  let failed = false;
  const cleanup = async () => {
    if (browser) await browser.close().catch(() => {});
    if (demo) await teardown(demo, server);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => cleanup().finally(() => process.exit(130)));
  }

  try {
    demo = await prepareDemo({ vsix: opt('--vsix') });
    server = await lib.startCodeServer({
      dirs: demo.dirs,
      userDataDir: demo.userDataDir,
      extensionsDir: demo.extensionsDir,
      env: {},
      marker: demo.marker,
      logFile: path.join(demo.dirs.logs, 'code-server.log'),
    });
    browser = await lib.openWorkbench({
      server,
      dirs: demo.dirs,
      folder: demo.workspace,
      marker: demo.marker,
      browserMarker: `${demo.marker}.browser`,
      viewport: { width: 1280, height: 800 },
    });
    const { page } = browser;
    await page.locator('.monaco-workbench .part.activitybar').waitFor({ state: 'visible', timeout: 60000 });
    if (!(await waitForExtensionHost(demo.userDataDir))) throw new Error('the extension was not activated within 60 s');
    await lib.sleep(2000); // let the views settle
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => {});

    const shots = [];
    const viewItem = page.locator('.part.activitybar .action-item a.action-label[aria-label^="Agent Trees"]').first();
    if (await viewItem.count()) {
      await viewItem.click();
      await page.mouse.move(800, 600); // no hover tooltip in the picture
      await lib.sleep(1500);
      const file = path.join(outDir, 'agent-trees-view.png');
      await page.screenshot({ path: file });
      shots.push(file);
    } else {
      say('no "Agent Trees" view container in the activity bar (yet): skipping that screenshot');
    }

    await runCommand(page, 'Agent Trees: Show Log');
    await page.locator('.part.panel .output-view, .part.panel [id="workbench.panel.output"]').first()
      .waitFor({ state: 'visible', timeout: 10000 }).catch(() => say('the Output panel did not show up'));
    await lib.sleep(1500);
    const logShot = path.join(outDir, 'agent-trees-log.png');
    await page.screenshot({ path: logShot });
    shots.push(logShot);

    for (const f of shots) say(`saved ${path.relative(lib.ROOT, f)}`);
  } catch (e) {
    failed = true;
    say(`failed: ${e.message}`);
    if (server) process.stdout.write(lib.tail(server.logFile, 30) + '\n');
  } finally {
    await cleanup();
  }
  process.exit(failed ? 1 : 0);
}

main();
