// Limits per run as a user meets them in a real host: the settings (a bad value named, the defaults applied), the
// view's use against each limit read from the workbench's DOM, in the warning colour near one, the status bar's
// tooltip naming the tree nearest a limit, and the API's list(). Its runs stay listed once ended, among the 20 kept,
// so it runs after the suite that counts agent terminals (ptyAgents.test.ts).
import * as assert from 'assert';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { api, testHooks } from './fixtures';
import { waitFor } from '../support/wait';
import { hideView, openView, renderedRows, until } from './renderedView';
import { hasPage } from './workbenchPage';

const config = () => vscode.workspace.getConfiguration('agentTrees');
const set = (key: string, value: unknown) => config().update(key, value, vscode.ConfigurationTarget.Global);

describe('Agent Trees: limits per tree', function () {
  this.timeout(120_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  const launched: string[] = [];

  /** An agent of `count` sleeping processes, without a terminal. */
  const launch = async (name: string, count: number, limits: Record<string, number>) => {
    const args = ['-c', `${'sleep 120 & '.repeat(count - 1)}exec sleep 120`];
    const id = await trees.launch({ name, command: 'sh', args, kind: 'mcp', timeoutSeconds: 0, ...limits });
    launched.push(id);
    return id;
  };

  before(async () => {
    trees = await api();
    hooks = await testHooks();
  });
  after(async () => {
    for (const key of ['maxMemoryMB', 'maxProcesses', 'idleTimeoutSeconds']) await set(`limits.${key}`, undefined);
    for (const id of launched) await trees.kill(id);
    if (hasPage()) await hideView();
  });

  it('takes agentTrees.limits.* as the defaults of every tree, and names a bad value and a bad definition field', async () => {
    await set('limits.maxProcesses', -3);
    const problem = 'agentTrees.limits.maxProcesses must be a whole number of processes, 0 or more (0 = no limit); using 0 (no limit)';
    await waitFor(hooks.settings().problems.join('\n'), () => hooks.settings().problems.includes(problem), 10_000);
    await set('limits.maxProcesses', 7);
    await waitFor('maxProcesses 7 in the settings', () => hooks.settings().limits.maxProcesses === 7, 10_000);
    const id = await launch('with-defaults', 1, { idleTimeoutSeconds: 600 });
    assert.deepStrictEqual(trees.list().find((t) => t.id === id)?.limits, { maxProcesses: 7, idleTimeoutSeconds: 600 });
    // An MCP server of an mcp.json runs through the wrapper, which holds the defaults as `agent-trees run`'s options.
    const wrapper = await vscode.commands.executeCommand<{ args: string[] }>('agentTrees.copyMcpWrapper');
    const options = wrapper!.args.slice(0, wrapper!.args.indexOf('--'));
    assert.strictEqual(options[options.indexOf('--max-processes') + 1], '7', options.join(' '));
    assert.ok(!options.includes('--max-memory') && !options.includes('--idle-timeout'), options.join(' '));
    await set('limits.maxProcesses', undefined);
    await assert.rejects(
      trees.launch({ name: 'bad-limit', command: 'sleep', args: ['1'], maxMemoryMB: -1 }),
      /"maxMemoryMB" must be a whole number of MB, 0 or more \(0 = no limit\)/,
    );
  });

  it("lists each tree's limits and its use against them in the API, from the budget watch", async () => {
    const id = await launch('listed', 3, { maxProcesses: 10, maxMemoryMB: 1024 });
    const listed = await until('its use', async () => trees.list().find((t) => t.id === id && t.use?.processes === 3));
    assert.deepStrictEqual(listed.limits, { maxProcesses: 10, maxMemoryMB: 1024 });
    assert.strictEqual(listed.use!.memory.measure, 'RSS', 'far under 80 % of its memory limit: RSS, no PSS read');
    assert.ok(listed.use!.memory.bytes > 0);
    assert.strictEqual(listed.limitExceeded, null);
  });

  it("shows the use against each limit in the view, in the warning colour from 80 % on, and names the nearest in the status bar's tooltip", async function () {
    if (!hasPage()) this.skip(); // the DOM is read through the host runner's page
    await openView();
    await launch('far-from-limits', 2, { maxProcesses: 10, maxMemoryMB: 1024 });
    await launch('near-its-limit', 4, { maxProcesses: 5 });
    const far = await until('far-from-limits with its use', async () =>
      (await renderedRows()).find((r) => r.level === 1 && r.label === 'far-from-limits' && /2 of 10 processes/.test(r.description)),
    );
    assert.match(far.description, /^running · 2 of 10 processes · \d+% CPU · \d+ (KB|MB) of 1\.0 GB$/);
    assert.match(far.icon, /codicon-pulse/);
    const near = await until('near-its-limit with its use', async () =>
      (await renderedRows()).find((r) => r.level === 1 && r.label === 'near-its-limit' && /4 of 5 processes/.test(r.description)),
    );
    // The warning colour is the theme's list.warningForeground: another colour than the running agent's green.
    assert.match(near.icon, /codicon-warning .*color: /);
    assert.notStrictEqual(/color: [^;]*/.exec(near.icon)?.[0], /color: [^;]*/.exec(far.icon)?.[0]);
    const bar = await until('the status bar naming it', async () => {
      const state = hooks.statusBar();
      return state.tooltip.includes('near-its-limit') && state;
    });
    assert.match(bar.tooltip, /Nearest a limit: near-its-limit, 4 of 5 processes \(80 %\)/);
    // With no agent on a deadline the item shows the nearest alone (another suite's agent may have one).
    if (!bar.text.startsWith('$(watch)')) {
      assert.strictEqual(bar.text, '$(dashboard) near-its-limit 80%');
      assert.strictEqual(bar.warning, true);
    }
  });
});
