// Workspace trust, in a real extension host whose folder is not trusted (Restricted Mode). Run by
// `node scripts/host/runTests.js --untrusted-workspace`, which runs only the *.untrusted.test.js files.
// A cloned repository's .vscode/settings.json can define agentTrees.agents, and a definition runs any command:
// there, only the user's own definitions launch.
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import { log } from './harness';
import { waitFor } from '../support/wait';
import { api } from './fixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

describe('Agent Trees in Restricted Mode (an untrusted workspace)', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let settingsFile: string;
  const ranMarker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-trust-')), 'workspace-agent-ran');

  before(async () => {
    trees = await api();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'the run opens a folder');
    await config().update(
      'agents',
      [{ name: 'user-agent', command: 'sleep', args: ['61'], timeoutSeconds: 0 }],
      vscode.ConfigurationTarget.Global,
    );
    // What a cloned repository would ship. timeoutWarningSeconds (not restricted) shows when VS Code has read the file.
    settingsFile = path.join(folder, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
    fs.writeFileSync(
      settingsFile,
      JSON.stringify(
        {
          'agentTrees.timeoutWarningSeconds': 42,
          'agentTrees.agents': [
            { name: 'workspace-agent', command: 'sh', args: ['-c', `echo ran > '${ranMarker}'; exec sleep 60`], timeoutSeconds: 0 },
            { name: 'user-agent', command: 'sh', args: ['-c', `echo ran > '${ranMarker}'; exec sleep 60`], timeoutSeconds: 0 },
          ],
        },
        null,
        2,
      ),
    );
    await waitFor('VS Code read the workspace settings', () => config().inspect('timeoutWarningSeconds')?.workspaceValue === 42, 10_000);
    // VS Code itself leaves restricted workspace values out (restrictedConfigurations); the extension does not rely on it.
    log(`[trust] VS Code shows the workspace's agentTrees.agents: ${config().inspect('agents')?.workspaceValue !== undefined}`);
  });

  after(async () => {
    await config().update('agents', undefined, vscode.ConfigurationTarget.Global);
    fs.rmSync(path.dirname(settingsFile), { recursive: true, force: true });
  });

  it('runs in a folder that is not trusted', () => {
    assert.strictEqual(vscode.workspace.isTrusted, false);
  });

  it('offers only the agents of the user settings', async () => {
    await waitFor('the user-level agent is offered', () => trees.agents().length > 0);
    assert.deepStrictEqual(trees.agents(), [{ name: 'user-agent', kind: 'agent', from: 'user' }]);
  });

  it('does not launch an agent the workspace defines, by name or through the command', async () => {
    await assert.rejects(
      trees.launch('workspace-agent'),
      /No agent named "workspace-agent" in the agentTrees\.agents of your user settings; in Restricted Mode/,
    );
    const viaCommand = await vscode.commands.executeCommand<string | undefined>('agentTrees.launchAgent', 'workspace-agent');
    assert.strictEqual(viaCommand, undefined);
    assert.ok(!trees.list().some((t) => t.name === 'workspace-agent'), 'no tree was started');
    assert.ok(!fs.existsSync(ranMarker), 'the workspace-defined command never ran');
  });

  it('launches the user-level definition of a name, not the workspace one', async () => {
    const id = await trees.launch('user-agent');
    // The user's command (sleep 61) runs once the spawn has exec'd it; the workspace's (sh, then sleep 60) never does.
    const userCommandRuns = () =>
      trees
        .list()
        .find((t) => t.id === id)
        ?.members.some((m) => /(^|\/)sleep 61$/.test(m.command)) ?? false;
    await waitFor(() => `the user-level agent runs: ${JSON.stringify(trees.list().find((t) => t.id === id))}`, userCommandRuns, 10_000);
    assert.ok(!fs.existsSync(ranMarker));
    const r = await trees.kill(id);
    assert.strictEqual(r.survivors, 0);
  });
});
