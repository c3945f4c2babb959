/**
 * The "Process Trees" view: agent runs, trees that `agent-trees run` keeps in this window's terminals, the
 * window's terminals, each with its live process tree beneath, and (when the automatic sweep is off) the
 * orphaned trees of dead owners. Each refresh reads one snapshot of the members, builds the view's input from it
 * once (viewInput.ts) and the rows from that (viewModel.ts), both pure, and hands VS Code only what changed: top
 * rows keep their object across refreshes, and item ids are pid + start time, so expansion and selection survive.
 *
 * Nothing is read while the view is hidden, so the rows VS Code asks for as it is shown come from the refresh that
 * showing starts. And VS Code drops a change of the top rows that comes while its own fetch of them is under way
 * (it keeps the answer of that fetch): so changes are judged against the top rows VS Code last fetched, and fired
 * again until it has fetched them.
 */
import * as vscode from 'vscode';
import { AgentRuns } from '../agents/runs';
import { recordedTreeQuery, TreeMembersSource } from '../proc';
import type { AttentionInput } from './attentionView';
import type { McpServerState } from './mcp';
import type { OtherExtensions } from './otherExtensions';
import { OwnerRecordsReader } from './ownerRecords';
import { WindowTerminals } from './terminalTrees';
import { viewInputOf, WindowTree } from './viewInput';
import { buildView, CpuSamples, Row, ViewModel } from './viewModel';

export type { Row } from './viewModel';
export type { WindowTree } from './viewInput';

export interface ProcessTreeProviderOptions {
  runs: AgentRuns;
  windowTerminals: WindowTerminals;
  records: OwnerRecordsReader;
  source: TreeMembersSource;
  /** Whether the orphaned trees are listed (the automatic sweep is off). */
  showOrphans: () => boolean;
  /** A refresh could not read the process table. */
  onError: (message: string) => void;
  /** The MCP servers VS Code runs through the wrapper in this window. */
  mcpServers: () => McpServerState[];
  /** Other extensions' processes of this extension host. */
  otherExtensions: OtherExtensions;
  /** Whether the agent of another owner's tree waits (attention.ts). */
  windowAttention?: (treeId: string) => AttentionInput | undefined;
}

export class ProcessTreeProvider implements vscode.TreeDataProvider<Row>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Row | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private rows: Row[] = [];
  /** The top rows as VS Code last fetched them. */
  private given: Row[] = [];
  private readonly top = new Map<string, Row>();
  private parents = new Map<Row, Row>();
  private cpu: CpuSamples = new Map();
  private model: ViewModel | undefined;
  private windowTrees = new Map<string, WindowTree>();
  private refreshing: Promise<void> | undefined;

  constructor(private readonly options: ProcessTreeProviderOptions) {}

  /** Takes a fresh look at everything shown and fires changes for what changed. Calls made meanwhile join. */
  refresh(): Promise<void> {
    return (this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined)));
  }

  /** Whether the last refresh ran in the worker thread. */
  get lastInWorker(): boolean {
    return this.options.source.lastInWorker;
  }

  /** One snapshot of the members of everything shown, then the view's input from it (viewInput.ts), then the rows. */
  private async doRefresh(): Promise<void> {
    const { runs, windowTerminals, source, otherExtensions } = this.options;
    const owner = runs.owner;
    const runList = runs.list();
    const records = this.options.records.get();
    const mcpServers = this.options.mcpServers();
    const queries = runList.filter((r) => r.live).flatMap((r) => owner.queryOf(r.id) ?? []);
    // The wrappers of VS Code's MCP servers own these: resolved as any other owner's recorded tree.
    for (const s of mcpServers) if (s.state === 'running') queries.push(recordedTreeQuery(s.tree, owner.core));
    let snapshot;
    try {
      snapshot = await source.query(queries, {
        terminals: windowTerminals.query(),
        liveRecords: records.live,
        host: otherExtensions.query(),
      });
    } catch (e) {
      this.options.onError(`reading the process table failed: ${(e as Error).message}`);
      return;
    }
    windowTerminals.observe(snapshot.terminals);
    otherExtensions.observe(snapshot.host, snapshot.takenAt);
    const { input, windowTrees } = viewInputOf({
      now: Date.now(),
      runs: runList,
      snapshot,
      terminals: windowTerminals.list().map((t) => ({ shellKey: t.shell.key, name: t.terminal.name, shellPid: t.shell.pid })),
      liveRecords: records.live,
      orphanRecords: this.options.showOrphans() ? records.gone : [],
      mcpServers,
      otherExtensions: otherExtensions.viewInput(),
      cpu: this.cpu,
      l10n: vscode.l10n,
      budgetUse: (id) => owner.budgetUse(id),
      windowAttention: this.options.windowAttention,
    });
    const model = buildView(input, vscode.l10n);
    this.windowTrees = windowTrees;
    this.cpu = model.cpu;
    this.model = model;
    this.merge(model.rows);
  }

  /** Keeps each top row's object (VS Code knows rows by object), updating those whose signature changed. */
  private merge(rows: Row[]): void {
    const changed: Row[] = [];
    const next: Row[] = [];
    for (const row of rows) {
      const existing = this.top.get(row.id);
      if (!existing) {
        next.push(row);
        continue;
      }
      if (existing.signature !== row.signature) {
        Object.assign(existing, row);
        changed.push(existing);
      }
      next.push(existing);
    }
    const sameTop = next.length === this.given.length && next.every((r, i) => r === this.given[i]);
    this.rows = next;
    this.top.clear();
    for (const r of next) this.top.set(r.id, r);
    this.parents = new Map();
    const walk = (r: Row) => r.children.forEach((c) => (this.parents.set(c, r), walk(c)));
    next.forEach(walk);
    if (!sameTop) this.changeEmitter.fire(undefined);
    else for (const row of changed) this.changeEmitter.fire(row);
  }

  /** The rows as last built, for the API and tests. */
  currentRows(): Row[] {
    return this.rows;
  }

  /** Processes under a top row (`run:<id>`, `window:<id>`, `terminal:<shell key>`) at the last refresh. */
  processCount(topId: string): number | undefined {
    return this.model?.processCount.get(topId);
  }

  /** A tree of another owner of this window, by tree id, as last seen. */
  windowTree(id: string): WindowTree | undefined {
    return this.windowTrees.get(id);
  }

  listWindowTrees(): WindowTree[] {
    return [...this.windowTrees.values()];
  }

  orphanCount(): number {
    return this.rows.find((r) => r.target.kind === 'orphans')?.children.length ?? 0;
  }

  /** Forget the cached records (after a sweep, say). */
  invalidateOrphans(): void {
    this.options.records.invalidate();
  }

  getChildren(element?: Row): Row[] | Promise<Row[]> {
    if (element) return element.children;
    const give = () => (this.given = this.rows);
    return this.refreshing ? this.refreshing.then(give) : give();
  }

  getParent(element: Row): Row | undefined {
    return this.parents.get(element);
  }

  getTreeItem(row: Row): vscode.TreeItem {
    const expandable = row.children.length > 0;
    const item = new vscode.TreeItem(
      row.label,
      !expandable
        ? vscode.TreeItemCollapsibleState.None
        : row.collapsed
          ? vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.Expanded,
    );
    item.id = row.id;
    item.description = row.description;
    if (row.tooltip) item.tooltip = row.tooltip.markdown ? new vscode.MarkdownString(row.tooltip.text) : row.tooltip.text;
    item.iconPath = new vscode.ThemeIcon(row.icon.id, row.icon.color ? new vscode.ThemeColor(row.icon.color) : undefined);
    item.contextValue = row.contextValue;
    if (row.command) item.command = { ...row.command, arguments: [row] };
    return item;
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}
