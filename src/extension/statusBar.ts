/**
 * The deadline countdown: while any agent has a deadline, the nearest one with the agent's name ("+N" for
 * more), on the warning background under `timeoutWarningSeconds`; the tooltip lists every deadline.
 */
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';
import { formatDuration } from './viewFormat';

const STATUS_BAR_ID = 'agentTrees.deadline';

export class DeadlineStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private timer: NodeJS.Timeout | undefined;
  private visible = false;
  private readonly onChanged = () => this.update();

  constructor(private readonly runs: AgentRuns, private readonly warningSeconds: () => number) {
    this.item = vscode.window.createStatusBarItem(STATUS_BAR_ID, vscode.StatusBarAlignment.Left, 50);
    this.item.name = vscode.l10n.t('Agent Trees Deadlines');
    this.item.command = 'agentTrees.deadlineActions';
    runs.on('changed', this.onChanged);
    this.update();
  }

  /** Runs with a deadline, nearest first. */
  withDeadlines(): AgentRun[] {
    return this.runs.running().filter((r) => r.deadline !== undefined).sort((a, b) => a.deadline! - b.deadline!);
  }

  update(): void {
    const runs = this.withDeadlines();
    if (runs.length === 0) {
      this.item.hide();
      this.visible = false;
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const next = runs[0];
    const left = next.deadline! - Date.now();
    this.item.text = `$(watch) ${next.name} ${formatDuration(left)}${runs.length > 1 ? ` +${runs.length - 1}` : ''}`;
    this.item.backgroundColor = left <= this.warningSeconds() * 1000 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const tooltip = new vscode.MarkdownString(`**${vscode.l10n.t('Agent deadlines')}**\n\n`);
    for (const r of runs) tooltip.appendMarkdown(`- ${r.name}: ${vscode.l10n.t('killed in {0}', formatDuration(r.deadline! - Date.now()))}\n`);
    tooltip.appendMarkdown(`\n${vscode.l10n.t('Click to extend or kill.')}`);
    this.item.tooltip = tooltip;
    this.item.show();
    this.visible = true;
    this.timer ??= setInterval(() => this.update(), 1000);
  }

  state(): { visible: boolean; text: string; warning: boolean } {
    return { visible: this.visible, text: this.visible ? this.item.text : '', warning: this.visible && this.item.backgroundColor !== undefined };
  }

  dispose(): void {
    this.runs.off('changed', this.onChanged);
    if (this.timer) clearInterval(this.timer);
    this.item.dispose();
  }
}
