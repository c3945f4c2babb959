/** What a definition's variables and relative folder refer to, as VS Code and this host know it now. */
import * as os from 'os';
import * as vscode from 'vscode';
import type { LaunchContext } from '../agents/resolveDefinition';

export function launchContext(): LaunchContext {
  return {
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    userHome: os.homedir(),
    env: process.env,
  };
}
