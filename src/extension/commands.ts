/**
 * The commands (`agentTrees.*`): each handler checks what its caller passed (a tree id, a view row, or nothing:
 * then the user picks) and returns what it did, for tests and tooling. Kills go through the owner, the runs or
 * the window's terminals; the user is told what ended and what could not be ended.
 */
import * as vscode from 'vscode';
import { AgentDefinition } from '../agents/definition';
import { AgentRun, AgentRuns } from '../agents/runs';
import { KillReport, SweepResult, TreeMembersSource, TreeOwner } from '../proc';
import { Launcher } from './launcher';
import { McpServers, McpWrapper } from './mcp';
import { Picks, terminalName } from './picks';
import { Settings } from './settings';
import { DeadlineStatusBar } from './statusBar';
import { Sweeper } from './sweeper';
import { AgentTerminals } from './terminal';
import { WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';

/** What a kill command returns. */
export interface KillResult {
  signalled: number;
  survivors: number;
}

export interface CommandDeps {
  log: vscode.LogOutputChannel;
  settings: () => Settings;
  owner: TreeOwner;
  runs: AgentRuns;
  launcher: Launcher;
  picks: Picks;
  provider: ProcessTreeProvider;
  source: TreeMembersSource;
  windowTerminals: WindowTerminals;
  terminals: AgentTerminals;
  mcp: McpServers;
  sweeper: Sweeper;
  statusBar: DeadlineStatusBar;
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const { log, owner, runs, picks, provider, windowTerminals, mcp } = deps;
  const graceMs = () => deps.settings().killGraceSeconds * 1000;
  const disposables: vscode.Disposable[] = [];
  // Commands get whatever their caller passes; each handler checks its arguments itself.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const register = (id: string, fn: (...args: any[]) => unknown) => disposables.push(vscode.commands.registerCommand(id, fn));
  /** Tells the user what a kill ended, refreshes the view, and returns the counts. */
  const killed = (name: string, report: KillReport, run?: AgentRun): KillResult => {
    announceKill(name, report, run);
    void provider.refresh();
    return { signalled: report.signalled, survivors: report.survivors };
  };

  register('agentTrees.showLog', () => log.show(true));
  register('agentTrees.refresh', () => {
    provider.invalidateOrphans();
    deps.source.scanSoon();
    return provider.refresh();
  });
  register('agentTrees.launchAgent', async (arg?: AgentDefinition | string) => {
    try {
      if (arg === undefined) return await deps.launcher.pickAndLaunch();
      return (await deps.launcher.launch(arg, { interactive: false })).id;
    } catch (e) {
      const message = (e as Error).message;
      log.error(message);
      void vscode.window.showErrorMessage(message);
      return undefined;
    }
  });
  register('agentTrees.killTree', async (arg?: string | Row) => {
    const target = await picks.killTarget(arg);
    if (!target) return undefined;
    let report: KillReport;
    if (target.run) {
      report = await runs.kill(target.run.id, 'killed');
    } else if (target.windowTree) {
      const { record, ownerPid } = target.windowTree;
      log.info(`tree ${record.id} (${target.name}) of agent-trees run ${ownerPid}: killed from the view`);
      report = await owner.killRecordedTree(record, graceMs(), log);
      mcp.noteKilled(record.id);
    } else {
      report = await windowTerminals.endEverything(target.shellKey!);
    }
    return killed(target.name, report, target.run);
  });
  register('agentTrees.endTerminal', async (arg?: string | Row) => {
    const shellKey = typeof arg === 'string' ? arg : arg?.target.kind === 'terminal' ? arg.target.shellKey : undefined;
    const terminal = shellKey ? windowTerminals.byShellKey(shellKey) : undefined;
    if (!terminal) return undefined;
    const report = await windowTerminals.endEverything(terminal.shell.key);
    return killed(terminalName(terminal.terminal), report);
  });
  register('agentTrees.killProcess', async (row?: Row) => {
    if (row?.target.kind !== 'process') return undefined;
    const p = row.target;
    // Our own trees through their owner (on Windows only it can prove them); others' by the start key alone.
    const report =
      p.top.kind === 'run'
        ? await owner.killProcess(p.pid, p.startKey, graceMs())
        : await owner.killForeignProcess(p.pid, p.startKey, graceMs());
    log.info(`process ${p.pid} and its children: ended ${report.signalled}`);
    return killed(`${p.pid}`, report);
  });
  register('agentTrees.extendTimeout', async (arg?: string | Row, seconds?: number) => {
    const withDeadlines = runs.running().filter((r) => r.deadline !== undefined);
    if (arg === undefined && withDeadlines.length === 0) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No running agent has a timeout'));
      return;
    }
    const run = await picks.run(arg, vscode.l10n.t('Extend the timeout of which agent?'), false, withDeadlines);
    if (!run) return;
    const extra = seconds ?? (await picks.extension());
    if (extra) runs.extend(run.id, extra);
  });
  register('agentTrees.sweepOrphans', async () => {
    const result: SweepResult = await deps.sweeper.sweep('command');
    if (result.killed === 0) void vscode.window.showInformationMessage(vscode.l10n.t('Agent Trees found no orphaned processes'));
    provider.invalidateOrphans();
    void provider.refresh();
    return { trees: result.trees.length, killed: result.killed };
  });
  register('agentTrees.copyMcpWrapper', async (): Promise<McpWrapper> => {
    const wrapper = mcp.wrapper();
    await vscode.env.clipboard.writeText(mcp.wrapperText());
    void vscode.window.showInformationMessage(
      vscode.l10n.t(
        'Copied the "command" and "args" that run an MCP server as an owned tree: in mcp.json, append the server\'s command and arguments to "args", after "--".',
      ),
    );
    return wrapper;
  });
  register('agentTrees.showTerminal', async (arg?: string | Row) => {
    if (typeof arg === 'object' && arg.target.kind === 'terminal') {
      windowTerminals.byShellKey(arg.target.shellKey)?.terminal.show();
      return;
    }
    const run = await picks.run(arg, vscode.l10n.t('Show the terminal of which agent?'), true);
    if (run) deps.terminals.show(run);
  });
  register('agentTrees.deadlineActions', async () => {
    const withDeadlines = deps.statusBar.withDeadlines();
    if (withDeadlines.length === 0) return;
    const run =
      withDeadlines.length === 1 ? withDeadlines[0] : await picks.run(undefined, vscode.l10n.t('Which agent?'), false, withDeadlines);
    if (!run) return;
    const action = await picks.deadlineAction(run);
    if (!action) return;
    if ('kill' in action) announceKill(run.name, await runs.kill(run.id, 'killed'), run);
    else runs.extend(run.id, action.extendSeconds);
  });
  return disposables;
}

/** The notification of a kill: for a run, the line its terminal and the log end with. */
function announceKill(name: string, report: KillReport, run?: AgentRun): void {
  const ended = run
    ? run.endingText(vscode.l10n)
    : report.signalled === 1
      ? vscode.l10n.t('ended 1 process')
      : vscode.l10n.t('ended {0} processes', report.signalled);
  const message =
    report.survivors > 0
      ? vscode.l10n.t('{0}: {1}; {2} could not be ended (see the log)', name, ended, report.survivors)
      : vscode.l10n.t('{0}: {1}', name, ended);
  if (report.survivors > 0) void vscode.window.showWarningMessage(message);
  else void vscode.window.showInformationMessage(message);
}
