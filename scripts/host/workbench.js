// The workbench of a host run: headless Chromium (driven by playwright-core) opening code-server's page,
// with the workbench configuration rewritten so VS Code loads the extension under development and its
// test suite (code-server's command line rejects --extensionDevelopmentPath / --extensionTestsPath).
'use strict';

const fs = require('fs');
const path = require('path');
const processes = require('../../test/support/processes');
const { ROOT, CHROMIUM } = require('./hosts');
const { MARKER_VAR, BROWSER_MARKER_VAR, cleanEnv } = require('./marker');

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Init script run in the page before the workbench reads its configuration: rewrites the JSON in the
 * data-settings attribute of <meta id="vscode-workbench-web-configuration"> (the fields @vscode/test-web sets).
 * Runs in the browser: it may use only its argument.
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
      // One folder or several, each loaded as a development extension (the workbench takes a list).
      const folders = Array.isArray(cfg.extensionDevelopmentPath) ? cfg.extensionDevelopmentPath : [cfg.extensionDevelopmentPath];
      settings.developmentOptions.extensions = folders.map((p) => ({ scheme: 'vscode-remote', authority, path: p }));
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
 * Returns { context, page, close() }.
 */
async function openWorkbench({
  server,
  dirs,
  folder,
  marker,
  browserMarker,
  extensionDevelopmentPath,
  extensionTestsPath,
  workspaceTrust = false,
  onLog,
  onExit,
  onPageError,
  viewport = { width: 1400, height: 900 },
  profileName = 'chromium-profile',
}) {
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
  // The extension's clipboard goes through the page's: allow it, as a user's click would.
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url.replace(/\/$/, '') }).catch(() => {});
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
      const groups = processes
        .processesWithEnv(BROWSER_MARKER_VAR, browserMarker)
        .filter((s) => s.pgid === s.pid)
        .map((s) => s.pid);
      await Promise.race([context.close().catch(() => {}), new Promise((r) => setTimeout(r, 10000))]);
      for (const pgid of groups) await processes.killGroup(pgid, { graceMs: 0 });
      return processes.killWithEnv(BROWSER_MARKER_VAR, browserMarker);
    },
  };
}

module.exports = { openWorkbench };
