// The extension, loaded from the development folder into a real extension host.
import * as assert from 'assert';
import * as path from 'path';
import * as vscode from 'vscode';
import { EXTENSION_ID } from './harness';

interface AgentTreesApi {
  version: number;
  recordsDir: string;
  timings?: { loadMs?: number; activateMs: number };
}

describe('Agent Trees extension', () => {
  it('activates and exports its API object', async () => {
    const ext = vscode.extensions.getExtension<AgentTreesApi>(EXTENSION_ID)!;
    const api = await ext.activate();
    assert.ok(ext.isActive);
    assert.strictEqual(api.version, 1);
    assert.strictEqual(path.basename(api.recordsDir), 'owned-trees');
    assert.ok(
      api.recordsDir.includes(path.join('globalStorage', EXTENSION_ID)),
      `recordsDir ${api.recordsDir} is not in the extension's global storage`,
    );
    assert.strictEqual(ext.exports, api);
    // Reported for the benchmark (measured there, never asserted as a budget here).
    assert.strictEqual(typeof api.timings?.activateMs, 'number');
    assert.strictEqual(typeof api.timings?.loadMs, 'number');
  });

  it('registers agentTrees.showLog, and running it succeeds', async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('agentTrees.showLog'), 'agentTrees.showLog is not registered');
    await vscode.commands.executeCommand('agentTrees.showLog');
  });
});
