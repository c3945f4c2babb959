// The suite's way to the workbench page: the suite runs in the extension host (Node) and cannot reach the DOM,
// which lives in the Chromium page the runner drives. So the runner serves a few operations on that page over
// HTTP on 127.0.0.1, at a path holding a random token, and names the address to the suite in AGENT_TREES_TEST_PAGE
// (test/integration/workbenchPage.ts is the suite's side). Tests read what a user sees (rendered rows, toasts)
// and act as a user does (a click, a key).
'use strict';

const crypto = require('crypto');
const http = require('http');

const PAGE_VAR = 'AGENT_TREES_TEST_PAGE';

/** What a request may ask of the page. Each resolves with a JSON-serialisable value. */
const OPERATIONS = {
  /** Runs `fn` (a function's source) in the page with `arg`; resolves with what it returns. */
  evaluate: (page, { fn, arg }) => page.evaluate(new Function('arg', `return (${fn})(arg);`), arg),
  /** Clicks the first element `selector` matches, with the mouse, once it is visible. */
  click: (page, { selector, timeoutMs = 10000 }) => page.locator(selector).first().click({ timeout: timeoutMs }),
  /** Turns the mouse wheel by `deltaY` pixels over the middle of the first element `selector` matches (a scroll). */
  wheel: async (page, { selector, deltaY }) => {
    const box = await page.locator(selector).first().boundingBox({ timeout: 10000 });
    if (!box) throw new Error(`${selector} is not on the screen`);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, deltaY);
  },
  /** Presses a key (or a chord such as "Control+P") on the keyboard. */
  press: (page, { key }) => page.keyboard.press(key),
  /** Saves a picture of the page to `file` (for a failing test's report). */
  screenshot: (page, { file }) => page.screenshot({ path: file }).then(() => file),
};

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Serves OPERATIONS on the page `currentPage()` returns (the page changes when the runner opens a new one).
 * Resolves with { url, close() }; `url` goes to the suite in PAGE_VAR.
 */
async function startPageChannel(currentPage) {
  const token = crypto.randomBytes(16).toString('hex');
  const server = http.createServer(async (req, res) => {
    const answer = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== `/${token}`) return answer(404, { error: 'not found' });
    let request;
    try {
      request = JSON.parse(await readBody(req));
    } catch (e) {
      return answer(400, { error: `not a JSON request: ${e.message}` });
    }
    const operation = OPERATIONS[request && request.op];
    if (!operation)
      return answer(400, {
        error: `unknown operation ${JSON.stringify(request && request.op)}: one of ${Object.keys(OPERATIONS).join(', ')}`,
      });
    const page = currentPage();
    if (!page || page.isClosed()) return answer(503, { error: 'no workbench page is open' });
    try {
      const value = await operation(page, request);
      answer(200, { value: value === undefined ? null : value });
    } catch (e) {
      answer(500, { error: `${request.op}: ${e.message}` });
    }
  });
  server.unref();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/${token}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

module.exports = { startPageChannel, PAGE_VAR };
