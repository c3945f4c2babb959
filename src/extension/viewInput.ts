/**
 * The view's input, built once per refresh from what the refresh gathered: this host's runs, one snapshot's
 * members, the window's terminals, the live and the gone owners' records, and the MCP servers VS Code runs through
 * the wrapper. Alongside, the window trees the rows stand for (what Kill Agent Tree acts on), from the same records,
 * so the rows and the kill never disagree. Pure: no `vscode`, unit-tested as it is.
 */
import type { AgentRun, Localizer } from '../agents/runs';
import { BudgetUse, MemberInfo, TreeRecord, useOfMembers } from '../proc';
import type { AttentionInput } from './attentionView';
import type { BudgetInput } from './budgetView';
import type { OtherExtensionInput } from './otherExtensionsInput';
import type { CpuSamples, OrphanInput, RunInput, TerminalInput, ViewInput, WindowTreeInput } from './viewModel';

/** A tree of another live owner of this window, as the view last saw it. */
export interface WindowTree {
  record: TreeRecord;
  ownerPid: number;
}

/** What the view reads of a run (an `AgentRun`, or plain data in tests). */
export type RunSource = Pick<
  AgentRun,
  'id' | 'name' | 'kind' | 'state' | 'live' | 'deadline' | 'exitCode' | 'exitSignal' | 'startedAt' | 'endingText'
> & {
  definition: Pick<AgentRun['definition'], 'command' | 'args'>;
  tree: { tier: string; record: Pick<TreeRecord, 'rootPid' | 'pgid' | 'limits'> };
  attention?: Pick<AgentRun['attention'], 'current'>;
};

/** One snapshot's members, as the member source answers a query. */
export interface MembersSnapshot {
  takenAt: number;
  trees: { id: string; members: MemberInfo[] }[];
  terminals: { shellKey: string; members: MemberInfo[] }[];
  /** The live owners' records of this window, with their trees' members. */
  windowRecords: { file: string; trees: { id: string; members: MemberInfo[] }[] }[];
}

/** An owner's record file, as far as the view reads it. */
export interface RecordSource {
  file: string;
  record: { owner: { pid: number }; trees: TreeRecord[] };
}

/** An MCP server VS Code's client runs through `agent-trees run` (its wrapper owns the tree). */
export interface McpServerSource {
  id: string;
  name: string;
  state: 'running' | 'stopped' | 'killed';
  owner: { pid: number };
  tree: TreeRecord;
}

export interface ViewSources {
  now: number;
  runs: RunSource[];
  snapshot: MembersSnapshot;
  terminals: TerminalInput[];
  /** Records of the other live owners (the snapshot says which of them are this window's). */
  liveRecords: RecordSource[];
  /** Records of owners that are gone, listed as orphans: none while the automatic sweep ends them. */
  orphanRecords: RecordSource[];
  mcpServers: McpServerSource[];
  /** Other extensions' processes of this extension host, by extension; undefined when not shown. */
  otherExtensions?: OtherExtensionInput[];
  /** The previous build's CPU samples. */
  cpu: CpuSamples;
  /** Localizes the words of a run's ending line. */
  l10n: Localizer;
  /** Where a run's tree stands against its limits, as its owner's budget watch last saw it. */
  budgetUse?: (runId: string) => BudgetUse | undefined;
  /** Whether the agent of another owner's tree waits, as its `agent-trees run` says. */
  windowAttention?: (treeId: string) => AttentionInput | undefined;
}

export interface ViewInputs {
  input: ViewInput;
  /** The window trees the rows show, by tree id: the running MCP servers among them. */
  windowTrees: Map<string, WindowTree>;
}

/** The view's input and the window trees it shows, from one refresh's sources. */
export function viewInputOf(sources: ViewSources): ViewInputs {
  const { snapshot } = sources;
  const members = new Map<string, MemberInfo[]>();
  for (const t of snapshot.trees) members.set(t.id, t.members);
  for (const t of snapshot.terminals) members.set(t.shellKey, t.members);
  const windowTrees = new Map<string, WindowTree>();
  const windowTreeInputs: WindowTreeInput[] = [];
  for (const { tree, ownerPid, members: treeMembers } of windowRecordTrees(snapshot, sources.liveRecords)) {
    members.set(tree.id, treeMembers);
    windowTrees.set(tree.id, { record: tree, ownerPid });
    const attention = sources.windowAttention?.(tree.id);
    const input = { ...windowTreeInput(tree, ownerPid, tree.label), ...(attention ? { attention } : {}) };
    windowTreeInputs.push(withBudget(input, budgetOf(tree, undefined, treeMembers)));
  }
  for (const server of sources.mcpServers) {
    if (windowTrees.has(server.id)) continue;
    // An ended server stays listed a while, without processes; only a running one is a tree Kill acts on.
    if (server.state === 'running') windowTrees.set(server.id, { record: server.tree, ownerPid: server.owner.pid });
    const input = { ...windowTreeInput(server.tree, server.owner.pid, server.name), mcp: { state: server.state } };
    windowTreeInputs.push(withBudget(input, budgetOf(server.tree, undefined, members.get(server.id))));
  }
  const input: ViewInput = {
    now: sources.now,
    takenAt: snapshot.takenAt,
    runs: [...sources.runs]
      .sort((a, b) => a.startedAt - b.startedAt)
      .map((r) => withBudget(runInputOf(r, sources.l10n), budgetOf(r.tree.record, sources.budgetUse?.(r.id), members.get(r.id)))),
    windowTrees: windowTreeInputs,
    terminals: sources.terminals,
    orphans: sources.orphanRecords.flatMap(orphanInputs),
    members,
    cpu: sources.cpu,
    otherExtensions: sources.otherExtensions,
  };
  return { input, windowTrees };
}

/** The trees of this window's other owners that still have members, with their record's tree and owner. */
function windowRecordTrees(
  snapshot: MembersSnapshot,
  liveRecords: RecordSource[],
): { tree: TreeRecord; ownerPid: number; members: MemberInfo[] }[] {
  return snapshot.windowRecords.flatMap((w) => {
    const record = liveRecords.find((r) => r.file === w.file)?.record;
    if (!record) return [];
    return w.trees.flatMap((t) => {
      const tree = record.trees.find((x) => x.id === t.id);
      return tree && t.members.length > 0 ? [{ tree, ownerPid: record.owner.pid, members: t.members }] : [];
    });
  });
}

function windowTreeInput(tree: TreeRecord, ownerPid: number, label: string): WindowTreeInput {
  return {
    id: tree.id,
    label,
    command: tree.command,
    rootPid: tree.rootPid,
    pgid: tree.pgid,
    ownerPid,
    deadline: tree.deadline,
    tier: tree.cgroup ? 'cgroup' : 'group',
  };
}

function runInputOf(r: RunSource, l10n: Localizer): RunInput {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    state: r.state,
    live: r.live,
    deadline: r.deadline,
    exitCode: r.exitCode,
    exitSignal: r.exitSignal,
    endingText: r.endingText(l10n),
    command: [r.definition.command, ...(r.definition.args ?? [])],
    rootPid: r.tree.record.rootPid,
    pgid: r.tree.record.pgid,
    tier: r.tree.tier,
    ...(r.attention ? { attention: r.attention.current } : {}),
  };
}

/** A row's input with its budget, when it has one. */
function withBudget<T extends object>(input: T, budget: BudgetInput | undefined): T & { budget?: BudgetInput } {
  return budget ? { ...input, budget } : input;
}

/** A limited tree's limits and use: its owner's figures where it has them, else what its members show. */
function budgetOf(record: Pick<TreeRecord, 'limits'>, use: BudgetUse | undefined, members: MemberInfo[] = []): BudgetInput | undefined {
  return record.limits ? { limits: record.limits, use: use ?? useOfMembers(members) } : undefined;
}

function orphanInputs({ record }: RecordSource): OrphanInput[] {
  return record.trees.map((t) => ({ treeId: t.id, label: t.label, command: t.command, rootPid: t.rootPid, ownerPid: record.owner.pid }));
}
