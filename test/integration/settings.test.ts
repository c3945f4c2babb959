// The agentTrees.* settings as the extension reads them in a real host: durations in seconds under their new names,
// the older names in minutes and milliseconds still working as deprecated aliases, and the new name winning.
import * as assert from 'assert';
import * as vscode from 'vscode';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { waitFor } from '../support/wait';
import { testHooks } from './fixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');
const set = (key: string, value: unknown) => config().update(key, value, vscode.ConfigurationTarget.Global);

describe('Agent Trees settings: durations in seconds, older names as deprecated aliases', function () {
  this.timeout(30_000);
  let hooks: AgentTreesTestHooks;
  const keys = ['refreshIntervalSeconds', 'refreshIntervalMs', 'sweepIntervalSeconds', 'sweepIntervalMinutes'];

  before(async () => {
    hooks = await testHooks();
  });
  after(async () => {
    for (const key of keys) await set(key, undefined);
  });

  /** Waits until the extension has read the settings again and `pick` of them is `expected`. */
  async function read<T>(pick: (s: ReturnType<AgentTreesTestHooks['settings']>) => T, expected: T, what: string): Promise<void> {
    await waitFor(
      () => `${what}: ${JSON.stringify(pick(hooks.settings()))}`,
      () => pick(hooks.settings()) === expected,
      10_000,
    );
  }

  it('reads the defaults in seconds when nothing is set', async () => {
    for (const key of keys) await set(key, undefined);
    await read((s) => s.refreshIntervalSeconds, 1, 'refresh interval');
    await read((s) => s.sweepIntervalSeconds, 600, 'sweep interval');
    assert.deepStrictEqual(hooks.settings().deprecated, []);
  });

  it('agentTrees.refreshIntervalMs still works; agentTrees.refreshIntervalSeconds wins once set', async () => {
    await set('refreshIntervalMs', 250);
    await read((s) => s.refreshIntervalSeconds, 0.25, 'the old name in ms');
    assert.deepStrictEqual(hooks.settings().deprecated, [
      'agentTrees.refreshIntervalMs (use agentTrees.refreshIntervalSeconds, in seconds)',
    ]);
    await set('refreshIntervalSeconds', 2);
    await read((s) => s.refreshIntervalSeconds, 2, 'the new name beside the old');
    assert.deepStrictEqual(hooks.settings().deprecated, [], 'the old name no longer counts');
    await set('refreshIntervalSeconds', undefined);
    await read((s) => s.refreshIntervalSeconds, 0.25, 'the old name again');
    await set('refreshIntervalMs', undefined);
    await read((s) => s.refreshIntervalSeconds, 1, 'the default');
  });

  it('agentTrees.sweepIntervalMinutes still works; agentTrees.sweepIntervalSeconds wins once set', async () => {
    await set('sweepIntervalMinutes', 3);
    await read((s) => s.sweepIntervalSeconds, 180, 'the old name in minutes');
    await set('sweepIntervalSeconds', 0);
    await read((s) => s.sweepIntervalSeconds, 0, 'the new name (0 = off) beside the old');
    await set('sweepIntervalSeconds', undefined);
    await set('sweepIntervalMinutes', undefined);
    await read((s) => s.sweepIntervalSeconds, 600, 'the default');
  });

  it('a bad value under the old name is reported by that name, in its unit, and the default used', async () => {
    await set('refreshIntervalMs', 5);
    await read((s) => s.problems.join('\n'), 'agentTrees.refreshIntervalMs must be a number of at least 100; using 1000', 'the problem');
    assert.strictEqual(hooks.settings().refreshIntervalSeconds, 1);
    await set('refreshIntervalMs', undefined);
    await read((s) => s.problems.length, 0, 'no problem left');
  });
});
