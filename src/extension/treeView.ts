/**
 * The "Process Trees" view: one item per agent run with its live process tree beneath, and, when the automatic
 * sweep is off, a section for orphaned trees of dead owners. Refreshes only while visible; item ids are
 * pid + start time, so expansion and selection survive refreshes; only what changed is fired.
 */
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';
import { MemberInfo, OwnerRecord, ownerState, processTable, RecordStore, TreeMembersSource, TreeRecord } from '../proc';

export type Node = RunNode | ProcessNode | OrphansNode | OrphanNode;

export interface RunNode {
  kind: 'run';
  run: AgentRun;
}
export interface ProcessNode {
  kind: 'process';
  runId: string;
  proc: MemberInfo;
  cpuPercent: number;
  children: ProcessNode[];
  parent: RunNode | ProcessNode;
}
export interface OrphansNode {
  kind: 'orphans';
}
export interface OrphanNode {
  kind: 'orphan';
  owner: OwnerRecord['owner'];
  tree: TreeRecord;
}

interface RunView {
  node: RunNode;
  roots: ProcessNode[];
  count: number;
  cpuPercent: number;
  rssBytes: number;
  signature: string;
}

const ORPHANS_TTL_MS = 10_000;

export function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(0)} MB`;
  return `${Math.round(n / 1024)} KB`;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

const STATE_ICONS: Record<AgentRun['state'], [string, string?]> = {
  running: ['pulse', 'charts.green'],
  exited: ['pass', undefined],
  'timed out': ['watch', 'charts.orange'],
  killed: ['circle-slash', 'charts.red'],
  failed: ['error', 'charts.red'],
};

export class ProcessTreeProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private views = new Map<string, RunView>();
  private runNodes = new Map<string, RunNode>();
  private orphans: OrphanNode[] = [];
  private orphansCache: OrphanNode[] = [];
  private orphansReadAt = 0;
  private readonly orphansNode: OrphansNode = { kind: 'orphans' };
  private topSignature = '';
  private lastCpu = new Map<string, { cpuMs: number; at: number }>();
  private refreshing: Promise<void> | undefined;
  private readonly source: TreeMembersSource;

  constructor(
    private readonly runs: AgentRuns,
    private readonly store: RecordStore,
    private readonly showOrphans: () => boolean,
    workerScript: string | undefined,
    private readonly onError: (message: string) => void,
  ) {
    this.source = new TreeMembersSource(workerScript);
  }

  /** Takes a fresh look at every run and fires changes for what changed. Calls made meanwhile join. */
  refresh(): Promise<void> {
    return (this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined)));
  }

  /** Whether the last refresh ran in the worker thread. */
  get lastInWorker(): boolean {
    return this.source.lastInWorker;
  }

  private async doRefresh(): Promise<void> {
    const runs = this.runs.list().sort((a, b) => Number(b.live) - Number(a.live) || a.startedAt - b.startedAt);
    const live = runs.filter((r) => r.live);
    let result;
    try {
      result = await this.source.query(live.map((r) => ({ ...r.tree.record, continuouslyOwned: true, cgroupVerified: r.tree.record.cgroup !== null })));
    } catch (e) {
      this.onError(`reading the process table failed: ${(e as Error).message}`);
      return;
    }
    const membersById = new Map(result.trees.map((t) => [t.id, t.members]));
    const seenCpu = new Map<string, { cpuMs: number; at: number }>();
    const changed: RunNode[] = [];
    const nextViews = new Map<string, RunView>();
    for (const run of runs) {
      const node = this.runNodes.get(run.id) ?? { kind: 'run', run };
      this.runNodes.set(run.id, node);
      const view = this.buildView(node, membersById.get(run.id) ?? [], result.takenAt, seenCpu);
      const before = this.views.get(run.id);
      if (before && before.signature !== view.signature) changed.push(node);
      nextViews.set(run.id, view);
    }
    for (const id of this.runNodes.keys()) if (!nextViews.has(id)) this.runNodes.delete(id);
    this.views = nextViews;
    this.lastCpu = seenCpu;
    this.orphans = this.showOrphans() ? this.cachedOrphans() : [];
    const top = [...nextViews.keys()].join(',') + '|' + this.orphans.map((o) => o.tree.id).join(',');
    if (top !== this.topSignature) {
      this.topSignature = top;
      this.changeEmitter.fire(undefined);
    } else {
      for (const node of changed) this.changeEmitter.fire(node);
    }
  }

  private buildView(node: RunNode, members: MemberInfo[], takenAt: number, seenCpu: Map<string, { cpuMs: number; at: number }>): RunView {
    const byPid = new Map(members.map((m) => [m.pid, m]));
    const nodes = new Map<number, ProcessNode>();
    let cpuTotal = 0;
    let rssTotal = 0;
    for (const m of members) {
      const key = `${m.pid}:${m.startKey}`;
      const prev = this.lastCpu.get(key);
      const cpuPercent = prev && takenAt > prev.at ? Math.max(0, ((m.cpuMs - prev.cpuMs) / (takenAt - prev.at)) * 100) : 0;
      seenCpu.set(key, { cpuMs: m.cpuMs, at: takenAt });
      cpuTotal += cpuPercent;
      rssTotal += m.rssBytes;
      nodes.set(m.pid, { kind: 'process', runId: node.run.id, proc: m, cpuPercent, children: [], parent: node });
    }
    const roots: ProcessNode[] = [];
    for (const p of nodes.values()) {
      const parent = byPid.has(p.proc.ppid) ? nodes.get(p.proc.ppid) : undefined;
      if (parent && parent !== p) {
        p.parent = parent;
        parent.children.push(p);
      } else {
        roots.push(p);
      }
    }
    const byPidOrder = (a: ProcessNode, b: ProcessNode) => a.proc.startTime - b.proc.startTime || a.proc.pid - b.proc.pid;
    roots.sort(byPidOrder);
    for (const p of nodes.values()) p.children.sort(byPidOrder);
    const run = node.run;
    const signature = [run.state, run.deadline ?? '', run.live, members.length, Math.round(cpuTotal), Math.round(rssTotal / 1048576),
      ...members.map((m) => `${m.pid}:${m.startKey}:${m.ppid}:${Math.round(seenCpu.get(`${m.pid}:${m.startKey}`)!.cpuMs / 100)}:${Math.round(m.rssBytes / 1048576)}`)].join('|');
    return { node, roots, count: members.length, cpuPercent: cpuTotal, rssBytes: rssTotal, signature };
  }

  /** Records change rarely: they are read again at most every ORPHANS_TTL_MS, not on every refresh. */
  private cachedOrphans(): OrphanNode[] {
    if (Date.now() - this.orphansReadAt > ORPHANS_TTL_MS) {
      this.orphansCache = this.findOrphans();
      this.orphansReadAt = Date.now();
    }
    return this.orphansCache;
  }

  /** Forget the cached orphan list (after a sweep, say). */
  invalidateOrphans(): void {
    this.orphansReadAt = 0;
  }

  private findOrphans(): OrphanNode[] {
    const table = processTable();
    const out: OrphanNode[] = [];
    for (const { record } of this.store.list().records) {
      if (record.owner.pid === this.runs.owner.self.pid) continue;
      if (ownerState(table, record.owner.pid, record.owner.startTime) === 'alive') continue;
      for (const tree of record.trees) out.push({ kind: 'orphan', owner: record.owner, tree });
    }
    return out;
  }

  /** Members of a run as the view last saw them. */
  membersOf(runId: string): MemberInfo[] {
    const view = this.views.get(runId);
    if (!view) return [];
    const out: MemberInfo[] = [];
    const walk = (n: ProcessNode) => {
      out.push(n.proc);
      n.children.forEach(walk);
    };
    view.roots.forEach(walk);
    return out;
  }

  orphanCount(): number {
    return this.orphans.length;
  }

  getChildren(element?: Node): Node[] {
    if (!element) {
      const nodes: Node[] = [...this.views.values()].map((v) => v.node);
      if (this.orphans.length > 0) nodes.push(this.orphansNode);
      return nodes;
    }
    switch (element.kind) {
      case 'run':
        return this.views.get(element.run.id)?.roots ?? [];
      case 'process':
        return element.children;
      case 'orphans':
        return this.orphans;
      default:
        return [];
    }
  }

  getParent(element: Node): Node | undefined {
    if (element.kind === 'process') return element.parent;
    if (element.kind === 'orphan') return this.orphansNode;
    return undefined;
  }

  getTreeItem(element: Node): vscode.TreeItem {
    switch (element.kind) {
      case 'run':
        return this.runItem(element);
      case 'process':
        return this.processItem(element);
      case 'orphans': {
        const item = new vscode.TreeItem(vscode.l10n.t('Orphaned trees ({0})', this.orphans.length), vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'orphans';
        item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'));
        item.tooltip = vscode.l10n.t('Trees recorded by windows that are gone. Sweep ends them.');
        item.contextValue = 'orphans';
        return item;
      }
      case 'orphan': {
        const item = new vscode.TreeItem(element.tree.label, vscode.TreeItemCollapsibleState.None);
        item.id = `orphan:${element.tree.id}`;
        item.description = vscode.l10n.t('root {0}, owner {1} (gone)', element.tree.rootPid, element.owner.pid);
        item.tooltip = element.tree.command.join(' ');
        item.iconPath = new vscode.ThemeIcon('debug-disconnect');
        item.contextValue = 'orphan';
        return item;
      }
    }
  }

  private runItem(node: RunNode): vscode.TreeItem {
    const run = node.run;
    const view = this.views.get(run.id);
    const count = view?.count ?? 0;
    const item = new vscode.TreeItem(run.name, count > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    item.id = `run:${run.id}`;
    const parts: string[] = [stateLabel(run)];
    if (run.live && run.deadline) parts.push(vscode.l10n.t('{0} left', formatDuration(run.deadline - Date.now())));
    if (run.live) parts.push(vscode.l10n.t('{0} processes', count), `${(view?.cpuPercent ?? 0).toFixed(0)}% CPU`, formatBytes(view?.rssBytes ?? 0));
    item.description = parts.join(' · ');
    const [icon, color] = STATE_ICONS[run.state];
    item.iconPath = new vscode.ThemeIcon(run.live && run.state !== 'running' ? 'loading~spin' : icon, color ? new vscode.ThemeColor(color) : undefined);
    const tooltip = new vscode.MarkdownString();
    tooltip.appendMarkdown(`**${escape(run.name)}** (${run.kind})\n\n`);
    tooltip.appendCodeblock([run.definition.command, ...(run.definition.args ?? [])].join(' '), 'shell');
    tooltip.appendMarkdown(`\n${vscode.l10n.t('Tree {0} · root pid {1} · group {2} · tier {3}', run.id, run.tree.record.rootPid, run.tree.record.pgid, run.tree.tier)}`);
    if (!run.live || run.state !== 'running') tooltip.appendMarkdown(`\n\n${escape(run.endingText())}`);
    item.tooltip = tooltip;
    item.contextValue = ['agent', run.live ? 'live' : 'ended', run.deadline ? 'deadline' : ''].filter(Boolean).join('.');
    item.command = { command: 'agentTrees.showTerminal', title: vscode.l10n.t('Show Agent Terminal'), arguments: [run.id] };
    return item;
  }

  private processItem(node: ProcessNode): vscode.TreeItem {
    const p = node.proc;
    const label = commandLabel(p.command);
    const item = new vscode.TreeItem(label, node.children.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    item.id = `proc:${node.runId}:${p.pid}:${p.startKey}`;
    item.description = `${p.pid} · ${node.cpuPercent.toFixed(0)}% · ${formatBytes(p.rssBytes)}`;
    item.tooltip = `${p.command}\n\npid ${p.pid} · ppid ${p.ppid} · group ${p.pgid} · session ${p.sid} · state ${p.state}`;
    item.iconPath = new vscode.ThemeIcon(p.state === 'T' ? 'debug-pause' : node.cpuPercent >= 50 ? 'flame' : 'terminal');
    item.contextValue = 'process';
    return item;
  }

  dispose(): void {
    this.source.dispose();
    this.changeEmitter.dispose();
  }
}

function stateLabel(run: AgentRun): string {
  switch (run.state) {
    case 'running':
      return vscode.l10n.t('running');
    case 'exited':
      return run.live ? vscode.l10n.t('exited, ending helpers') : vscode.l10n.t('exited ({0})', run.exitSignal ?? String(run.exitCode));
    case 'timed out':
      return vscode.l10n.t('timed out');
    case 'killed':
      return run.live ? vscode.l10n.t('killing') : vscode.l10n.t('killed');
    case 'failed':
      return vscode.l10n.t('failed');
  }
}

/** The program's name and its first arguments, short enough for a tree row. */
function commandLabel(command: string): string {
  const [exe, ...rest] = command.split(' ');
  const name = exe.split('/').pop() || exe;
  const label = [name, ...rest].join(' ');
  return label.length > 80 ? label.slice(0, 79) + '…' : label;
}

function escape(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
