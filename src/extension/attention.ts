/**
 * Agents waiting for you, where people look: the view marks them and puts them first (attentionView.ts), the
 * status bar counts them and its click shows the terminal of the one waiting longest, and each wait gets one
 * notification with Show Terminal, unless that agent's terminal has the focus. Covers this window's agent runs
 * (their state is kept by src/agents: hooks, terminal sequences, keys) and the trees of `agent-trees run` typed in
 * its terminals (their owner publishes their state in the records folder's attention folder; shown when a live
 * owner of this window records the tree). Also gives the runs their hook channel (the inbox) and the window's
 * terminals `AGENT_TREES_ATTENTION_HOOKS` (whether `agent-trees run` adds hooks).
 */
import * as vscode from 'vscode';
import type { Attention } from '../agents/attention';
import { AttentionFolder, HOOKS_SETTING_VARIABLE, PublishedState } from '../agents/attentionChannel';
import { AttentionInbox } from '../agents/attentionInbox';
import type { AgentRun, AgentRuns } from '../agents/runs';
import { counted, processCore } from '../proc';
import type { OwnerRecordsReader } from './ownerRecords';
import type { Settings } from './settings';
import type { AgentTerminals } from './terminal';
import type { WindowTerminals } from './terminalTrees';
import { escapeMarkdown, notificationText } from './viewFormat';

/** An agent that has an attention state: one of this window's runs, or a tree of an `agent-trees run` in it. */
export interface AttentionEntry {
  /** Tree id. */
  id: string;
  name: string;
  kind: 'run' | 'windowTree';
  attention: Attention;
  /** For a window tree: its `agent-trees run`. */
  ownerPid?: number;
  /** Whether its terminal has the keyboard focus, as the terminal's focus reports said (undefined: none came). */
  focused?: boolean;
}

/** A notification shown for a wait (the last 50, for tests). */
export interface ShownNotification {
  treeId: string;
  text: string;
  at: number;
}

export interface WaitingAgentsDeps {
  context: vscode.ExtensionContext;
  runs: AgentRuns;
  terminals: AgentTerminals;
  windowTerminals: WindowTerminals;
  records: OwnerRecordsReader;
  log: vscode.LogOutputChannel;
  settings: () => Settings;
  /** The bundled CLI, which the hooks run (`agent-trees notify`). */
  cliScript: string;
  /** Something the view shows changed. */
  onChange: () => void;
}

const HAS_WAITING = 'agentTrees.hasWaiting';

export class WaitingAgents implements vscode.Disposable {
  readonly folder: AttentionFolder;
  readonly inbox: AttentionInbox;
  private readonly windowStates = new Map<string, AttentionEntry>();
  /** The waits told (or judged not to be told) per tree: one notification per wait. */
  private readonly told = new Map<string, number>();
  readonly shown: ShownNotification[] = [];
  private readonly item: vscode.StatusBarItem;
  private readPending = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly deps: WaitingAgentsDeps) {
    const { runs, log } = deps;
    this.folder = new AttentionFolder(runs.owner.store.dir, log);
    const startKey = processCore().table.read(process.pid)?.startKey ?? 0;
    this.inbox = new AttentionInbox(this.folder, { pid: process.pid, startKey }, log);
    runs.useHooks({
      inbox: this.inbox,
      notify: { execPath: process.execPath, cliScript: deps.cliScript, electron: !!process.versions.electron },
    });
    this.item = vscode.window.createStatusBarItem('agentTrees.waiting', vscode.StatusBarAlignment.Left, 51);
    this.item.name = vscode.l10n.t('Agent Trees: Agents Waiting for You');
    this.item.command = 'agentTrees.showWaitingAgent';
    const onAttention = (run: AgentRun) => this.changed(run.id);
    const onEnded = (run: AgentRun) => this.changed(run.id);
    runs.on('attention', onAttention);
    runs.on('ended', onEnded);
    this.disposables.push({ dispose: () => (runs.off('attention', onAttention), runs.off('ended', onEnded)) });
    this.folder.on('changed', () => this.readSoon());
    this.applyEnvironment();
    // Right after activation rather than in it: the folder's making, watch and first read are file system work
    // that nothing in activate() waits for (the states written meanwhile are read by readStates).
    const first = setImmediate(() => this.start());
    this.disposables.push({ dispose: () => clearImmediate(first) });
  }

  private start(): void {
    try {
      this.folder.ensure();
      this.folder.watch();
      this.removeLeftovers();
      this.readStates();
    } catch (e) {
      this.deps.log.warn(
        `${(e as Error).message}: agents launched here get no hooks, and agent-trees run in the terminals is not shown waiting`,
      );
    }
  }

  /** `agent-trees run` in this window's terminals adds hooks unless `agentTrees.attention.hooks` is off. */
  applyEnvironment(): void {
    this.deps.context.environmentVariableCollection.replace(HOOKS_SETTING_VARIABLE, this.deps.settings().attentionHooks ? 'on' : 'off');
  }

  /** The agents with an attention state now: live runs, and the window's `agent-trees run` trees that said one. */
  entries(): AttentionEntry[] {
    const runs = this.deps.runs
      .list()
      .filter((r) => r.live && r.state === 'running')
      .map((r): AttentionEntry => ({ id: r.id, name: r.name, kind: 'run', attention: r.attention.current, focused: r.attention.focused }));
    return [...runs, ...this.windowStates.values()];
  }

  /** A window tree's attention state (the view's rows), if its `agent-trees run` said one. */
  windowAttention(treeId: string): Attention | undefined {
    return this.windowStates.get(treeId)?.attention;
  }

  /** The agents waiting, the longest waiting first. */
  waiting(): AttentionEntry[] {
    return this.entries()
      .filter((e) => e.attention.state === 'waiting')
      .sort((a, b) => a.attention.since - b.attention.since);
  }

  private changed(treeId: string): void {
    const entry = this.entries().find((e) => e.id === treeId);
    if (entry) this.maybeNotify(entry);
    this.update();
    this.deps.onChange();
  }

  private update(): void {
    const waiting = this.waiting();
    void vscode.commands.executeCommand('setContext', HAS_WAITING, waiting.length > 0);
    if (waiting.length === 0) {
      this.item.hide();
      return;
    }
    this.item.text = `$(bell-dot) ${waiting.length === 1 ? vscode.l10n.t('1 agent waiting') : vscode.l10n.t('{0} agents waiting', waiting.length)}`;
    const tooltip = new vscode.MarkdownString(`**${vscode.l10n.t('Waiting for you')}**\n\n`);
    for (const e of waiting)
      tooltip.appendMarkdown(`- ${escapeMarkdown(e.name)}${e.attention.message ? `: ${escapeMarkdown(e.attention.message)}` : ''}\n`);
    tooltip.appendMarkdown(`\n${vscode.l10n.t('Click to show the terminal of the one waiting longest.')}`);
    this.item.tooltip = tooltip;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.item.show();
  }

  /** What the status bar item shows now (for tests). */
  statusBar(): { visible: boolean; text: string } {
    const visible = this.waiting().length > 0;
    return { visible, text: visible ? this.item.text : '' };
  }

  /** One notification per wait, and none while that agent's terminal has the focus. */
  private maybeNotify(e: AttentionEntry): void {
    const a = e.attention;
    if (a.state !== 'waiting' || (this.told.get(e.id) ?? 0) >= a.waits) return;
    this.told.set(e.id, a.waits);
    const terminal = this.terminalOf(e);
    if (e.focused ?? (vscode.window.state.focused && terminal !== undefined && vscode.window.activeTerminal === terminal)) {
      this.deps.log.info(`${e.name} (tree ${e.id}) waits; its terminal has the focus: no notification`);
      return;
    }
    const text = a.message
      ? vscode.l10n.t('{0} is waiting for you: {1}', e.name, a.message)
      : vscode.l10n.t('{0} is waiting for you', e.name);
    const full = notificationText(a.detail ? `${text} (${a.detail})` : text);
    this.shown.push({ treeId: e.id, text: full, at: Date.now() });
    if (this.shown.length > 50) this.shown.shift();
    const show = vscode.l10n.t('Show Terminal');
    void vscode.window.showInformationMessage(full, show).then((choice) => {
      if (choice === show) this.showTerminal(e.id);
    });
  }

  /** The terminal an agent runs in: its agent terminal, or the window terminal its `agent-trees run` runs under. */
  private terminalOf(e: AttentionEntry): vscode.Terminal | undefined {
    if (e.kind === 'run') return this.deps.terminals.get(e.id);
    const table = processCore().table;
    const shells = new Map(this.deps.windowTerminals.list().map((t) => [t.shell.pid, t.terminal]));
    const seen = new Set<number>();
    for (let pid = e.ownerPid; pid !== undefined && pid > 1 && !seen.has(pid); pid = table.read(pid)?.ppid) {
      seen.add(pid);
      const t = shells.get(pid);
      if (t) return t;
    }
    return undefined;
  }

  /** Shows an agent's terminal; returns whether there was one to show. */
  showTerminal(treeId: string): boolean {
    const run = this.deps.runs.get(treeId);
    if (run) {
      this.deps.terminals.show(run);
      return true;
    }
    const e = this.windowStates.get(treeId);
    const terminal = e && this.terminalOf(e);
    terminal?.show();
    return terminal !== undefined;
  }

  /** The status bar's click: the terminal of the agent waiting longest. */
  showLongestWaiting(): string | undefined {
    const first = this.waiting()[0];
    if (first) this.showTerminal(first.id);
    return first?.id;
  }

  private readSoon(): void {
    if (this.readPending) return;
    this.readPending = true;
    setImmediate(() => {
      this.readPending = false;
      this.readStates();
    });
  }

  /** The published states of the window's `agent-trees run` trees: a live owner of this window records each. */
  private readStates(): void {
    const windowId = this.deps.windowTerminals.windowId;
    const live = this.deps.records.get().live;
    const table = processCore().table;
    const next = new Map<string, AttentionEntry>();
    for (const found of this.folder.states()) {
      const s: PublishedState | undefined = found.value;
      if (!s) {
        if (found.problem !== 'gone before it was read') this.deps.log.warn(`attention: ${found.file}: ${found.problem}; not shown`);
        continue;
      }
      if (s.window !== windowId || table.read(s.owner.pid)?.startKey !== s.owner.startKey) continue;
      const tree = live.find((r) => r.record.owner.pid === s.owner.pid)?.record.trees.find((t) => t.id === s.tree);
      if (!tree) continue;
      next.set(s.tree, {
        id: s.tree,
        name: tree.label,
        kind: 'windowTree',
        attention: s.attention,
        ownerPid: s.owner.pid,
        focused: s.focused,
      });
    }
    const before = this.windowStates;
    const differs = next.size !== before.size || [...next].some(([id, e]) => JSON.stringify(e) !== JSON.stringify(before.get(id)));
    if (!differs) return;
    this.windowStates.clear();
    for (const [id, e] of next) this.windowStates.set(id, e);
    for (const e of next.values()) this.maybeNotify(e);
    for (const id of this.told.keys()) if (!next.has(id) && !this.deps.runs.get(id)) this.told.delete(id);
    this.update();
    this.deps.onChange();
  }

  /** What owners that are gone left in the attention folder. */
  private removeLeftovers(): void {
    const table = processCore().table;
    const removed = this.folder.removeLeftovers(
      (o) => table.read(o.pid)?.startKey === o.startKey,
      (pid) => table.read(pid) !== undefined,
    );
    if (removed.length) this.deps.log.info(`attention: removed ${counted(removed.length, 'file')} left by owners that are gone`);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.inbox.dispose();
    this.folder.dispose();
    this.item.dispose();
  }
}
