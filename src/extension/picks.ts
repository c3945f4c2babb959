/**
 * What a command acts on when it is not told: the quick picks and input boxes of Kill Agent Tree, Extend Timeout,
 * Show Agent Terminal and the status bar's deadline menu, and the run or tree an argument (a tree id or a view
 * row) names.
 */
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';
import { MemberInfo, ProcessIdentity } from '../proc';
import { McpServers } from './mcp';
import { OtherExtensions } from './otherExtensions';
import { RunMembers } from './runMembers';
import { WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row, WindowTree } from './treeView';
import { commandLabel, formatDuration } from './viewFormat';

/** What "Kill Agent Tree" acts on: a run, a tree `agent-trees run` keeps in one of the window's terminals, or a terminal. */
export interface KillChoice {
  name: string;
  run?: AgentRun;
  windowTree?: WindowTree;
  /** A terminal: everything under it but its shell. */
  shellKey?: string;
  /** Processes of other extensions, each with its descendants; `ask`: a whole extension's, asked before ending. */
  host?: { id: string; roots: ProcessIdentity[]; ask?: { extension: string; count: number } };
}

/** "pid 120 · 4 processes" for a pick. */
const pidAndCount = (pid: number, n: number) =>
  n === 1 ? vscode.l10n.t('pid {0} · 1 process', pid) : vscode.l10n.t('pid {0} · {1} processes', pid, n);

/** "shell 200 · 4 processes" for a pick. */
const shellAndCount = (pid: number, n: number) =>
  n === 1 ? vscode.l10n.t('shell {0} · 1 process', pid) : vscode.l10n.t('shell {0} · {1} processes', pid, n);

/** What the status bar's deadline menu chose for a run. */
export type DeadlineAction = { kill: true } | { extendSeconds: number };

export interface PicksOptions {
  runs: AgentRuns;
  /** The view: the window trees it shows and its process counts. */
  provider: ProcessTreeProvider;
  windowTerminals: WindowTerminals;
  mcp: McpServers;
  /** Counts a run's processes the view has not counted. */
  runMembers: RunMembers;
  otherExtensions: OtherExtensions;
}

export class Picks {
  private readonly runs: AgentRuns;
  private readonly provider: ProcessTreeProvider;
  private readonly windowTerminals: WindowTerminals;
  private readonly mcp: McpServers;
  private readonly runMembers: RunMembers;
  private readonly otherExtensions: OtherExtensions;
  private killPickAnswer: ((items: readonly vscode.QuickPickItem[]) => number | undefined) | undefined;

  constructor(options: PicksOptions) {
    this.otherExtensions = options.otherExtensions;
    this.runs = options.runs;
    this.provider = options.provider;
    this.windowTerminals = options.windowTerminals;
    this.mcp = options.mcp;
    this.runMembers = options.runMembers;
  }

  /** The kill target an argument names (tree id or view row), or one the user picks. */
  async killTarget(arg: string | Row | undefined): Promise<KillChoice | undefined> {
    const target = typeof arg === 'object' ? topTarget(arg) : undefined;
    const id =
      typeof arg === 'string' ? arg : target?.kind === 'run' ? target.runId : target?.kind === 'windowTree' ? target.treeId : undefined;
    if (id !== undefined) {
      const run = this.runs.get(id);
      if (run) return { name: run.name, run };
      const windowTree = this.provider.windowTree(id);
      if (windowTree) return { name: windowTree.record.label, windowTree };
      const terminal = this.windowTerminals.byShellKey(id);
      if (terminal) return { name: terminalName(terminal.terminal), shellKey: terminal.shell.key };
      void vscode.window.showErrorMessage(vscode.l10n.t('No agent tree has the id {0}', id));
      return undefined;
    }
    if (target?.kind === 'terminal') {
      const terminal = this.windowTerminals.byShellKey(target.shellKey);
      return terminal && { name: terminalName(terminal.terminal), shellKey: terminal.shell.key };
    }
    if (target?.kind === 'hostExtension' || target?.kind === 'hostLeftovers') return this.hostChoice(target);
    type Item = vscode.QuickPickItem & { pick: KillChoice };
    const count = this.processCounter();
    const items: Item[] = this.runs
      .list()
      .filter((r) => r.live)
      .map((run) => ({
        label: run.name,
        description: pidAndCount(run.tree.record.rootPid, count(run)),
        detail: run.deadline ? vscode.l10n.t('{0} left', formatDuration(run.deadline - Date.now())) : vscode.l10n.t('no timeout'),
        pick: { name: run.name, run },
      }));
    for (const w of this.provider.listWindowTrees()) {
      items.push({
        label: `$(terminal-bash) ${w.record.label}`,
        description: pidAndCount(w.record.rootPid, this.provider.processCount(`window:${w.record.id}`) ?? 0),
        detail:
          (w.record.deadline ? vscode.l10n.t('{0} left', formatDuration(w.record.deadline - Date.now())) + ' · ' : '') +
          (this.mcp.has(w.record.id) ? vscode.l10n.t('MCP server of VS Code') : vscode.l10n.t('agent-trees run in a terminal')),
        pick: { name: w.record.label, windowTree: w },
      });
    }
    items.push(...this.hostItems());
    for (const t of this.windowTerminals.list()) {
      items.push({
        label: `$(terminal) ${t.terminal.name}`,
        description: shellAndCount(t.shell.pid, this.provider.processCount(`terminal:${t.shell.key}`) ?? 0),
        detail: vscode.l10n.t('Ends everything under this terminal but its shell'),
        pick: { name: terminalName(t.terminal), shellKey: t.shell.key },
      });
    }
    if (items.length === 0) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No agent is running'));
      return undefined;
    }
    const answer = this.killPickAnswer;
    this.killPickAnswer = undefined;
    if (answer) return items[answer(items) ?? -1]?.pick;
    return (await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Kill which agent tree?') }))?.pick;
  }

  /** Tests only (testHooks.ts): answers the next Kill Agent Tree pick, given what it offers, in place of the user. */
  answerNextKillPick(answer: (items: readonly vscode.QuickPickItem[]) => number | undefined): void {
    this.killPickAnswer = answer;
  }

  /** A whole extension's processes (asked before ending), or what its exited processes left. */
  private hostChoice(target: { kind: 'hostExtension' | 'hostLeftovers'; extensionId: string }): KillChoice | undefined {
    const which = target.kind === 'hostLeftovers' ? 'left' : 'all';
    const roots = this.otherExtensions.rootsOf(target.extensionId, which);
    if (roots.length === 0) return undefined;
    const extension = this.otherExtensions.nameOf(target.extensionId);
    const count = this.provider.processCount(`host${which === 'left' ? 'Left' : 'Extension'}:${target.extensionId}`) ?? roots.length;
    const name = which === 'left' ? vscode.l10n.t('What {0} left', extension) : extension;
    return { name, host: { id: `host-${which}-${target.extensionId}`, roots, ...(which === 'all' ? { ask: { extension, count } } : {}) } };
  }

  /** Each process tree of another extension (a child of this host, or what an exited one left), for the pick. */
  private hostItems(): (vscode.QuickPickItem & { pick: KillChoice })[] {
    const items: (vscode.QuickPickItem & { pick: KillChoice })[] = [];
    for (const e of this.otherExtensions.viewInput() ?? []) {
      const all = [...e.members, ...e.left];
      const pids = new Set(all.map((p) => p.pid));
      for (const root of all.filter((p) => !pids.has(p.ppid))) {
        const count = 1 + descendantsIn(all, root.pid);
        const label = commandLabel(root.command);
        items.push({
          label: `$(extensions) ${label}`,
          description: pidAndCount(root.pid, count),
          detail: vscode.l10n.t('Started by the extension {0}', e.name),
          pick: {
            name: `${e.name}: ${label}`,
            host: { id: `process-${root.pid}-${root.startKey}`, roots: [{ pid: root.pid, startKey: root.startKey }] },
          },
        });
      }
    }
    return items;
  }

  /** The run an argument names (tree id or view row), or one the user picks among `among` (default: the live runs). */
  async run(arg: string | Row | undefined, title: string, includeEnded = false, among?: AgentRun[]): Promise<AgentRun | undefined> {
    if (typeof arg === 'string') {
      const run = this.runs.get(arg);
      if (!run) void vscode.window.showErrorMessage(vscode.l10n.t('No agent tree has the id {0}', arg));
      return run;
    }
    const target = arg && topTarget(arg);
    if (target?.kind === 'run') return this.runs.get(target.runId);
    if (arg) return undefined;
    const candidates = among ?? this.runs.list().filter((r) => includeEnded || r.live);
    if (candidates.length === 0) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No agent is running'));
      return undefined;
    }
    const count = this.processCounter();
    const items = candidates.map((run) => ({
      label: run.name,
      description: pidAndCount(run.tree.record.rootPid, count(run)),
      detail: run.deadline
        ? vscode.l10n.t('{0} left', formatDuration(run.deadline - Date.now()))
        : run.live
          ? vscode.l10n.t('no timeout')
          : run.endingText(vscode.l10n),
      run,
    }));
    return (await vscode.window.showQuickPick(items, { title }))?.run;
  }

  /** How much longer a run may take, in seconds: 5, 15 or 60 minutes, or a number of minutes typed. */
  async extension(): Promise<number | undefined> {
    const items = [
      { label: vscode.l10n.t('5 minutes'), seconds: 300 },
      { label: vscode.l10n.t('15 minutes'), seconds: 900 },
      { label: vscode.l10n.t('60 minutes'), seconds: 3600 },
      { label: vscode.l10n.t('Other...'), seconds: 0 },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Extend the timeout by') });
    if (!picked) return undefined;
    return picked.seconds || this.minutes();
  }

  /** The status bar's menu for a run with a deadline: extend it, or kill the tree. */
  async deadlineAction(run: AgentRun): Promise<DeadlineAction | undefined> {
    type Item = vscode.QuickPickItem & { seconds?: number; kill?: true; custom?: true };
    const items: Item[] = [
      { label: `$(add) ${vscode.l10n.t('Extend by 5 minutes')}`, seconds: 300 },
      { label: `$(add) ${vscode.l10n.t('Extend by 15 minutes')}`, seconds: 900 },
      { label: `$(add) ${vscode.l10n.t('Extend by 60 minutes')}`, seconds: 3600 },
      { label: `$(edit) ${vscode.l10n.t('Extend by...')}`, custom: true },
      { label: `$(trash) ${vscode.l10n.t('Kill Agent Tree')}`, kill: true },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      title: vscode.l10n.t('{0}: killed in {1}', run.name, formatDuration((run.deadline ?? Date.now()) - Date.now())),
    });
    if (!picked) return undefined;
    if (picked.kill) return { kill: true };
    const seconds = picked.custom ? await this.minutes() : picked.seconds;
    return seconds ? { extendSeconds: seconds } : undefined;
  }

  /** A number of minutes the user types, in seconds. */
  private async minutes(): Promise<number | undefined> {
    const text = await vscode.window.showInputBox({
      title: vscode.l10n.t('Extend the timeout by how many minutes?'),
      validateInput: (v) =>
        /^\d+(\.\d+)?$/.test(v.trim()) && Number(v) > 0 ? undefined : vscode.l10n.t('Enter a number of minutes, more than 0'),
    });
    return text ? Math.round(Number(text) * 60) : undefined;
  }

  /** A run's process count: as the view last saw it, else read (once for all runs of this pick). */
  private processCounter(): (run: AgentRun) => number {
    let read: Map<string, MemberInfo[]> | undefined;
    return (run) => this.provider.processCount(`run:${run.id}`) ?? (read ??= this.runMembers.now()).get(run.id)?.length ?? 0;
  }
}

/** How a terminal is named in messages and picks. */
export function terminalName(terminal: vscode.Terminal): string {
  return vscode.l10n.t("Terminal '{0}'", terminal.name);
}

/** The top row a row belongs to: itself, or the run, window tree or terminal a process row sits under. */
function topTarget(row: Row): Row['target'] {
  return row.target.kind === 'process' ? row.target.top : row.target;
}

/** How many of `list` descend from `pid`, by parent links. */
function descendantsIn(list: MemberInfo[], pid: number): number {
  const children = new Map<number, number[]>();
  for (const p of list) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  let n = 0;
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.pop()!;
    n++;
    queue.push(...(children.get(next) ?? []));
  }
  return n;
}
