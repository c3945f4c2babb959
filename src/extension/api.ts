/**
 * The API object the extension exports (`vscode.extensions.getExtension('agent-trees.agent-trees').exports`), for
 * tests, the benchmark and other extensions: plain data and calls onto what the extension already holds.
 */
import * as vscode from 'vscode';
import { AgentDefinition } from '../agents/definition';
import { AgentRun, AgentRuns } from '../agents/runs';
import { LaunchableAgent } from '../agents/resolveDefinition';
import { MemberInfo, SourceStats, TreeMembersSource } from '../proc';
import { McpServers } from './mcp';
import { RunMembers } from './runMembers';
import { DeadlineStatusBar } from './statusBar';
import { Sweeper } from './sweeper';
import { AgentTerminals, TerminalState } from './terminal';
import { CloseAnswer, TerminalClosing, TerminalQuestion, WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';

/** What `vscode.extensions.getExtension('agent-trees.agent-trees').exports` holds. */
export interface AgentTreesApi {
  /** Version of this API object; bumped when its shape changes. */
  readonly version: 1;
  /** Launches a definition (the `agentTrees.agents` entry shape) or a configured agent by name; returns the tree id. */
  launch(definition: AgentDefinition | string): Promise<string>;
  /**
   * This host's agent runs, running and recently ended, from what the owner knows: no process is read unless a
   * tree's `members` is.
   */
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
  /** What a tree's agent terminal holds, if it has one (for tests and tooling). */
  terminalState(treeId: string): TerminalState | undefined;
  /** How many agent terminals are open (for tests and tooling). */
  terminalCount(): number;
  /** A run's recent output (what its terminal shows when opened), or undefined for an unknown tree. */
  output(treeId: string): string | undefined;
  /**
   * VS Code's MCP client: whether the `kind: "mcp"` agents are provided to it (VS Code 1.101+), and the servers it
   * runs through `agent-trees run` in this window, with their state (the view shows them too).
   */
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
  /**
   * The live members, read when first asked for (for every tree of the same `list()` at once) through the view's
   * member source; none once the run has ended.
   */
  readonly members: ApiMember[];
}

export interface ApiMember {
  pid: number;
  ppid: number;
  command: string;
}

/** What the API object works through. */
export interface ApiParts {
  recordsDir: string;
  launch(definition: AgentDefinition | string): Promise<AgentRun>;
  launchable(): LaunchableAgent[];
  runs: AgentRuns;
  runMembers: RunMembers;
  sweeper: Sweeper;
  statusBar: DeadlineStatusBar;
  windowTerminals: WindowTerminals;
  view: vscode.TreeView<Row>;
  provider: ProcessTreeProvider;
  source: TreeMembersSource;
  terminals: AgentTerminals;
  mcp: McpServers;
}

export function createApi(parts: ApiParts): AgentTreesApi {
  const { runs, provider, windowTerminals, terminals, source, mcp } = parts;
  return {
    version: 1,
    recordsDir: parts.recordsDir,
    launch: async (definition) => (await parts.launch(definition)).id,
    list: () => listTrees(runs, parts.runMembers),
    agents: () => parts.launchable().map(({ definition, from }) => ({ name: definition.name, kind: definition.kind ?? 'agent', from })),
    kill: async (treeId) => {
      const r = await runs.kill(treeId, 'killed');
      return { signalled: r.signalled, survivors: r.survivors };
    },
    sweep: async () => {
      const r = await parts.sweeper.sweep('API');
      return { trees: r.trees.length, killed: r.killed };
    },
    statusBar: () => parts.statusBar.state(),
    windowId: windowTerminals.windowId,
    view: async () => {
      await provider.refresh();
      return provider.currentRows().map(plainRow);
    },
    terminalQuestions: () => windowTerminals.pendingQuestions(),
    answerTerminalQuestion: (id, answer) => windowTerminals.answer(id, answer),
    terminalClosings: () => [...windowTerminals.closings],
    mcp: () => ({
      providing: mcp.providing,
      servers: mcp.servers().map((s) => ({ id: s.id, name: s.name, state: s.state, wrapperPid: s.owner.pid, rootPid: s.tree.rootPid })),
    }),
    terminalState: (treeId) => terminals.state(treeId),
    terminalCount: () => terminals.openCount,
    output: (treeId) => runs.get(treeId)?.output.text(),
    viewRefresh: () => ({ ...source.stats(), visible: parts.view.visible, shown: shownPids(provider.currentRows()) }),
  };
}

/** The runs as the owner knows them; members read only when a tree's `members` is, for all of them at once. */
function listTrees(runs: AgentRuns, runMembers: RunMembers): ApiTree[] {
  let read: Map<string, MemberInfo[]> | undefined;
  const membersOf = (id: string): ApiMember[] =>
    ((read ??= runMembers.now()).get(id) ?? []).map((p) => ({ pid: p.pid, ppid: p.ppid, command: p.command }));
  return runs.list().map((run) => {
    const live = run.live;
    let members: ApiMember[] | undefined;
    return {
      id: run.id,
      name: run.name,
      rootPid: run.tree.record.rootPid,
      pgid: run.tree.record.pgid,
      state: run.state,
      deadline: run.deadline ?? null,
      get members() {
        return (members ??= live ? membersOf(run.id) : []);
      },
    };
  });
}

function plainRow(r: Row): ApiRow {
  return {
    id: r.id,
    label: r.label,
    description: r.description,
    contextValue: r.contextValue,
    target: r.target,
    children: r.children.map(plainRow),
  };
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
