// The workbench's page, from the suite: what a user sees (the rendered DOM) and does (a click, a key). The suite runs
// in the extension host and cannot reach the DOM; the host runner serves operations on the page it drives
// (scripts/host/pageChannel.js) at the address AGENT_TREES_TEST_PAGE names. Under @vscode/test-electron there is
// no such page: `hasPage()` is false.
import * as http from 'http';

export const PAGE_VAR = 'AGENT_TREES_TEST_PAGE';

/**
 * The little of the DOM that page functions here use. The suite compiles without the DOM's types: a file with page
 * functions declares `declare const document: PageElement;` for them.
 */
export interface PageElement {
  getAttribute(name: string): string | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  closest(selector: string): PageElement | null;
  getClientRects(): ArrayLike<unknown>;
  readonly textContent: string | null;
}

/** Whether the runner serves the workbench's page to this suite. */
export function hasPage(): boolean {
  return !!process.env[PAGE_VAR];
}

function request<T>(body: Record<string, unknown>): Promise<T> {
  const url = process.env[PAGE_VAR];
  if (!url) return Promise.reject(new Error(`no workbench page: ${PAGE_VAR} is not set (the host runner sets it)`));
  const data = JSON.stringify(body);
  return new Promise<T>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let answer: { value?: T; error?: string };
        try {
          answer = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (e) {
          reject(new Error(`workbench page: unreadable answer to ${body.op} (HTTP ${res.statusCode}): ${(e as Error).message}`));
          return;
        }
        if (res.statusCode === 200) resolve(answer.value as T);
        else reject(new Error(`workbench page: ${answer.error ?? `HTTP ${res.statusCode}`}`));
      });
      res.on('error', reject);
    });
    req.on('error', (e) => reject(new Error(`workbench page: ${body.op}: ${e.message}`)));
    req.end(data);
  });
}

/**
 * Runs `fn` in the page with `arg` and resolves with what it returns (JSON). `fn` travels as its source: it may
 * use only its argument and the page's globals.
 */
export function evaluate<A, R>(fn: (arg: A) => R, arg?: A): Promise<R> {
  return request<R>({ op: 'evaluate', fn: fn.toString(), arg });
}

/** Clicks the first element `selector` matches, with the mouse, once it is visible. */
export function click(selector: string, timeoutMs = 10_000): Promise<void> {
  return request<void>({ op: 'click', selector, timeoutMs });
}

/** Turns the mouse wheel by `deltaY` pixels (down when positive) over the first element `selector` matches. */
export function wheel(selector: string, deltaY: number): Promise<void> {
  return request<void>({ op: 'wheel', selector, deltaY });
}

/** Presses a key, or a chord such as "Control+P". */
export function press(key: string): Promise<void> {
  return request<void>({ op: 'press', key });
}

/** Saves a picture of the page to `file`; resolves with its path. */
export function screenshot(file: string): Promise<string> {
  return request<string>({ op: 'screenshot', file });
}
