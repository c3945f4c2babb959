// The extension, loaded from the development folder into a real extension host.
import * as assert from 'assert';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestExports } from '../../src/extension/testHooks';
import { EXTENSION_ID } from './harness';

/** The members of the public API (src/extension/api.ts), nothing more. */
const API_MEMBERS = ['agents', 'kill', 'launch', 'list', 'mcp', 'recordsDir', 'sweep', 'version', 'windowId'];

/** What only tests and the benchmark use: never on the API itself. */
const HOOK_MEMBERS = [
  'answerKillPick',
  'answerTerminalQuestion',
  'attention',
  'otherExtensions',
  'output',
  'recordsProblem',
  'settings',
  'statusBar',
  'terminalClosings',
  'terminalCount',
  'terminalQuestions',
  'terminalState',
  'timings',
  'view',
  'viewRefresh',
];

describe('Agent Trees extension', () => {
  it('activates and exports its API object', async () => {
    const ext = vscode.extensions.getExtension<AgentTreesApi>(EXTENSION_ID)!;
    const api = await ext.activate();
    assert.ok(ext.isActive);
    assert.strictEqual(api.version, 3);
    assert.strictEqual(path.basename(api.recordsDir), 'owned-trees');
    assert.ok(
      api.recordsDir.includes(path.join('globalStorage', EXTENSION_ID)),
      `recordsDir ${api.recordsDir} is not in the extension's global storage`,
    );
    assert.strictEqual(ext.exports, api);
  });

  it('keeps the test hooks off the API: a test host gets them apart, as testHooks', async () => {
    const exports = await vscode.extensions.getExtension<AgentTreesTestExports>(EXTENSION_ID)!.activate();
    // The suite's runner loads the extension from its folder with a test suite: VS Code's ExtensionMode.Test.
    assert.deepStrictEqual(Object.keys(exports).sort(), [...API_MEMBERS, 'testHooks'].sort());
    assert.deepStrictEqual(
      HOOK_MEMBERS.filter((m) => m in exports),
      [],
      'hooks on the API object',
    );
    assert.deepStrictEqual(Object.keys(exports.testHooks).sort(), HOOK_MEMBERS);
    // Reported for the benchmark (measured there, never asserted as a budget here).
    assert.strictEqual(typeof exports.testHooks.timings.activateMs, 'number');
    assert.strictEqual(typeof exports.testHooks.timings.loadMs, 'number');
    assert.strictEqual(exports.testHooks.recordsProblem(), undefined, 'the records folder is usable here');
  });

  it('registers agentTrees.showLog, and running it succeeds', async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('agentTrees.showLog'), 'agentTrees.showLog is not registered');
    await vscode.commands.executeCommand('agentTrees.showLog');
  });
});
