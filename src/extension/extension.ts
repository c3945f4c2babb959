// Entry point of the Agent Trees extension: wires things up and returns the extension's API.
// Minimal for now: a log output channel, the Show Log command and the API object.
import * as path from 'path';
import * as vscode from 'vscode';

/** What `vscode.extensions.getExtension('agent-trees.agent-trees').exports` holds. */
export interface AgentTreesApi {
  /** Version of this API object; bumped when its shape changes. */
  readonly version: 1;
  /** Folder where the extension keeps one record file per owning extension host. */
  readonly recordsDir: string;
}

/** Called by VS Code on activation (`onStartupFinished`). */
export function activate(context: vscode.ExtensionContext): AgentTreesApi {
  const log = vscode.window.createOutputChannel('Agent Trees', { log: true });
  context.subscriptions.push(log);
  context.subscriptions.push(
    vscode.commands.registerCommand('agentTrees.showLog', () => log.show(true)),
  );
  const recordsDir = path.join(context.globalStorageUri.fsPath, 'owned-trees');
  log.info(`Agent Trees activated (extension host pid ${process.pid}); records in ${recordsDir}`);
  return { version: 1, recordsDir };
}

/** Called by VS Code on shutdown; everything registered is disposed through `context.subscriptions`. */
export function deactivate(): void {}
