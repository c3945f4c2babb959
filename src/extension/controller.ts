/**
 * Wires the extension together: the tree owner for this extension host, agent runs, terminals, the view, the
 * status bar, sweeps and the commands. Everything that touches processes goes through the core (src/proc).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { AgentDefinition, timeoutSecondsOf, validateDefinition } from '../agents/definition';
import { commandLineDefinition, findAgent, LaunchableAgent, launchableAgents, resolveDefinition } from '../agents/resolveDefinition';
import { AgentRun, AgentRuns } from '../agents/runs';
import {
  KillReport,
  killRecordedTree,
  ProcessIdentity,
  RecordStore,
  RefreshMode,
  SourceStats,
  SpawnError,
  SweepResult,
  TreeMembersSource,
  TreeOwner,
  WATCHDOG_GRACE_MS,
  WindowLease,
  windowKey,
} from '../proc';
import { McpServers, McpWrapper } from './mcp';
import { OwnerRecordsReader } from './ownerRecords';
import { readSettings, Settings } from './settings';
import { DeadlineStatusBar } from './statusBar';
import { Sweeper } from './sweeper';
import { AgentTerminals, TerminalState } from './terminal';
import { CloseAnswer, TerminalClosing, TerminalQuestion, WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';
import { formatDuration } from './viewFormat';
import { launchContext } from './workspace';

/** What `vscode.extensions.getExtension('agent-trees.agent-trees').exports` holds. */
export interface AgentTreesApi {
  /** Version of this API object; bumped when its shape changes. */
  readonly version: 1;
  /** Launches a definition (the `agentTrees.agents` entry shape) or a configured agent by name; returns the tree id. */
  launch(definition: AgentDefinition | string): Promise<string>;
  list(): ApiTree[];
  /**
   * The configured agents Launch Agent offers, and where each is defined: `user` settings or the `workspace`'s. In
   * Restricted Mode only the user's.
   */
  agents(): { name: string; kind: 'agent' | 'mcp'; from: 'user' | 'workspace' }[];
  kill(treeId: string): Promise<{ signalled: number; survivors: number }>;
  sweep(): Promise<{ trees: number; killed: number }>;
  /** Folder of the owned-tree records (one file per extension host). */
  readonly recordsDir: string;
  /** How long loading the bundle and `activate()` took, in ms (set by `activate()`). */
  timings?: { loadMs?: number; activateMs: number };
  /** What the deadline status bar item shows now (for tests and tooling). */
  statusBar(): { visible: boolean; text: string; warning: boolean };
  /** This window's tag: `AGENT_TREES_WINDOW` in the environment of each of its terminals. */
  readonly windowId: string;
  /** The Process Trees view's rows after a fresh look (whether or not the view is visible), as plain data. */
  view(): Promise<ApiRow[]>;
  /** The `agentTrees.terminals.onClose` "ask" notifications still waiting for an answer. */
  terminalQuestions(): TerminalQuestion[];
  /**
   * Answers one as its buttons do: "end" (End Them), "keep" (Keep), "always" (Always End, which also sets
   * `agentTrees.terminals.onClose` to "end"). Resolves once done; undefined when no such question waits.
   */
  answerTerminalQuestion(id: string, answer: CloseAnswer): Promise<TerminalClosing | undefined>;
  /** What happened when each of the last terminals closed (or its shell exited), oldest first. */
  terminalClosings(): TerminalClosing[];
  /**
   * The view's refresh so far (for tests and the benchmark): whether the view is visible, refreshes and full
   * scans, every process read of this extension host (`/proc` files, the snapshot worker's included), and the
   * pids each top row showed at the last refresh (by row id: `run:<tree id>`, `terminal:<shell key>`, ...),
   * without refreshing.
   */
  viewRefresh(): ViewRefreshStats;
  /** Benchmark hook: `'full-scan'` refreshes the view as before member tracking (the baseline); default `'tracked'`. */
  setViewRefreshMode(mode: RefreshMode): void;
  /**
   * VS Code's MCP client: whether the `kind: "mcp"` agents are provided to it (VS Code 1.101+), and the servers it
   * runs through `agent-trees run` in this window, with their state (the view shows them too).
   */
  /** What a tree's agent terminal holds, if it has one (for tests and tooling). */
  terminalState(treeId: string): TerminalState | undefined;
  /** How many agent terminals are open (for tests and tooling). */
  terminalCount(): number;
  /** A run's recent output (what its terminal shows when opened), or undefined for an unknown tree. */
  output(treeId: string): string | undefined;
  mcp(): { providing: boolean; servers: ApiMcpServer[] };
}

export interface ApiMcpServer {
  /** The tree id. */
  id: string;
  name: string;
  state: 'running' | 'stopped' | 'killed';
  /** The `agent-trees run` wrapper VS Code started. */
  wrapperPid: number;
  rootPid: number;
}

export interface ViewRefreshStats extends SourceStats {
  visible: boolean;
  shown: Record<string, number[]>;
}

/** A row of the view: what it shows, its `contextValue`, what its commands act on, and its children. */
export interface ApiRow {
  id: string;
  label: string;
  description?: string;
  contextValue: string;
  target: Row['target'];
  children: ApiRow[];
}

export interface ApiTree {
  id: string;
  name: string;
  rootPid: number;
  pgid: number;
  state: AgentRun['state'];
  /** ms since the epoch, or null without a deadline. */
  deadline: number | null;
  members: { pid: number; ppid: number; command: string }[];
}

/** Grace at shutdown: short enough to fit in the ~5 s VS Code gives `deactivate()`. */
export const SHUTDOWN_GRACE_MS = 1500;
/** While the view is hidden, how often the window's terminals are looked at (what they hold, shells that exited). */
const HIDDEN_TERMINAL_LOOK_MS = 5000;
/** A command started or ended in a terminal: look at it this much later (what it started has started by then). */
const AFTER_COMMAND_LOOK_MS = 1000;

export class AgentTreesController implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly owner: TreeOwner;
  readonly runs: AgentRuns;
  readonly store: RecordStore;
  private settings: Settings;
  private readonly provider: ProcessTreeProvider;
  private readonly view: vscode.TreeView<Row>;
  private readonly statusBar: DeadlineStatusBar;
  private readonly terminals: AgentTerminals;
  private readonly windowTerminals: WindowTerminals;
  private readonly records: OwnerRecordsReader;
  private readonly source: TreeMembersSource;
  private readonly sweeper: Sweeper;
  private readonly mcp: McpServers;
  private readonly windowLease: WindowLease;
  private refreshTimer: NodeJS.Timeout | undefined;
  private commandLook: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private shownAgentErrors = '';
  private readonly contextKeys = new Map<string, boolean>();

  constructor(context: vscode.ExtensionContext, log: vscode.LogOutputChannel) {
    this.log = log;
    this.settings = readSettings();
    const recordsDir = path.join(context.globalStorageUri.fsPath, 'owned-trees');
    fs.mkdirSync(recordsDir, { recursive: true });
    // The host may cut deactivate() short (code-server gives it ~0.3 s): what is left is SIGKILLed on exit.
    // If the host dies outright (crash, SIGKILL, the whole editor killed), the watchdog ends its trees.
    this.owner = new TreeOwner({
      recordsDir, log, cgroups: this.settings.cgroups, killTreesOnExit: true,
      watchdog: { cliPath: path.join(context.extensionPath, 'dist', 'cli.js'), graceMs: Math.min(this.settings.killGraceSeconds * 1000, WATCHDOG_GRACE_MS) },
    });
    this.store = this.owner.store;
    this.runs = new AgentRuns(this.owner, () => this.settings, log);
    this.terminals = new AgentTerminals(this.runs);
    this.records = new OwnerRecordsReader(this.store, this.owner.self);
    this.source = new TreeMembersSource(path.join(context.extensionPath, 'dist', 'snapshotWorker.js'), undefined, this.owner.core);
    this.windowTerminals = new WindowTerminals(context, {
      log,
      onClose: () => this.settings.terminalsOnClose,
      graceMs: () => this.settings.killGraceSeconds * 1000,
      liveRecords: () => this.records.get().live,
      onChanged: () => {
        this.updateContextKeys();
        this.scheduleRefresh();
      },
    });
    this.windowTerminals.applyEnvironment(recordsDir);
    this.mcp = new McpServers(this.store, path.join(context.extensionPath, 'dist', 'cli.js'), () => this.settings, () => this.records.get().live, log);
    this.provider = new ProcessTreeProvider(this.runs, this.windowTerminals, this.records, this.source, () => !this.settings.sweepOnActivation, (m) => log.warn(m),
      () => this.mcp.servers());
    this.view = vscode.window.createTreeView('agentTrees.processTrees', { treeDataProvider: this.provider, showCollapseAll: true });
    this.statusBar = new DeadlineStatusBar(this.runs, () => this.settings.timeoutWarningSeconds);
    this.sweeper = new Sweeper(this.store, this.owner.self, () => this.settings.killGraceSeconds * 1000, log, () => this.settings.cgroups);
    this.disposables.push(this.terminals, this.windowTerminals, this.mcp, this.provider, this.source, this.view, this.statusBar, this.sweeper);
    // A host whose window went away without deactivating it (kept alive for the reconnection grace) ends its
    // trees once a newer host of its window starts: see src/proc/takeover.ts. The window is the one the terminals
    // tag: its id lives in workspaceState, so it survives reloads, and two windows on one workspace share it.
    this.windowLease = new WindowLease({
      dir: recordsDir,
      key: windowKey(this.windowTerminals.windowId),
      probe: () => vscode.commands.executeCommand('setContext', 'agentTrees.windowAnswers', true),
      onGone: (newer) => void this.handOver(newer),
      log,
    });
    this.windowLease.register();
    const owning = () => this.windowLease.setActive(this.owner.list().length > 0);
    this.owner.on('spawned', owning);
    this.owner.on('ended', owning);

    this.runs.on('changed', () => {
      this.updateContextKeys();
      if (this.view.visible) void this.provider.refresh();
    });
    this.runs.on('finished', () => this.runs.prune());
    this.disposables.push(this.view.onDidChangeVisibility(() => this.scheduleRefresh()));
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('agentTrees')) return;
      this.settings = readSettings();
      this.reportSettingProblems();
      this.sweeper.schedule(this.settings.sweepIntervalMinutes);
      this.mcp.definitionsMayHaveChanged();
      this.scheduleRefresh();
    }));
    this.disposables.push(vscode.workspace.onDidChangeWorkspaceFolders(() => this.mcp.definitionsMayHaveChanged()));
    // Trusting the workspace lets its agentTrees.agents launch.
    this.disposables.push(vscode.workspace.onDidGrantWorkspaceTrust(() => {
      this.settings = readSettings();
      this.log.info('the workspace is trusted now: its agentTrees.agents definitions launch');
      this.reportSettingProblems();
      this.mcp.definitionsMayHaveChanged();
    }));
    // Shell integration says when a command starts and ends: a good moment to see what it started.
    const lookSoon = () => {
      if (this.view.visible || this.commandLook) return;
      this.commandLook = setTimeout(() => {
        this.commandLook = undefined;
        void this.lookAtTerminals();
      }, AFTER_COMMAND_LOOK_MS);
    };
    this.disposables.push(vscode.window.onDidStartTerminalShellExecution(lookSoon), vscode.window.onDidEndTerminalShellExecution(lookSoon));
    this.registerCommands();
    this.reportSettingProblems();
    this.scheduleRefresh();

    if (this.settings.sweepOnActivation) this.sweeper.startup();
    this.sweeper.schedule(this.settings.sweepIntervalMinutes);
    log.info(`Agent Trees activated in extension host ${process.pid}; records in ${recordsDir}`);
    // Checked once: without children lists the view reads every process on each refresh (see memberTracker.ts).
    if (process.platform === 'linux' && !this.owner.core.table.listsChildren?.()) {
      log.warn('this kernel lists no children (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN): the view reads every process on each refresh');
    }
  }

  /**
   * Context keys for `when` clauses: `agentTrees.hasRuns` (the welcome view, Show Agent Terminal),
   * `agentTrees.hasLiveRuns` and `agentTrees.hasTerminals` (Kill Agent Tree: its pick lists the window's terminals
   * too) and `agentTrees.hasDeadlines` (Extend Timeout). Set only on change.
   */
  private updateContextKeys(): void {
    const runs = this.runs.list();
    const keys: Record<string, boolean> = {
      'agentTrees.hasTerminals': this.windowTerminals.list().length > 0,
      'agentTrees.hasRuns': runs.length > 0,
      'agentTrees.hasLiveRuns': runs.some((r) => r.live),
      'agentTrees.hasDeadlines': runs.some((r) => r.live && r.deadline !== undefined),
    };
    for (const [key, value] of Object.entries(keys)) {
      if (this.contextKeys.get(key) === value) continue;
      this.contextKeys.set(key, value);
      void vscode.commands.executeCommand('setContext', key, value);
    }
  }

  // ------------------------------------------------------------------------------------------ view refresh

  /**
   * The view refreshes every `refreshIntervalMs` while visible. While hidden, the window's terminals (if any) are
   * still looked at every few seconds and after each command (what a terminal leaves includes what was seen in it
   * while open), not the view.
   */
  private scheduleRefresh(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
    if (this.view.visible) {
      void this.provider.refresh();
      this.refreshTimer = setInterval(() => void this.provider.refresh(), this.settings.refreshIntervalMs);
    } else {
      this.refreshTimer = setInterval(() => void this.lookAtTerminals(), HIDDEN_TERMINAL_LOOK_MS);
    }
  }

  private async lookAtTerminals(): Promise<void> {
    if (this.windowTerminals.list().length === 0) return;
    try {
      const result = await this.source.query([], { terminals: this.windowTerminals.query() }, 'hidden terminals');
      this.windowTerminals.observe(result.terminals);
    } catch (e) {
      this.log.warn(`looking at the terminals failed: ${(e as Error).message}`);
    }
  }

  // ------------------------------------------------------------------------------------------ API

  api(): AgentTreesApi {
    return {
      version: 1,
      recordsDir: this.store.dir,
      launch: async (definition) => this.launch(definition, { interactive: false }).then((run) => run.id),
      list: () => this.listTrees(),
      agents: () => this.launchableAgents().map(({ definition, from }) => ({ name: definition.name, kind: definition.kind ?? 'agent', from })),
      kill: async (treeId) => {
        const r = await this.runs.kill(treeId, 'killed');
        return { signalled: r.signalled, survivors: r.survivors };
      },
      sweep: async () => {
        const r = await this.sweeper.sweep('API');
        return { trees: r.trees.length, killed: r.killed };
      },
      statusBar: () => this.statusBar.state(),
      windowId: this.windowTerminals.windowId,
      view: async () => {
        await this.provider.refresh();
        const plain = (r: Row): ApiRow => ({ id: r.id, label: r.label, description: r.description, contextValue: r.contextValue, target: r.target, children: r.children.map(plain) });
        return this.provider.currentRows().map(plain);
      },
      terminalQuestions: () => this.windowTerminals.pendingQuestions(),
      answerTerminalQuestion: (id, answer) => this.windowTerminals.answer(id, answer),
      terminalClosings: () => [...this.windowTerminals.closings],
      mcp: () => ({
        providing: this.mcp.providing,
        servers: this.mcp.servers().map((s) => ({ id: s.id, name: s.name, state: s.state, wrapperPid: s.owner.pid, rootPid: s.tree.rootPid })),
      }),
      terminalState: (treeId) => this.terminals.state(treeId),
      terminalCount: () => this.terminals.openCount,
      output: (treeId) => this.runs.get(treeId)?.output.text(),
      viewRefresh: () => ({ ...this.source.stats(), visible: this.view.visible, shown: shownPids(this.provider.currentRows()) }),
      setViewRefreshMode: (mode) => {
        this.source.mode = mode;
      },
    };
  }

  private listTrees(): ApiTree[] {
    const snap = this.owner.core.table.snapshot();
    return this.runs.list().map((run) => ({
      id: run.id,
      name: run.name,
      rootPid: run.tree.record.rootPid,
      pgid: run.tree.record.pgid,
      state: run.state,
      deadline: run.deadline ?? null,
      members: run.live ? this.owner.members(run.id, snap).map((p) => ({ pid: p.pid, ppid: p.ppid, command: snap.commandLine(p.pid) })) : [],
    }));
  }

  // ------------------------------------------------------------------------------------------ launching

  /** Resolves a definition or an agent name and launches it. Throws with a message that names what is wrong. */
  async launch(arg: AgentDefinition | string, options: { interactive: boolean }): Promise<AgentRun> {
    let definition: AgentDefinition;
    if (typeof arg === 'string') {
      const lookup = findAgent(arg, this.settings);
      if ('invalid' in lookup) throw new Error(lookup.invalid.message);
      if ('missing' in lookup) {
        throw new Error(
          lookup.missing.restricted
            ? vscode.l10n.t('No agent named "{0}" in the agentTrees.agents of your user settings; in Restricted Mode the workspace\'s definitions do not launch', arg)
            : vscode.l10n.t('No agent named "{0}" in agentTrees.agents', arg),
        );
      }
      definition = lookup.found;
    } else {
      definition = validateDefinition(arg, vscode.l10n.t('agent definition'));
    }
    const resolved = resolveDefinition(definition, launchContext());
    await this.owner.prepare(); // the cgroup probe, if it is still running (never blocking the host)
    try {
      return await this.terminals.launch(resolved.definition, { defaultCwd: resolved.defaultCwd, interactive: options.interactive });
    } catch (e) {
      if (e instanceof SpawnError) throw new Error(vscode.l10n.t('Cannot launch {0}: {1}', definition.name, e.message), { cause: e });
      throw e;
    }
  }

  /** The configured definitions that may launch now, with the settings level each comes from. */
  private launchableAgents(): LaunchableAgent[] {
    return launchableAgents(this.settings);
  }

  private async pickAndLaunch(): Promise<string | undefined> {
    this.reportSettingProblems(true);
    type Item = vscode.QuickPickItem & { definition?: AgentDefinition; commandLine?: true; manageTrust?: true };
    const items: Item[] = this.launchableAgents().map(({ definition: a, from }) => ({
      label: `$(${a.kind === 'mcp' ? 'server-process' : 'hubot'}) ${a.name}`,
      description: [a.command, ...(a.args ?? [])].join(' '),
      detail: [
        // A definition from the workspace runs a command a repository chose: say so.
        ...(from === 'workspace' ? [`$(folder) ${vscode.l10n.t('defined by this workspace')}`] : []),
        timeoutSecondsOf(a, this.settings.defaultTimeoutSeconds) === 0
          ? vscode.l10n.t('no timeout')
          : vscode.l10n.t('timeout {0}', formatDuration(timeoutSecondsOf(a, this.settings.defaultTimeoutSeconds) * 1000)),
      ].join(' · '),
      definition: a,
    }));
    items.push({ label: `$(terminal) ${vscode.l10n.t('Run a command line...')}`, commandLine: true });
    if (!this.settings.workspaceTrusted) {
      items.push({
        label: `$(workspace-untrusted) ${vscode.l10n.t('Restricted Mode: agents defined by this workspace are not offered')}`,
        detail: vscode.l10n.t('Only your user settings\' agentTrees.agents launch until you trust this workspace. Manage Workspace Trust...'),
        manageTrust: true,
      });
    }
    const picked = await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Launch Agent'), placeHolder: vscode.l10n.t('Choose an agent from agentTrees.agents, or run a command line') });
    if (!picked) return undefined;
    if (picked.manageTrust) {
      await vscode.commands.executeCommand('workbench.trust.manage');
      return undefined;
    }
    let definition = picked.definition;
    if (picked.commandLine) {
      const line = await vscode.window.showInputBox({ title: vscode.l10n.t('Run a command line as an owned tree'), prompt: vscode.l10n.t('Runs in a shell; everything it starts is owned'), placeHolder: 'claude --print "fix the tests"' });
      if (!line?.trim()) return undefined;
      definition = commandLineDefinition(line.trim());
    }
    const run = await this.launch(definition!, { interactive: true });
    return run.id;
  }

  // ------------------------------------------------------------------------------------------ commands

  private registerCommands(): void {
    // Commands get whatever their caller passes; each handler checks its arguments itself.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const register = (id: string, fn: (...args: any[]) => unknown) => this.disposables.push(vscode.commands.registerCommand(id, fn));
    register('agentTrees.showLog', () => this.log.show(true));
    register('agentTrees.refresh', () => {
      this.provider.invalidateOrphans();
      this.source.scanSoon();
      return this.provider.refresh();
    });
    register('agentTrees.launchAgent', async (arg?: AgentDefinition | string) => {
      try {
        if (arg === undefined) return await this.pickAndLaunch();
        return (await this.launch(arg, { interactive: false })).id;
      } catch (e) {
        const message = (e as Error).message;
        this.log.error(message);
        void vscode.window.showErrorMessage(message);
        return undefined;
      }
    });
    register('agentTrees.killTree', async (arg?: string | Row) => {
      const target = await this.killTargetFrom(arg);
      if (!target) return undefined;
      let report: KillReport;
      if (target.run) {
        report = await this.runs.kill(target.run.id, 'killed');
      } else if (target.windowTree) {
        this.log.info(`tree ${target.windowTree.record.id} (${target.name}) of agent-trees run ${target.windowTree.ownerPid}: killed from the view`);
        report = await killRecordedTree(target.windowTree.record, this.settings.killGraceSeconds * 1000, this.log, this.owner.core);
        this.mcp.noteKilled(target.windowTree.record.id);
      } else {
        report = await this.windowTerminals.endEverything(target.shellKey!);
      }
      this.announceKill(target.name, report);
      void this.provider.refresh();
      return { signalled: report.signalled, survivors: report.survivors };
    });
    register('agentTrees.endTerminal', async (arg?: string | Row) => {
      const shellKey = typeof arg === 'string' ? arg : arg?.target.kind === 'terminal' ? arg.target.shellKey : undefined;
      const terminal = shellKey ? this.windowTerminals.byShellKey(shellKey) : undefined;
      if (!terminal) return undefined;
      const report = await this.windowTerminals.endEverything(terminal.shell.key);
      this.announceKill(vscode.l10n.t("Terminal '{0}'", terminal.terminal.name), report);
      void this.provider.refresh();
      return { signalled: report.signalled, survivors: report.survivors };
    });
    register('agentTrees.killProcess', async (row?: Row) => {
      if (row?.target.kind !== 'process') return undefined;
      const p = row.target;
      const graceMs = this.settings.killGraceSeconds * 1000;
      // Our own trees through their owner (on Windows only it can prove them); others' by the start key alone.
      const report =
        p.top.kind === 'run'
          ? await this.owner.killProcess(p.pid, p.startKey, graceMs)
          : await this.owner.core.killer.killSubtree(p.pid, p.startKey, { graceMs, continuouslyOwned: false, cgroupVerified: false, log: this.log });
      this.log.info(`process ${p.pid} and its children: ended ${report.signalled}`);
      this.announceKill(`${p.pid}`, report);
      void this.provider.refresh();
      return { signalled: report.signalled, survivors: report.survivors };
    });
    register('agentTrees.extendTimeout', async (arg?: string | Row, seconds?: number) => {
      const withDeadlines = this.runs.running().filter((r) => r.deadline !== undefined);
      if (arg === undefined && withDeadlines.length === 0) {
        void vscode.window.showInformationMessage(vscode.l10n.t('No running agent has a timeout'));
        return;
      }
      const run = await this.runFrom(arg, vscode.l10n.t('Extend the timeout of which agent?'), false, withDeadlines);
      if (!run) return;
      const extra = seconds ?? (await this.pickExtension());
      if (extra) this.runs.extend(run.id, extra);
    });
    register('agentTrees.sweepOrphans', async () => {
      const result: SweepResult = await this.sweeper.sweep('command');
      if (result.killed === 0) void vscode.window.showInformationMessage(vscode.l10n.t('Agent Trees found no orphaned processes'));
      this.provider.invalidateOrphans();
      void this.provider.refresh();
      return { trees: result.trees.length, killed: result.killed };
    });
    register('agentTrees.copyMcpWrapper', async (): Promise<McpWrapper> => {
      const wrapper = this.mcp.wrapper();
      await vscode.env.clipboard.writeText(this.mcp.wrapperText());
      void vscode.window.showInformationMessage(
        vscode.l10n.t('Copied the "command" and "args" that run an MCP server as an owned tree: in mcp.json, append the server\'s command and arguments to "args", after "--".'),
      );
      return wrapper;
    });
    register('agentTrees.showTerminal', async (arg?: string | Row) => {
      if (typeof arg === 'object' && arg.target.kind === 'terminal') {
        this.windowTerminals.byShellKey(arg.target.shellKey)?.terminal.show();
        return;
      }
      const run = await this.runFrom(arg, vscode.l10n.t('Show the terminal of which agent?'), true);
      if (run) this.terminals.show(run);
    });
    register('agentTrees.deadlineActions', async () => {
      const runs = this.statusBar.withDeadlines();
      if (runs.length === 0) return;
      const run = runs.length === 1 ? runs[0] : await this.runFrom(undefined, vscode.l10n.t('Which agent?'), false, runs);
      if (!run) return;
      type Item = vscode.QuickPickItem & { seconds?: number; kill?: true; custom?: true };
      const items: Item[] = [
        { label: `$(add) ${vscode.l10n.t('Extend by 5 minutes')}`, seconds: 300 },
        { label: `$(add) ${vscode.l10n.t('Extend by 15 minutes')}`, seconds: 900 },
        { label: `$(add) ${vscode.l10n.t('Extend by 60 minutes')}`, seconds: 3600 },
        { label: `$(edit) ${vscode.l10n.t('Extend by...')}`, custom: true },
        { label: `$(trash) ${vscode.l10n.t('Kill Agent Tree')}`, kill: true },
      ];
      const picked = await vscode.window.showQuickPick(items, { title: vscode.l10n.t('{0}: killed in {1}', run.name, formatDuration((run.deadline ?? Date.now()) - Date.now())) });
      if (!picked) return;
      if (picked.kill) {
        this.announceKill(run.name, await this.runs.kill(run.id, 'killed'));
      } else {
        const seconds = picked.custom ? await this.askMinutes() : picked.seconds;
        if (seconds) this.runs.extend(run.id, seconds);
      }
    });
  }

  private async pickExtension(): Promise<number | undefined> {
    const items = [
      { label: vscode.l10n.t('5 minutes'), seconds: 300 },
      { label: vscode.l10n.t('15 minutes'), seconds: 900 },
      { label: vscode.l10n.t('60 minutes'), seconds: 3600 },
      { label: vscode.l10n.t('Other...'), seconds: 0 },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Extend the timeout by') });
    if (!picked) return undefined;
    return picked.seconds || this.askMinutes();
  }

  private async askMinutes(): Promise<number | undefined> {
    const text = await vscode.window.showInputBox({
      title: vscode.l10n.t('Extend the timeout by how many minutes?'),
      validateInput: (v) => (/^\d+(\.\d+)?$/.test(v.trim()) && Number(v) > 0 ? undefined : vscode.l10n.t('Enter a number of minutes, more than 0')),
    });
    return text ? Math.round(Number(text) * 60) : undefined;
  }

  /**
   * What "Kill Agent Tree" acts on: a run, a tree `agent-trees run` keeps in one of the window's terminals, or a
   * terminal (everything under it but its shell), named by id or view row, or picked by the user.
   */
  private async killTargetFrom(arg: string | Row | undefined): Promise<{ name: string; run?: AgentRun; windowTree?: ReturnType<ProcessTreeProvider['windowTree']>; shellKey?: string } | undefined> {
    const target = typeof arg === 'object' ? topTarget(arg) : undefined;
    const id = typeof arg === 'string' ? arg : target?.kind === 'run' ? target.runId : target?.kind === 'windowTree' ? target.treeId : undefined;
    if (id !== undefined) {
      const run = this.runs.get(id);
      if (run) return { name: run.name, run };
      const windowTree = this.provider.windowTree(id);
      if (windowTree) return { name: windowTree.record.label, windowTree };
      const terminal = this.windowTerminals.byShellKey(id);
      if (terminal) return { name: vscode.l10n.t("Terminal '{0}'", terminal.terminal.name), shellKey: terminal.shell.key };
      void vscode.window.showErrorMessage(vscode.l10n.t('No agent tree has the id {0}', id));
      return undefined;
    }
    if (target?.kind === 'terminal') {
      const terminal = this.windowTerminals.byShellKey(target.shellKey);
      return terminal && { name: vscode.l10n.t("Terminal '{0}'", terminal.terminal.name), shellKey: terminal.shell.key };
    }
    type Item = vscode.QuickPickItem & { pick: NonNullable<Awaited<ReturnType<AgentTreesController['killTargetFrom']>>> };
    const items: Item[] = this.runs.list().filter((r) => r.live).map((run) => ({
      label: run.name,
      description: vscode.l10n.t('pid {0} · {1} processes', run.tree.record.rootPid, this.provider.processCount(`run:${run.id}`) ?? this.owner.members(run.id).length),
      detail: run.deadline ? vscode.l10n.t('{0} left', formatDuration(run.deadline - Date.now())) : vscode.l10n.t('no timeout'),
      pick: { name: run.name, run },
    }));
    for (const w of this.provider.listWindowTrees()) {
      items.push({
        label: `$(terminal-bash) ${w.record.label}`,
        description: vscode.l10n.t('pid {0} · {1} processes', w.record.rootPid, this.provider.processCount(`window:${w.record.id}`) ?? 0),
        detail:
          (w.record.deadline ? vscode.l10n.t('{0} left', formatDuration(w.record.deadline - Date.now())) + ' · ' : '') +
          (this.mcp.has(w.record.id) ? vscode.l10n.t('MCP server of VS Code') : vscode.l10n.t('agent-trees run in a terminal')),
        pick: { name: w.record.label, windowTree: w },
      });
    }
    for (const t of this.windowTerminals.list()) {
      items.push({
        label: `$(terminal) ${t.terminal.name}`,
        description: vscode.l10n.t('shell {0} · {1} processes', t.shell.pid, this.provider.processCount(`terminal:${t.shell.key}`) ?? 0),
        detail: vscode.l10n.t('Ends everything under this terminal but its shell'),
        pick: { name: vscode.l10n.t("Terminal '{0}'", t.terminal.name), shellKey: t.shell.key },
      });
    }
    if (items.length === 0) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No agent is running'));
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Kill which agent tree?') }))?.pick;
  }

  /** The run an argument names (tree id or view item), or one the user picks. */
  private async runFrom(arg: string | Row | undefined, title: string, includeEnded = false, among?: AgentRun[]): Promise<AgentRun | undefined> {
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
    const items = candidates.map((run) => ({
      label: run.name,
      description: vscode.l10n.t('pid {0} · {1} processes', run.tree.record.rootPid, this.provider.processCount(`run:${run.id}`) ?? this.owner.members(run.id).length),
      detail: run.deadline ? vscode.l10n.t('{0} left', formatDuration(run.deadline - Date.now())) : run.live ? vscode.l10n.t('no timeout') : run.endingText(),
      run,
    }));
    return (await vscode.window.showQuickPick(items, { title }))?.run;
  }

  private announceKill(name: string, report: KillReport): void {
    const message = report.survivors > 0
      ? vscode.l10n.t('{0}: ended {1} processes; {2} could not be ended (see the log)', name, report.signalled, report.survivors)
      : vscode.l10n.t('{0}: ended {1} processes', name, report.signalled);
    if (report.survivors > 0) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
  }

  /** Bad settings get a message naming the entry and the field (once per distinct problem set). */
  private reportSettingProblems(force = false): void {
    const messages = [...this.settings.agentErrors.map((e) => e.message), ...this.settings.problems];
    const key = messages.join('\n');
    for (const m of messages) this.log.warn(m);
    if (this.settings.workspaceAgentsIgnored) this.log.info('Restricted Mode: the agentTrees.agents of the workspace settings are left out until the workspace is trusted');
    if (messages.length === 0 || (!force && key === this.shownAgentErrors)) return;
    this.shownAgentErrors = key;
    for (const m of messages) {
      void vscode.window.showWarningMessage(m, vscode.l10n.t('Open Settings')).then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'agentTrees');
      });
    }
  }

  /**
   * Shutdown (reload or close): plain Node only, since the vscode API is unreliable here. Every owned tree gets
   * a short grace, then SIGKILL; the record is removed.
   */
  async shutdown(): Promise<void> {
    this.windowTerminals.shutdown();
    this.windowLease.dispose();
    this.runs.dispose();
    const reports = await this.owner.dispose(SHUTDOWN_GRACE_MS);
    const ended = reports.reduce((n, r) => n + r.signalled, 0);
    if (ended > 0) this.log.info(`shutdown: ended ${ended} processes of ${reports.length} tree(s)`);
  }

  /** This host's window is gone and a newer host of it runs: its trees end here, as at deactivation. */
  private async handOver(newer: ProcessIdentity): Promise<void> {
    const trees = this.owner.list();
    this.log.warn(`window gone: extension host ${newer.pid} now serves this window; ending ${trees.length} tree(s)`);
    // The window is gone, as for a dead owner's watchdog: the same short grace.
    const graceS = Math.min(this.settings.killGraceSeconds * 1000, WATCHDOG_GRACE_MS) / 1000;
    const reports = await Promise.all(trees.map((t) => this.runs.kill(t.record.id, 'killed', graceS)));
    this.log.info(`handed over: ended ${reports.reduce((n, r) => n + r.signalled, 0)} processes`);
  }

  dispose(): void {
    this.windowLease.dispose();
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    if (this.commandLook) clearTimeout(this.commandLook);
    for (const d of this.disposables) d.dispose();
  }
}

/** The pids of the process rows under each top row. */
function shownPids(rows: Row[]): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const top of rows) {
    const pids: number[] = [];
    const walk = (r: Row) => {
      if (r.target.kind === 'process') pids.push(r.target.pid);
      r.children.forEach(walk);
    };
    top.children.forEach(walk);
    out[top.id] = pids;
  }
  return out;
}

/** The top row a row belongs to: itself, or the run, window tree or terminal a process row sits under. */
function topTarget(row: Row): Row['target'] {
  return row.target.kind === 'process' ? row.target.top : row.target;
}
