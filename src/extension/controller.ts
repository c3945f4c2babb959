/**
 * Wires the extension together: the tree owner for this extension host, agent runs, terminals, the view and its
 * refresh, the status bar, sweeps, the commands and the API. Each part lives in a module of its own; this one
 * builds them in named steps (each step gets only what the steps before it built, so nothing can use a part that
 * does not exist yet), then connects their events, and ends the trees at shutdown or when a newer host takes the
 * window over. Everything that touches processes goes through the core (src/proc).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';
import {
  counted,
  ProcessIdentity,
  processCore,
  processCount,
  TreeMembersSource,
  TreeOwner,
  WATCHDOG_GRACE_MS,
  WindowLease,
  windowKey,
} from '../proc';
import { AgentTreesApi, createApi } from './api';
import { WaitingAgents } from './attention';
import { inBackground } from './background';
import { registerCommands } from './commands';
import { ContextKeys } from './contextKeys';
import { Launcher } from './launcher';
import { McpServers } from './mcp';
import { OtherExtensions } from './otherExtensions';
import { OwnerRecordsReader } from './ownerRecords';
import type { ExtensionParts } from './parts';
import { Picks } from './picks';
import { recordsFolderProblem } from './recordsFolder';
import { RunMembers } from './runMembers';
import { SettingProblems } from './settingProblems';
import { readSettings, Settings } from './settings';
import { DeadlineStatusBar } from './statusBar';
import { Sweeper } from './sweeper';
import { AgentTerminals } from './terminal';
import { WindowTerminals } from './terminalTrees';
import { ActivationFacts, AgentTreesTestHooks, createTestHooks } from './testHooks';
import { ProcessTreeProvider } from './treeView';
import { ViewRefresh } from './viewRefresh';

/** Between the window lease's round trips while only other extensions' processes are at stake. */
const OTHERS_PROBE_MS = 5000;

/** Grace at shutdown: short enough to fit in the ~5 s VS Code gives `deactivate()`. */
const SHUTDOWN_GRACE_MS = 1500;

/** What every step reads: the context, the log, and the settings as last read. */
interface Basics {
  context: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  settings: () => Settings;
}

/** The parts that own, run and read processes (no UI of their own). */
type ProcessParts = Pick<
  ExtensionParts,
  'owner' | 'runs' | 'terminals' | 'windowTerminals' | 'records' | 'source' | 'runMembers' | 'mcp' | 'otherExtensions'
>;

export class AgentTreesController implements vscode.Disposable {
  private readonly log: vscode.LogOutputChannel;
  private settings: Settings;
  private readonly settingProblems: SettingProblems;
  private readonly parts: ExtensionParts;
  private readonly contextKeys: ContextKeys;
  private readonly windowLease: WindowLease;
  /** Why this host cannot keep records (told at activation), or undefined. */
  readonly recordsProblem: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(context: vscode.ExtensionContext, log: vscode.LogOutputChannel) {
    this.log = log;
    this.settings = readSettings();
    this.settingProblems = new SettingProblems(log);
    const basics: Basics = { context, log, settings: () => this.settings };
    const processes = buildProcessParts(basics);
    this.recordsProblem = checkRecordsFolder(processes.owner, log);
    const ui = buildUiParts(basics, processes, { settingProblems: this.settingProblems, recordsProblem: this.recordsProblem });
    this.parts = { log, settings: basics.settings, ...processes, ...ui };
    this.contextKeys = new ContextKeys(this.parts.runs, this.parts.windowTerminals, this.parts.otherExtensions);
    this.windowLease = this.leaseWindow();
    const { terminals, windowTerminals, mcp, provider, source, view, statusBar, sweeper, viewRefresh, waiting, otherExtensions } =
      this.parts;
    this.disposables.push(
      terminals,
      windowTerminals,
      mcp,
      provider,
      source,
      view,
      statusBar,
      sweeper,
      viewRefresh,
      waiting,
      otherExtensions,
    );
    this.connectEvents(this.contextKeys, this.windowLease);
    this.disposables.push(...registerCommands(this.parts));
    this.start();
  }

  /**
   * A host whose window went away without deactivating it (kept alive for the reconnection grace) ends its trees
   * once a newer host of its window starts: see src/proc/owner/windowLease.ts. The window is the one the terminals
   * tag: its id lives in workspaceState, so it survives reloads, and two windows on one workspace share it.
   */
  private leaseWindow(): WindowLease {
    const { owner, windowTerminals } = this.parts;
    const lease = new WindowLease({
      dir: owner.store.dir,
      key: windowKey(windowTerminals.windowId),
      probe: () => vscode.commands.executeCommand('setContext', 'agentTrees.windowAnswers', true),
      onGone: (newer) => inBackground(this.handOver(newer), this.log, `handing the window over to extension host ${newer.pid}`),
      log: this.log,
      table: owner.core.table,
    });
    lease.register();
    return lease;
  }

  /**
   * What each part tells the others: the view and the context keys follow the runs, terminals and settings, and the
   * window lease whether this host owns trees. Given what it connects, so it cannot run before they exist.
   */
  private connectEvents(contextKeys: ContextKeys, windowLease: WindowLease): void {
    const { owner, runs, windowTerminals, viewRefresh, sweeper, mcp, waiting, otherExtensions } = this.parts;
    // The window is watched while this host owns trees (a round trip every second), or other extensions' processes
    // that end with it (every 5 s: a round trip costs the host ~0.8 ms of CPU, and these wait a little longer).
    const owning = () => {
      const trees = owner.list().length > 0;
      windowLease.setActive(trees || otherExtensions.endsSomething(), trees ? undefined : OTHERS_PROBE_MS);
    };
    owner.on('spawned', owning);
    owner.on('ended', owning);
    runs.on('changed', () => {
      contextKeys.update();
      viewRefresh.refreshIfVisible();
    });
    runs.on('finished', () => runs.prune());
    // Nobody asked for a limit's end: it is told as a kill is (the line its terminal and the log end with).
    runs.on('finished', (run: AgentRun) => {
      if (run.state === 'over limit')
        void vscode.window.showWarningMessage(vscode.l10n.t('{0}: {1}', run.name, run.endingText(vscode.l10n)));
    });
    this.disposables.push(
      windowTerminals.onDidChange(() => {
        contextKeys.update();
        viewRefresh.schedule();
      }),
      otherExtensions.onDidChange(() => {
        contextKeys.update();
        owning();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration('agentTrees')) return;
        this.settings = readSettings();
        this.settingProblems.report(this.settings);
        otherExtensions.apply();
        owning();
        sweeper.schedule(this.settings.sweepIntervalSeconds);
        mcp.definitionsMayHaveChanged();
        waiting.applyEnvironment();
        viewRefresh.schedule();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => mcp.definitionsMayHaveChanged()),
      // Trusting the workspace lets its agentTrees.agents launch.
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.settings = readSettings();
        this.log.info('the workspace is trusted now: its agentTrees.agents definitions launch');
        this.settingProblems.report(this.settings);
        mcp.definitionsMayHaveChanged();
      }),
    );
  }

  /** Activation's first moves: bad settings told, the view's first refresh, the activation sweep. */
  private start(): void {
    const { viewRefresh, sweeper, source, owner } = this.parts;
    this.settingProblems.report(this.settings);
    this.contextKeys.update();
    viewRefresh.schedule();
    if (this.settings.sweepOnActivation) sweeper.startup();
    sweeper.schedule(this.settings.sweepIntervalSeconds);
    this.log.info(`Agent Trees activated in extension host ${process.pid}; records in ${owner.store.dir}`);
    // Checked once: without children lists the view reads every process on each refresh (see memberTracker.ts).
    if (process.platform === 'linux' && source.readsEveryProcess()) {
      this.log.warn(
        'this kernel lists no children (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN): the view reads every process on each refresh',
      );
    }
  }

  api(): AgentTreesApi {
    return createApi(this.parts);
  }

  /** The hooks of a development or test host (see testHooks.ts). */
  testHooks(timings: ActivationFacts['timings']): AgentTreesTestHooks {
    return createTestHooks(this.parts, { timings, recordsProblem: this.recordsProblem });
  }

  /**
   * Shutdown (reload or close): plain Node only, since the vscode API is unreliable here. Every owned tree gets
   * a short grace, then SIGKILL; the record is removed.
   */
  async shutdown(): Promise<void> {
    const { windowTerminals, runs, owner } = this.parts;
    windowTerminals.shutdown();
    this.windowLease.dispose();
    runs.dispose();
    const reports = await owner.dispose(SHUTDOWN_GRACE_MS);
    const ended = reports.reduce((n, r) => n + r.signalled, 0);
    if (ended > 0) this.log.info(`shutdown: ended ${processCount(ended)} of ${counted(reports.length, 'tree')}`);
  }

  /** This host's window is gone and a newer host of it runs: its trees end here, as at deactivation. */
  private async handOver(newer: ProcessIdentity): Promise<void> {
    const { owner, runs, otherExtensions } = this.parts;
    const trees = owner.list();
    this.log.warn(
      `window gone: extension host ${newer.pid} now serves this window; ending ${counted(trees.length, 'tree')} and other extensions' processes`,
    );
    // The window is gone, as for a dead owner's watchdog: the same short grace.
    const graceMs = Math.min(this.settings.killGraceSeconds * 1000, WATCHDOG_GRACE_MS);
    const [reports, others] = await Promise.all([
      Promise.all(trees.map((t) => runs.kill(t.record.id, 'killed', graceMs / 1000))),
      otherExtensions.endAll(graceMs),
    ]);
    this.log.info(`handed over: ended ${processCount(reports.reduce((n, r) => n + r.signalled, 0) + others)}`);
  }

  dispose(): void {
    this.windowLease.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The owner of this host's trees, the runs and terminals on it, and what reads their members. */
function buildProcessParts({ context, log, settings }: Basics): ProcessParts {
  const graceMs = () => settings().killGraceSeconds * 1000;
  const dist = (file: string) => path.join(context.extensionPath, 'dist', file);
  const recordsDir = path.join(context.globalStorageUri.fsPath, 'owned-trees');
  // The host may cut deactivate() short (code-server gives it ~0.3 s): what is left is SIGKILLed on exit.
  // If the host dies outright (crash, SIGKILL, the whole editor killed), the watchdog ends its trees.
  const owner = new TreeOwner({
    core: processCore(),
    recordsDir,
    log,
    cgroups: settings().cgroups,
    killTreesOnExit: true,
    watchdog: { cliPath: dist('cli.js'), graceMs: Math.min(graceMs(), WATCHDOG_GRACE_MS) },
  });
  // As early as can be: every process this host starts from now on carries its mark.
  const otherExtensions = new OtherExtensions({ owner, settings, log, self: { id: context.extension.id, folder: context.extensionPath } });
  const runs = new AgentRuns(owner, settings, log);
  const records = new OwnerRecordsReader(owner.store, owner.self);
  const source = new TreeMembersSource(owner.core, { workerScript: dist('cli.js') });
  const liveRecords = () => records.get().live;
  const windowTerminals = new WindowTerminals(context, { log, onClose: () => settings().terminalsOnClose, graceMs, liveRecords });
  windowTerminals.applyEnvironment(recordsDir);
  return {
    owner,
    runs,
    terminals: new AgentTerminals(runs, log),
    windowTerminals,
    records,
    source,
    runMembers: new RunMembers(runs, source),
    mcp: new McpServers({ store: owner.store, cliPath: dist('cli.js'), settings, liveRecords, log }),
    otherExtensions,
  };
}

/** The view, its refresh, the status bar, the sweeps, Launch Agent and the picks. */
function buildUiParts(
  { context, log, settings }: Basics,
  processes: ProcessParts,
  found: { settingProblems: SettingProblems; recordsProblem: string | undefined },
): Omit<ExtensionParts, keyof ProcessParts | 'log' | 'settings'> {
  const { owner, runs, terminals, windowTerminals, records, source, runMembers, mcp, otherExtensions } = processes;
  const later: { viewRefresh?: ViewRefresh } = {};
  const waiting = new WaitingAgents({
    context,
    runs,
    terminals,
    windowTerminals,
    records,
    log,
    settings,
    cliScript: path.join(context.extensionPath, 'dist', 'cli.js'),
    onChange: () => later.viewRefresh?.refreshIfVisible(),
  });
  const provider = new ProcessTreeProvider({
    runs,
    windowTerminals,
    records,
    source,
    showOrphans: () => !settings().sweepOnActivation,
    onError: (m) => log.warn(m),
    mcpServers: () => mcp.servers(),
    otherExtensions,
    windowAttention: (id) => waiting.windowAttention(id),
  });
  const view = vscode.window.createTreeView('agentTrees.processTrees', { treeDataProvider: provider, showCollapseAll: true });
  const viewRefresh = new ViewRefresh({
    view,
    provider,
    source,
    windowTerminals,
    otherExtensions,
    intervalMs: () => settings().refreshIntervalSeconds * 1000,
    log,
  });
  later.viewRefresh = viewRefresh;
  return {
    provider,
    view,
    viewRefresh,
    waiting,
    statusBar: new DeadlineStatusBar(runs, () => settings().timeoutWarningSeconds),
    sweeper: new Sweeper({
      store: owner.store,
      self: owner.self,
      graceMs: () => settings().killGraceSeconds * 1000,
      log,
      cgroups: () => settings().cgroups,
      folderProblemTold: found.recordsProblem !== undefined,
    }),
    launcher: new Launcher(owner, terminals, settings, () => found.settingProblems.report(settings(), true)),
    picks: new Picks({ runs, provider, windowTerminals, mcp, runMembers, otherExtensions }),
  };
}

/**
 * Whether this host can keep records, told once when it cannot: which folder, what is wrong, and what still works.
 * Launches then fail with the same reason (the core starts no tree without a record).
 */
function checkRecordsFolder(owner: TreeOwner, log: vscode.LogOutputChannel): string | undefined {
  const problem = recordsFolderProblem(owner.store);
  if (problem === undefined) return undefined;
  log.error(`${problem}: no agent is launched until records can be kept there; the view and the terminals work as usual`);
  const showLog = vscode.l10n.t('Show Log');
  const message = vscode.l10n.t(
    'Agent Trees cannot keep its records: {0}. No agent is launched until it can (a tree without a record could not be ended after a crash); the view and the terminals work as usual. Fix the folder, then reload the window.',
    problem,
  );
  void vscode.window.showErrorMessage(message, showLog).then((choice) => {
    if (choice === showLog) log.show(true);
  });
  return problem;
}
