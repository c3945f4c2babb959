#!/usr/bin/env node
// Renders the Marketplace icon, media/icon.png (128x128), from the view's glyph media/agent-trees.svg: the glyph in
// white on a rounded dark-teal square, drawn by headless Chromium (playwright-core, /usr/bin/chromium), then
// quantised with pngquant as the screenshots are (it ships in the .vsix: 11 KB in full colour, 3 KB quantised).
//   node scripts/icon.js [OUT]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const CHROMIUM = process.env.AGENT_TREES_CHROMIUM || '/usr/bin/chromium';
const SIZE = 128;

async function main() {
  const out = path.resolve(process.argv[2] || path.join(ROOT, 'media', 'icon.png'));
  const glyph = fs
    .readFileSync(path.join(ROOT, 'media', 'agent-trees.svg'), 'utf8')
    .replace(/stroke="currentColor"/, 'stroke="#ffffff"')
    .replace(/width="24" height="24"/, 'width="92" height="92"');
  const html = `<!doctype html><html><body style="margin:0;background:transparent">
    <div style="width:${SIZE}px;height:${SIZE}px;border-radius:24px;display:flex;align-items:center;justify-content:center;
      background:linear-gradient(160deg,#1f7a6d 0%,#0e3f4d 100%)">${glyph}</div></body></html>`;
  const { checkPngquant, compressPng } = require('./host/screenshots');
  checkPngquant();
  const { chromium } = require('playwright-core');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-icon-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
    env: { ...process.env, HOME: home },
  });
  try {
    const page = await browser.newPage({ viewport: { width: SIZE, height: SIZE }, deviceScaleFactor: 1 });
    await page.setContent(html);
    await page.screenshot({ path: out, omitBackground: true, clip: { x: 0, y: 0, width: SIZE, height: SIZE } });
  } finally {
    await browser.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
  const { after } = compressPng(out);
  process.stdout.write(`wrote ${path.relative(process.cwd(), out)} (${SIZE}x${SIZE}, ${(after / 1024).toFixed(1)} KB)\n`);
}

main().catch((e) => {
  process.stderr.write(`icon: ${e.stack || e}\n`);
  process.exit(1);
});
