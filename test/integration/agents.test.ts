// The product in a real extension host: launching agents from settings and by argument, the view's data,
// Kill Agent Tree, timeouts with the status-bar countdown, agent terminals, and bad settings.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { EXTENSION_ID } from './harness';
import { waitFor } from '../support/wait';
import { api, pidFile, testHooks } from './fixtures';
import { FIXTURE } from '../support/repo';
import { fixturePids } from '../support/fixtures';
import { aliveOf } from '../support/started';

const config = () => vscode.workspace.getConfiguration('agentTrees');

describe('Agent Trees: agents in a real extension host', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  const setsidPids = pidFile();

  before(async () => {
    trees = await api();
    hooks = await testHooks();
    await config().update('killGraceSeconds', 1, vscode.ConfigurationTarget.Global);
    await config().update(
      'agents',
      [
        { name: 'setsid-agent', command: FIXTURE, args: ['setsid', setsidPids], timeoutSeconds: 0 },
        { name: 'broken', command: 'x', timeoutSeconds: 'soon' },
        { name: 'good-after-broken', command: 'sleep', args: ['60'], timeoutSeconds: 0 },
      ],
      vscode.ConfigurationTarget.Global,
    );
  });

  after(async () => {
    await config().update('agents', undefined, vscode.ConfigurationTarget.Global);
    await config().update('killGraceSeconds', undefined, vscode.ConfigurationTarget.Global);
  });

  it('launches an agent from settings; the view data lists its members; Kill Agent Tree ends all, the setsid child too', async () => {
    const id = await vscode.commands.executeCommand<string>('agentTrees.launchAgent', 'setsid-agent');
    assert.ok(id, 'launchAgent returned a tree id');
    const { roles, all } = await fixturePids(setsidPids);
    const setsidChild = roles.get('setsid')![0];
    await waitFor('the setsid child among the members the view data lists', () => {
      const t = trees.list().find((x) => x.id === id);
      return !!t && t.members.some((m) => m.pid === setsidChild);
    });
    const tree = trees.list().find((x) => x.id === id)!;
    assert.strictEqual(tree.name, 'setsid-agent');
    assert.strictEqual(tree.state, 'running');
    assert.deepStrictEqual(tree.members.map((m) => m.pid).sort(), all.sort());
    assert.ok(tree.members.every((m) => m.command.length > 0));

    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', id);
    assert.strictEqual(result?.survivors, 0);
    assert.ok(result!.signalled >= 2);
    await waitFor(
      () => `alive: ${aliveOf(all)}`,
      () => aliveOf(all).length === 0,
    );
    await waitFor('the run to show killed', () => trees.list().find((x) => x.id === id)?.state === 'killed');
  });

  it('launches by a definition argument, through the API too', async () => {
    const file = pidFile();
    const id = await vscode.commands.executeCommand<string>('agentTrees.launchAgent', {
      name: 'by-argument',
      command: FIXTURE,
      args: ['daemon', file],
      timeoutSeconds: 0,
    });
    const { all } = await fixturePids(file);
    const viaApi = await trees.launch({ name: 'via-api', command: 'sleep', args: ['60'], timeoutSeconds: 0 });
    assert.ok(trees.list().some((t) => t.id === viaApi && t.state === 'running'));
    const a = await trees.kill(id);
    const b = await trees.kill(viaApi);
    assert.strictEqual(a.survivors + b.survivors, 0);
    await waitFor('the daemon died with its tree', () => aliveOf(all).length === 0);
  });

  it('a timeout ends the tree, and the status bar shows the countdown, then hides it', async () => {
    const file = pidFile();
    assert.strictEqual(hooks.statusBar().visible, false);
    await config().update('timeoutWarningSeconds', 60, vscode.ConfigurationTarget.Global);
    const id = await trees.launch({ name: 'short-lived', command: FIXTURE, args: ['ignore-term', file], timeoutSeconds: 8 });
    const bar = hooks.statusBar(); // read at once: the deadline is 8 s away however slow the machine is
    const { all } = await fixturePids(file);
    assert.strictEqual(bar.visible, true);
    assert.match(bar.text, /^\$\(watch\) short-lived 0:0[0-8]$/);
    assert.strictEqual(bar.warning, true, 'under timeoutWarningSeconds: warning background');
    await waitFor('state shows timed out', () => trees.list().find((t) => t.id === id)?.state === 'timed out', 15_000);
    await waitFor('SIGTERM-ignoring members die after the grace', () => aliveOf(all).length === 0, 10_000);
    await waitFor('the countdown is hidden again', () => !hooks.statusBar().visible, 5000);
    await config().update('timeoutWarningSeconds', undefined, vscode.ConfigurationTarget.Global);
  });

  it('closing the agent terminal ends the tree', async () => {
    const file = pidFile();
    const id = await trees.launch({ name: 'terminal-agent', command: FIXTURE, args: ['deep', file], timeoutSeconds: 0 });
    const { all } = await fixturePids(file);
    const terminal = await waitFor(
      'the terminal-agent terminal',
      () => vscode.window.terminals.find((t) => t.name === 'Agent: terminal-agent'),
      5000,
    );
    terminal.dispose();
    await waitFor(
      () => `alive: ${aliveOf(all)}`,
      () => aliveOf(all).length === 0,
      10_000,
    );
    await waitFor('the run to show killed', () => trees.list().find((t) => t.id === id)?.state === 'killed');
  });

  it('runs an MCP server without a terminal until one is asked for', async () => {
    const id = await trees.launch({
      name: 'mcp-server',
      command: 'sh',
      args: ['-c', 'echo "starting" >&2; exec sleep 60'],
      kind: 'mcp',
      timeoutSeconds: 0,
    });
    assert.strictEqual(trees.list().find((t) => t.id === id)?.state, 'running');
    // An agent launched after it has its terminal by the time launch() returns; the MCP server, launched first, has none.
    const agent = await trees.launch({ name: 'agent-after-mcp', command: 'sleep', args: ['60'], timeoutSeconds: 0 });
    assert.ok(
      vscode.window.terminals.some((t) => t.name === 'Agent: agent-after-mcp'),
      'an agent gets its terminal at launch',
    );
    assert.ok(!vscode.window.terminals.some((t) => t.name === 'Agent: mcp-server'), 'no terminal of its own');
    assert.strictEqual((await trees.kill(agent)).survivors, 0);
    await vscode.commands.executeCommand('agentTrees.showTerminal', id);
    await waitFor('the mcp-server terminal', () => vscode.window.terminals.find((t) => t.name === 'Agent: mcp-server'), 5000);
    const r = await trees.kill(id);
    assert.strictEqual(r.survivors, 0);
  });

  it('names the bad agents entry and its field, and still launches the good one', async () => {
    await assert.rejects(trees.launch('broken'), /agentTrees\.agents\[1\] \("broken"\): "timeoutSeconds" must be a number/);
    await assert.rejects(trees.launch({ name: 'no-command' } as never), /"command" must be a non-empty string/);
    await assert.rejects(
      trees.launch({ name: 'missing', command: 'no-such-agent-cli-here' }),
      /Cannot launch missing: no-such-agent-cli-here: command not found on PATH/,
    );
    const id = await trees.launch('good-after-broken');
    assert.strictEqual(trees.list().find((t) => t.id === id)?.state, 'running');
    await trees.kill(id);
  });

  it('says which agents the workspace defines, and launches them in a trusted workspace', async () => {
    assert.strictEqual(vscode.workspace.isTrusted, true, 'this run has workspace trust off: every folder is trusted');
    assert.ok(trees.agents().every((a) => a.from === 'user'));
    await config().update(
      'agents',
      [{ name: 'from-workspace', command: 'sleep', args: ['60'], kind: 'mcp', timeoutSeconds: 0 }],
      vscode.ConfigurationTarget.Workspace,
    );
    try {
      await waitFor('the workspace definition is read', () => trees.agents().some((a) => a.name === 'from-workspace'));
      assert.deepStrictEqual(
        trees.agents(),
        [{ name: 'from-workspace', kind: 'mcp', from: 'workspace' }],
        'a workspace value replaces the user one',
      );
      const id = await trees.launch('from-workspace');
      assert.strictEqual((await trees.kill(id)).survivors, 0);
    } finally {
      await config().update('agents', undefined, vscode.ConfigurationTarget.Workspace);
    }
    await waitFor('back to the user settings', () => trees.agents().some((a) => a.name === 'setsid-agent' && a.from === 'user'));
  });

  it('keeps a record of its trees while they run, in the documented format, and none once they end', async () => {
    const id = await trees.launch({ name: 'recorded', command: 'sleep', args: ['60'], timeoutSeconds: 0 });
    const file = path.join(trees.recordsDir, `${process.pid}.json`);
    const record = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.strictEqual(record.version, 1);
    assert.strictEqual(record.owner.pid, process.pid);
    const t = record.trees.find((x: { id: string }) => x.id === id);
    assert.strictEqual(t.envTag, `AGENT_TREES_TREE_ID=${id}`);
    await trees.kill(id);
    await waitFor(
      'the tree to leave the record',
      () => !fs.existsSync(file) || !JSON.parse(fs.readFileSync(file, 'utf8')).trees.some((x: { id: string }) => x.id === id),
    );
  });

  it('registers a handler for every command it contributes', async () => {
    await api();
    const registered = new Set(await vscode.commands.getCommands(true));
    const contributed = (vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON.contributes.commands as { command: string }[]).map(
      (c) => c.command,
    );
    assert.ok(contributed.length > 0);
    assert.deepStrictEqual(
      contributed.filter((c) => !registered.has(c)),
      [],
      'contributed commands without a handler',
    );
  });
});
