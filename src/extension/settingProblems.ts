/**
 * Bad settings, told: each problem to the log every time the settings are read, and as a warning with "Open
 * Settings" once per distinct set of problems (again when asked, as Launch Agent does before its pick).
 */
import * as vscode from 'vscode';
import { Settings } from './settings';

export class SettingProblems {
  private shown = '';

  constructor(private readonly log: vscode.LogOutputChannel) {}

  report(settings: Settings, force = false): void {
    const messages = [...settings.agentErrors.map((e) => e.message), ...settings.problems];
    const key = messages.join('\n');
    for (const m of messages) this.log.warn(m);
    for (const d of settings.deprecated) this.log.info(`deprecated setting in use: ${d}`);
    if (settings.workspaceAgentsIgnored) {
      this.log.info('Restricted Mode: the agentTrees.agents of the workspace settings are left out until the workspace is trusted');
    }
    if (messages.length === 0 || (!force && key === this.shown)) return;
    this.shown = key;
    for (const m of messages) {
      void vscode.window.showWarningMessage(m, vscode.l10n.t('Open Settings')).then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'agentTrees');
      });
    }
  }
}
