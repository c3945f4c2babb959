// Harness self-test (test/integration/selftest/: counted apart from the product's tests): the suite reaches the
// workbench's page through the runner (workbenchPage.ts): a function runs in the page with its argument, and what
// fails there fails here, saying what.
import * as assert from 'assert';
import { click, evaluate, hasPage, PageElement } from '../workbenchPage';

declare const document: PageElement & { readonly title: string };

describe('harness: the workbench page, from the suite', function () {
  before(function () {
    if (!hasPage()) this.skip();
  });

  it('runs a function in the page with its argument and returns its result', async () => {
    const got = await evaluate(
      (arg: { selector: string }) => ({ found: document.querySelector(arg.selector) !== null, title: document.title }),
      {
        selector: '.monaco-workbench',
      },
    );
    assert.strictEqual(got.found, true);
    assert.strictEqual(typeof got.title, 'string');
  });

  it('reports what failed in the page', async () => {
    await assert.rejects(
      evaluate(() => {
        throw new Error('thrown in the page');
      }),
      /evaluate: .*thrown in the page/,
    );
    await assert.rejects(click('.no-such-element-anywhere', 500), /click: [\s\S]*no-such-element-anywhere/);
  });
});
