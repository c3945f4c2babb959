/**
 * Wires the extension together: the tree owner for this extension host, agent runs, terminals, the view and its
 * refresh, the status bar, sweeps, the commands and the API. Each part lives in a module of its own; this one
 * builds them, connects their events, and ends the trees at shutdown or when a newer host takes the window over.
 * Everything that touches processes goes through the core (src/proc).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { AgentRuns } from '../agents/runs';
import { ProcessIdentity, processCore, TreeMembersSource, TreeOwner, WATCHDOG_GRACE_MS, WindowLease, windowKey } from '../proc';
import { AgentTreesApi, createApi } from './api';
import { registerCommands } from './commands';
import { ContextKeys } from './contextKeys';
import { Launcher } from './launcher';
import { McpServers } from './mcp';
import { OwnerRecordsReader } from './ownerRecords';
import { Picks } from './picks';
import { RunMembers } from './runMembers';
import { SettingProblems } from './settingProblems';
import { readSettings, Settings } from './settings';
import { DeadlineStatusBar } from './statusBar';
import { Sweeper } from './sweeper';
import { AgentTerminals } from './terminal';
import { WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';
import { ViewRefresh } from './viewRefresh';

/** The API's type where the tests and the benchmark have imported it from. */

/** Grace at shutdown: short enough to fit in the ~5 s VS Code gives `deactivate()`. */
const SHUTDOWN_GRACE_MS = 1500;

export class AgentTreesController implements vscode.Disposable {
  private readonly log: vscode.LogOutputChannel;
  private readonly owner: TreeOwner;
  private readonly runs: AgentRuns;
  private settings: Settings;
  private readonly settingProblems: SettingProblems;
  private readonly provider: ProcessTreeProvider;
  private readonly view: vscode.TreeView<Row>;
  private readonly viewRefresh: ViewRefresh;
  private readonly statusBar: DeadlineStatusBar;
  private readonly terminals: AgentTerminals;
  private readonly windowTerminals: WindowTerminals;
  private readonly records: OwnerRecordsReader;
  private readonly source: TreeMembersSource;
  private readonly runMembers: RunMembers;
  private readonly sweeper: Sweeper;
  private readonly mcp: McpServers;
  private readonly launcher: Launcher;
  private readonly contextKeys: ContextKeys;
  private readonly windowLease: WindowLease;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(context: vscode.ExtensionContext, log: vscode.LogOutputChannel) {
    this.log = log;
    this.settings = readSettings();
    this.settingProblems = new SettingProblems(log);
    const settings = () => this.settings;
    const graceMs = () => this.settings.killGraceSeconds * 1000;
    const cliPath = path.join(context.extensionPath, 'dist', 'cli.js');
    const recordsDir = path.join(context.globalStorageUri.fsPath, 'owned-trees');
    fs.mkdirSync(recordsDir, { recursive: true });
    // The host may cut deactivate() short (code-server gives it ~0.3 s): what is left is SIGKILLed on exit.
    // If the host dies outright (crash, SIGKILL, the whole editor killed), the watchdog ends its trees.
    this.owner = new TreeOwner({
      core: processCore(),
      recordsDir,
      log,
      cgroups: this.settings.cgroups,
      killTreesOnExit: true,
      watchdog: { cliPath, graceMs: Math.min(graceMs(), WATCHDOG_GRACE_MS) },
    });
    const store = this.owner.store;
    this.runs = new AgentRuns(this.owner, settings, log);
    this.terminals = new AgentTerminals(this.runs);
    this.records = new OwnerRecordsReader(store, this.owner.self);
    this.source = new TreeMembersSource(this.owner.core, { workerScript: path.join(context.extensionPath, 'dist', 'snapshotWorker.js') });
    this.runMembers = new RunMembers(this.runs, this.source);
    this.windowTerminals = new WindowTerminals(context, {
      log,
      onClose: () => this.settings.terminalsOnClose,
      graceMs,
      liveRecords: () => this.records.get().live,
      onChanged: () => {
        this.contextKeys.update();
        this.viewRefresh.schedule();
      },
    });
    this.windowTerminals.applyEnvironment(recordsDir);
    this.contextKeys = new ContextKeys(this.runs, this.windowTerminals);
    this.mcp = new McpServers(store, cliPath, settings, () => this.records.get().live, log);
    this.provider = new ProcessTreeProvider(
      this.runs,
      this.windowTerminals,
      this.records,
      this.source,
      () => !this.settings.sweepOnActivation,
      (m) => log.warn(m),
      () => this.mcp.servers(),
    );
    this.view = vscode.window.createTreeView('agentTrees.processTrees', { treeDataProvider: this.provider, showCollapseAll: true });
    this.statusBar = new DeadlineStatusBar(this.runs, () => this.settings.timeoutWarningSeconds);
    this.sweeper = new Sweeper(store, this.owner.self, graceMs, log, () => this.settings.cgroups);
    this.launcher = new Launcher(this.owner, this.terminals, settings, () => this.settingProblems.report(this.settings, true));
    this.viewRefresh = new ViewRefresh({
      view: this.view,
      provider: this.provider,
      source: this.source,
      windowTerminals: this.windowTerminals,
      intervalMs: () => this.settings.refreshIntervalMs,
      log,
    });
    this.disposables.push(
      this.terminals,
      this.windowTerminals,
      this.mcp,
      this.provider,
      this.source,
      this.view,
      this.statusBar,
      this.sweeper,
      this.viewRefresh,
    );
    // A host whose window went away without deactivating it (kept alive for the reconnection grace) ends its
    // trees once a newer host of its window starts: see src/proc/owner/windowLease.ts. The window is the one the terminals
    // tag: its id lives in workspaceState, so it survives reloads, and two windows on one workspace share it.
    this.windowLease = new WindowLease({
      dir: recordsDir,
      key: windowKey(this.windowTerminals.windowId),
      probe: () => vscode.commands.executeCommand('setContext', 'agentTrees.windowAnswers', true),
      onGone: (newer) => void this.handOver(newer),
      log,
      table: this.owner.core.table,
    });
    this.windowLease.register();
    const owning = () => this.windowLease.setActive(this.owner.list().length > 0);
    this.owner.on('spawned', owning);
    this.owner.on('ended', owning);

    this.runs.on('changed', () => {
      this.contextKeys.update();
      this.viewRefresh.refreshIfVisible();
    });
    this.runs.on('finished', () => this.runs.prune());
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration('agentTrees')) return;
        this.settings = readSettings();
        this.settingProblems.report(this.settings);
        this.sweeper.schedule(this.settings.sweepIntervalMinutes);
        this.mcp.definitionsMayHaveChanged();
        this.viewRefresh.schedule();
      }),
    );
    this.disposables.push(vscode.workspace.onDidChangeWorkspaceFolders(() => this.mcp.definitionsMayHaveChanged()));
    // Trusting the workspace lets its agentTrees.agents launch.
    this.disposables.push(
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.settings = readSettings();
        this.log.info('the workspace is trusted now: its agentTrees.agents definitions launch');
        this.settingProblems.report(this.settings);
        this.mcp.definitionsMayHaveChanged();
      }),
    );
    this.disposables.push(
      ...registerCommands({
        log,
        settings,
        owner: this.owner,
        runs: this.runs,
        launcher: this.launcher,
        picks: new Picks(this.runs, this.provider, this.windowTerminals, this.mcp, this.runMembers),
        provider: this.provider,
        source: this.source,
        windowTerminals: this.windowTerminals,
        terminals: this.terminals,
        mcp: this.mcp,
        sweeper: this.sweeper,
        statusBar: this.statusBar,
      }),
    );
    this.settingProblems.report(this.settings);
    this.viewRefresh.schedule();

    if (this.settings.sweepOnActivation) this.sweeper.startup();
    this.sweeper.schedule(this.settings.sweepIntervalMinutes);
    log.info(`Agent Trees activated in extension host ${process.pid}; records in ${recordsDir}`);
    // Checked once: without children lists the view reads every process on each refresh (see memberTracker.ts).
    if (process.platform === 'linux' && this.source.readsEveryProcess()) {
      log.warn(
        'this kernel lists no children (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN): the view reads every process on each refresh',
      );
    }
  }

  api(): AgentTreesApi {
    return createApi({
      recordsDir: this.owner.store.dir,
      launch: (definition) => this.launcher.launch(definition, { interactive: false }),
      launchable: () => this.launcher.launchable(),
      runs: this.runs,
      runMembers: this.runMembers,
      sweeper: this.sweeper,
      statusBar: this.statusBar,
      windowTerminals: this.windowTerminals,
      view: this.view,
      provider: this.provider,
      source: this.source,
      terminals: this.terminals,
      mcp: this.mcp,
    });
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
    for (const d of this.disposables) d.dispose();
  }
}
