/**
 * The deadline countdown: while any agent has a deadline, the nearest one with the agent's name ("+N" for
 * more), on the warning background under `timeoutWarningSeconds`; the tooltip lists every deadline. While any
 * agent has limits, the tooltip names the one nearest a limit (shown alone, with its share, when no agent has a
 * deadline; on the warning background from 80 %).
 */
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';
import { NEAR_LIMIT } from '../proc';
import { nearestTree } from './budgetView';
import { formatDuration } from './viewFormat';

const STATUS_BAR_ID = 'agentTrees.deadline';

export class DeadlineStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private timer: NodeJS.Timeout | undefined;
  private visible = false;
  private readonly onChanged = () => this.update();
  private lastBudgetUpdate = 0;
  /** The budget watch looked again: at most one update a second for it. */
  private readonly onBudget = () => {
    if (Date.now() - this.lastBudgetUpdate >= 1000) this.update();
  };

  constructor(
    private readonly runs: AgentRuns,
    private readonly warningSeconds: () => number,
  ) {
    this.item = vscode.window.createStatusBarItem(STATUS_BAR_ID, vscode.StatusBarAlignment.Left, 50);
    this.item.name = vscode.l10n.t('Agent Trees Deadlines');
    this.item.command = 'agentTrees.deadlineActions';
    runs.on('changed', this.onChanged);
    runs.owner.on('budget', this.onBudget);
    this.update();
  }

  /** Runs with a deadline, nearest first. */
  withDeadlines(): AgentRun[] {
    return this.runs
      .running()
      .filter((r) => r.deadline !== undefined)
      .sort((a, b) => a.deadline! - b.deadline!);
  }

  /** The running agent nearest one of its limits, with its figures. */
  nearestLimit(): ReturnType<typeof nearestTree> {
    const owner = this.runs.owner;
    const limited = this.runs.running().flatMap((r) => {
      const use = owner.budgetUse(r.id);
      const limits = r.tree.record.limits;
      return use && limits && r.state === 'running' ? [{ name: r.name, budget: { limits, use } }] : [];
    });
    return nearestTree(limited, vscode.l10n);
  }

  update(): void {
    this.lastBudgetUpdate = Date.now();
    const runs = this.withDeadlines();
    const near = this.nearestLimit();
    if (runs.length === 0 && near) return this.showLimit(near);
    this.item.command = 'agentTrees.deadlineActions';
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
    for (const r of runs)
      tooltip.appendMarkdown(`- ${r.name}: ${vscode.l10n.t('killed in {0}', formatDuration(r.deadline! - Date.now()))}\n`);
    if (near) tooltip.appendMarkdown(`\n${this.limitLine(near)}\n`);
    tooltip.appendMarkdown(`\n${vscode.l10n.t('Click to extend or kill.')}`);
    this.item.tooltip = tooltip;
    this.item.show();
    this.visible = true;
    this.timer ??= setInterval(() => this.update(), 1000);
  }

  private limitLine(near: NonNullable<ReturnType<typeof nearestTree>>): string {
    return vscode.l10n.t('Nearest a limit: {0}, {1} ({2} %)', near.name, near.text, Math.round(near.share * 100));
  }

  /** No deadline, but limits: the agent nearest one, and how near. */
  private showLimit(near: NonNullable<ReturnType<typeof nearestTree>>): void {
    this.item.text = `$(dashboard) ${near.name} ${Math.round(near.share * 100)}%`;
    this.item.command = 'agentTrees.processTrees.focus';
    this.item.backgroundColor = near.share >= NEAR_LIMIT ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.tooltip = new vscode.MarkdownString(`**${vscode.l10n.t('Agent limits')}**\n\n${this.limitLine(near)}`);
    this.item.show();
    this.visible = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  state(): { visible: boolean; text: string; warning: boolean; tooltip: string } {
    const tooltip = this.item.tooltip;
    return {
      visible: this.visible,
      text: this.visible ? this.item.text : '',
      warning: this.visible && this.item.backgroundColor !== undefined,
      tooltip: !this.visible ? '' : typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? ''),
    };
  }

  dispose(): void {
    this.runs.off('changed', this.onChanged);
    this.runs.owner.off('budget', this.onBudget);
    if (this.timer) clearInterval(this.timer);
    this.item.dispose();
  }
}
