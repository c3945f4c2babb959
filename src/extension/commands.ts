/**
 * The commands (`agentTrees.*`), one function each, listed in one table (`COMMANDS`). Each handler checks what its
 * caller passed (a tree id, a view row, or nothing: then the user picks) and returns what it did, for tests and
 * tooling. Kills go through the owner, the runs or the window's terminals; the user is told what ended and what
 * could not be ended.
 */
import * as vscode from 'vscode';
import { AgentDefinition } from '../agents/definition';
import { AgentRun } from '../agents/runs';
import { KillReport, processCount, SweepResult } from '../proc';
import { inBackground } from './background';
import { McpWrapper } from './mcp';
import type { ExtensionParts } from './parts';
import { terminalName } from './picks';
import { Row } from './treeView';

/** What a kill command returns. */
export interface KillResult {
  signalled: number;
  survivors: number;
}

/** What the commands act through. */
export type CommandParts = Pick<
  ExtensionParts,
  | 'log'
  | 'settings'
  | 'owner'
  | 'runs'
  | 'launcher'
  | 'picks'
  | 'provider'
  | 'source'
  | 'windowTerminals'
  | 'terminals'
  | 'mcp'
  | 'sweeper'
  | 'statusBar'
  | 'otherExtensions'
  | 'waiting'
>;

/**
 * A command's handler: the parts, then whatever its caller passed (a palette run passes nothing, a view row passes
 * the row, tests pass ids), which the handler checks itself. `never[]` admits handlers of any argument types.
 */
type Command = (parts: CommandParts, ...args: never[]) => unknown;

/** Every command of package.json's `contributes.commands`, by id. */
const COMMANDS: Record<string, Command> = {
  'agentTrees.showLog': showLog,
  'agentTrees.refresh': refresh,
  'agentTrees.launchAgent': launchAgent,
  'agentTrees.killTree': killTree,
  'agentTrees.endTerminal': endTerminal,
  'agentTrees.killProcess': killProcess,
  'agentTrees.extendTimeout': extendTimeout,
  'agentTrees.sweepOrphans': sweepOrphans,
  'agentTrees.copyMcpWrapper': copyMcpWrapper,
  'agentTrees.showTerminal': showTerminal,
  'agentTrees.deadlineActions': deadlineActions,
  'agentTrees.showWaitingAgent': showWaitingAgent,
};

export function registerCommands(parts: CommandParts): vscode.Disposable[] {
  return Object.entries(COMMANDS).map(([id, handler]) =>
    vscode.commands.registerCommand(id, (...args: unknown[]) => handler(parts, ...(args as never[]))),
  );
}

function showLog({ log }: CommandParts): void {
  log.show(true);
}

function refresh({ provider, source }: CommandParts): Promise<void> {
  provider.invalidateOrphans();
  source.scanSoon();
  return provider.refresh();
}

/** A definition or an agent's name launches at once; without one, the user picks. Returns the tree id. */
async function launchAgent({ launcher, log }: CommandParts, arg?: AgentDefinition | string): Promise<string | undefined> {
  try {
    if (arg === undefined) return await launcher.pickAndLaunch();
    return (await launcher.launch(arg, { interactive: false })).id;
  } catch (e) {
    const message = (e as Error).message;
    log.error(message);
    void vscode.window.showErrorMessage(message);
    return undefined;
  }
}

/**
 * A run, a tree `agent-trees run` keeps in a terminal of this window, everything under a terminal, or processes
 * of another extension (a whole extension's only once the user said yes: `{ confirmed: true }` says it for a caller
 * that asked already).
 */
async function killTree(parts: CommandParts, arg?: string | Row, options?: { confirmed?: boolean }): Promise<KillResult | undefined> {
  const { picks, runs, owner, log, mcp, windowTerminals, otherExtensions } = parts;
  const target = await picks.killTarget(arg);
  if (!target) return undefined;
  let report: KillReport;
  if (target.host) {
    if (target.host.ask && !options?.confirmed && !(await confirmOtherExtension(target.host.ask))) return undefined;
    log.info(`${target.name}: ${target.host.roots.map((r) => r.pid).join(', ')} and their children ended at the user's word`);
    report = await otherExtensions.endProcesses(target.host.roots, target.host.id);
  } else if (target.run) {
    report = await runs.kill(target.run.id, 'killed');
  } else if (target.windowTree) {
    const { record, ownerPid } = target.windowTree;
    log.info(`tree ${record.id} (${target.name}) of agent-trees run ${ownerPid}: killed from the view`);
    report = await owner.killRecordedTree(record, graceMs(parts), log);
    mcp.noteKilled(record.id);
  } else {
    report = await windowTerminals.endEverything(target.shellKey!);
  }
  return killed(parts, target.name, report, target.run);
}

/** Asks before ending another extension's processes: they are its, and it may still need them. */
async function confirmOtherExtension(ask: { extension: string; count: number }): Promise<boolean> {
  const end = vscode.l10n.t('End Them');
  const message =
    ask.count === 1
      ? vscode.l10n.t('End 1 process of {0}?', ask.extension)
      : vscode.l10n.t('End {0} processes of {1}?', ask.count, ask.extension);
  const detail = vscode.l10n.t('They were started by another extension, {0}, which may still be using them.', ask.extension);
  return (await vscode.window.showWarningMessage(message, { modal: true, detail }, end)) === end;
}

async function endTerminal(parts: CommandParts, arg?: string | Row): Promise<KillResult | undefined> {
  const { windowTerminals } = parts;
  const shellKey = typeof arg === 'string' ? arg : arg?.target.kind === 'terminal' ? arg.target.shellKey : undefined;
  const terminal = shellKey ? windowTerminals.byShellKey(shellKey) : undefined;
  if (!terminal) return undefined;
  const report = await windowTerminals.endEverything(terminal.shell.key);
  return killed(parts, terminalName(terminal.terminal), report);
}

async function killProcess(parts: CommandParts, row?: Row): Promise<KillResult | undefined> {
  if (row?.target.kind !== 'process') return undefined;
  const { owner, log, otherExtensions } = parts;
  const p = row.target;
  // Our own trees through their owner (on Windows only it can prove them); another extension's through the host's
  // rules (they share the editor's process group); others' by the start key alone.
  const report =
    p.top.kind === 'run'
      ? await owner.killProcess(p.pid, p.startKey, graceMs(parts))
      : p.top.kind === 'hostExtension'
        ? await otherExtensions.endProcesses([{ pid: p.pid, startKey: p.startKey }], `process-${p.pid}-${p.startKey}`)
        : await owner.killForeignProcess(p.pid, p.startKey, graceMs(parts));
  log.info(`process ${p.pid} and its children: ended ${processCount(report.signalled)}`);
  return killed(parts, `${p.pid}`, report);
}

async function extendTimeout({ runs, picks }: CommandParts, arg?: string | Row, seconds?: number): Promise<void> {
  const withDeadlines = runs.running().filter((r) => r.deadline !== undefined);
  if (arg === undefined && withDeadlines.length === 0) {
    void vscode.window.showInformationMessage(vscode.l10n.t('No running agent has a timeout'));
    return;
  }
  const run = await picks.run(arg, vscode.l10n.t('Extend the timeout of which agent?'), false, withDeadlines);
  if (!run) return;
  const extra = seconds ?? (await picks.extension());
  if (extra) runs.extend(run.id, extra);
}

async function sweepOrphans({ sweeper, provider, log }: CommandParts): Promise<{ trees: number; killed: number }> {
  const result: SweepResult = await sweeper.sweep('command');
  if (result.killed === 0) void vscode.window.showInformationMessage(vscode.l10n.t('Agent Trees found no orphaned processes'));
  provider.invalidateOrphans();
  inBackground(provider.refresh(), log, 'refreshing the view');
  return { trees: result.trees.length, killed: result.killed };
}

async function copyMcpWrapper({ mcp }: CommandParts): Promise<McpWrapper> {
  const wrapper = mcp.wrapper();
  await vscode.env.clipboard.writeText(mcp.wrapperText());
  void vscode.window.showInformationMessage(
    vscode.l10n.t(
      'Copied the "command" and "args" that run an MCP server as an owned tree: in mcp.json, append the server\'s command and arguments to "args", after "--".',
    ),
  );
  return wrapper;
}

/** A terminal row shows its terminal; anything else names a run (or the user picks one) whose terminal opens. */
async function showTerminal({ windowTerminals, picks, terminals }: CommandParts, arg?: string | Row): Promise<void> {
  if (typeof arg === 'object' && arg.target.kind === 'terminal') {
    windowTerminals.byShellKey(arg.target.shellKey)?.terminal.show();
    return;
  }
  const run = await picks.run(arg, vscode.l10n.t('Show the terminal of which agent?'), true);
  if (run) terminals.show(run);
}

/** The status bar's countdown, clicked: extend the nearest deadline's run, or kill it. */
async function deadlineActions({ statusBar, picks, runs }: CommandParts): Promise<void> {
  const withDeadlines = statusBar.withDeadlines();
  if (withDeadlines.length === 0) return;
  const run =
    withDeadlines.length === 1 ? withDeadlines[0] : await picks.run(undefined, vscode.l10n.t('Which agent?'), false, withDeadlines);
  if (!run) return;
  const action = await picks.deadlineAction(run);
  if (!action) return;
  if ('kill' in action) announceKill(run.name, await runs.kill(run.id, 'killed'), run);
  else runs.extend(run.id, action.extendSeconds);
}

/** The waiting count in the status bar, clicked: the terminal of the agent waiting longest; returns its tree id. */
function showWaitingAgent({ waiting }: CommandParts): string | undefined {
  return waiting.showLongestWaiting();
}

function graceMs({ settings }: CommandParts): number {
  return settings().killGraceSeconds * 1000;
}

/** Tells the user what a kill ended, refreshes the view, and returns the counts. */
function killed({ provider, log }: CommandParts, name: string, report: KillReport, run?: AgentRun): KillResult {
  announceKill(name, report, run);
  inBackground(provider.refresh(), log, 'refreshing the view');
  return { signalled: report.signalled, survivors: report.survivors };
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
