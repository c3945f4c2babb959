/**
 * The "Process Trees" view: agent runs, trees that `agent-trees run` keeps in this window's terminals, the
 * window's terminals, each with its live process tree beneath, and (when the automatic sweep is off) the
 * orphaned trees of dead owners. The rows come from the pure builder (viewModel.ts); this provider feeds it one
 * snapshot per refresh and hands VS Code only what changed: top rows keep their object across refreshes, and
 * item ids are pid + start time, so expansion and selection survive.
 *
 * Nothing is read while the view is hidden, so the rows VS Code asks for as it is shown come from the refresh that
 * showing starts. And VS Code drops a change of the top rows that comes while its own fetch of them is under way
 * (it keeps the answer of that fetch): so changes are judged against the top rows VS Code last fetched, and fired
 * again until it has fetched them.
 */
import * as vscode from 'vscode';
import { AgentRuns } from '../agents/runs';
import { MemberInfo, recordedTreeQuery, TreeMembersSource, TreeRecord } from '../proc';
import type { McpServerState } from './mcp';
import { OwnerRecordsReader } from './ownerRecords';
import { WindowTerminals } from './terminalTrees';
import { buildView, CpuSamples, OrphanInput, Row, ViewModel, WindowTreeInput } from './viewModel';

export type { Row } from './viewModel';

/** A tree of another live owner of this window, as the view last saw it. */
export interface WindowTree {
  record: TreeRecord;
  ownerPid: number;
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

  constructor(
    private readonly runs: AgentRuns,
    private readonly terminals: WindowTerminals,
    private readonly records: OwnerRecordsReader,
    private readonly source: TreeMembersSource,
    private readonly showOrphans: () => boolean,
    private readonly onError: (message: string) => void,
    private readonly mcpServers: () => McpServerState[] = () => [],
  ) {}

  /** Takes a fresh look at everything shown and fires changes for what changed. Calls made meanwhile join. */
  refresh(): Promise<void> {
    return (this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined)));
  }

  /** Whether the last refresh ran in the worker thread. */
  get lastInWorker(): boolean {
    return this.source.lastInWorker;
  }

  private async doRefresh(): Promise<void> {
    const runs = this.runs.list().sort((a, b) => a.startedAt - b.startedAt);
    const owner = this.runs.owner;
    const queries = runs.filter((r) => r.live).flatMap((r) => owner.queryOf(r.id) ?? []);
    const records = this.records.get();
    const servers = this.mcpServers();
    // The wrappers of VS Code's MCP servers own these: resolved as any other owner's recorded tree.
    for (const s of servers) if (s.state === 'running') queries.push(recordedTreeQuery(s.tree, owner.core));
    let result;
    try {
      result = await this.source.query(queries, { terminals: this.terminals.query(), liveRecords: records.live });
    } catch (e) {
      this.onError(`reading the process table failed: ${(e as Error).message}`);
      return;
    }
    this.terminals.observe(result.terminals);

    const members = new Map<string, MemberInfo[]>();
    for (const t of result.trees) members.set(t.id, t.members);
    for (const t of result.terminals) members.set(t.shellKey, t.members);
    const windowTrees: WindowTreeInput[] = [];
    this.windowTrees = new Map();
    for (const w of result.windowRecords) {
      const record = records.live.find((r) => r.file === w.file)?.record;
      if (!record) continue;
      for (const t of w.trees) {
        const tree = record.trees.find((x) => x.id === t.id);
        if (!tree || t.members.length === 0) continue;
        members.set(tree.id, t.members);
        this.windowTrees.set(tree.id, { record: tree, ownerPid: record.owner.pid });
        windowTrees.push({
          id: tree.id,
          label: tree.label,
          command: tree.command,
          rootPid: tree.rootPid,
          pgid: tree.pgid,
          ownerPid: record.owner.pid,
          deadline: tree.deadline,
          tier: tree.cgroup ? 'cgroup' : 'group',
        });
      }
    }
    for (const s of servers) {
      if (this.windowTrees.has(s.id)) continue;
      const running = s.state === 'running';
      if (running) {
        members.set(s.id, result.trees.find((t) => t.id === s.id)?.members ?? []);
        this.windowTrees.set(s.id, { record: s.tree, ownerPid: s.owner.pid });
      }
      windowTrees.push({
        id: s.id,
        label: s.name,
        command: s.tree.command,
        rootPid: s.tree.rootPid,
        pgid: s.tree.pgid,
        ownerPid: s.owner.pid,
        deadline: s.tree.deadline,
        tier: s.tree.cgroup ? 'cgroup' : 'group',
        mcp: { state: s.state },
      });
    }
    const orphans: OrphanInput[] = this.showOrphans()
      ? records.gone.flatMap(({ record }) =>
          record.trees.map((t) => ({ treeId: t.id, label: t.label, command: t.command, rootPid: t.rootPid, ownerPid: record.owner.pid })),
        )
      : [];
    const model = buildView(
      {
        now: Date.now(),
        takenAt: result.takenAt,
        runs: runs.map((r) => ({
          id: r.id,
          name: r.name,
          kind: r.kind,
          state: r.state,
          live: r.live,
          deadline: r.deadline,
          exitCode: r.exitCode,
          exitSignal: r.exitSignal,
          endingText: r.endingText(vscode.l10n),
          command: [r.definition.command, ...(r.definition.args ?? [])],
          rootPid: r.tree.record.rootPid,
          pgid: r.tree.record.pgid,
          tier: r.tree.tier,
        })),
        windowTrees,
        terminals: this.terminals.list().map((t) => ({ shellKey: t.shell.key, name: t.terminal.name, shellPid: t.shell.pid })),
        orphans,
        members,
        cpu: this.cpu,
      },
      vscode.l10n,
    );
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
    this.records.invalidate();
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
      expandable ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
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
