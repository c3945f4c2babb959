/**
 * Context keys for `when` clauses: `agentTrees.hasRuns` (the welcome view, Show Agent Terminal),
 * `agentTrees.hasLiveRuns`, `agentTrees.hasTerminals` and `agentTrees.hasOtherExtensions` (Kill Agent Tree: its
 * pick lists the window's terminals and other extensions' trees too) and `agentTrees.hasDeadlines` (Extend
 * Timeout). Set only on change.
 */
import * as vscode from 'vscode';
import { AgentRuns } from '../agents/runs';
import { OtherExtensions } from './otherExtensions';
import { WindowTerminals } from './terminalTrees';

export class ContextKeys {
  private readonly values = new Map<string, boolean>();

  constructor(
    private readonly runs: AgentRuns,
    private readonly windowTerminals: WindowTerminals,
    private readonly otherExtensions: OtherExtensions,
  ) {}

  update(): void {
    const runs = this.runs.list();
    const keys: Record<string, boolean> = {
      'agentTrees.hasTerminals': this.windowTerminals.list().length > 0,
      'agentTrees.hasOtherExtensions': (this.otherExtensions.viewInput()?.length ?? 0) > 0,
      'agentTrees.hasRuns': runs.length > 0,
      'agentTrees.hasLiveRuns': runs.some((r) => r.live),
      'agentTrees.hasDeadlines': runs.some((r) => r.live && r.deadline !== undefined),
    };
    for (const [key, value] of Object.entries(keys)) {
      if (this.values.get(key) === value) continue;
      this.values.set(key, value);
      void vscode.commands.executeCommand('setContext', key, value);
    }
  }
}
