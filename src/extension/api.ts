/**
 * The API object the extension exports (`vscode.extensions.getExtension('agent-trees.agent-trees').exports`), for
 * other extensions and tooling: plain data and calls onto what the extension already holds. What only tests and the
 * benchmark need is not here: see testHooks.ts.
 */
import { AgentDefinition } from '../agents/definition';
import { AgentRun, AgentRuns } from '../agents/runs';
import { breachText, BudgetUse, MemberInfo, TreeLimits } from '../proc';
import type { ExtensionParts } from './parts';
import { RunMembers } from './runMembers';

/** What `vscode.extensions.getExtension('agent-trees.agent-trees').exports` holds. */
export interface AgentTreesApi {
  /** Version of this API object; bumped when its shape changes. */
  readonly version: 3;
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
  /** This window's tag: `AGENT_TREES_WINDOW` in the environment of each of its terminals. */
  readonly windowId: string;
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

export interface ApiTree {
  id: string;
  name: string;
  rootPid: number;
  pgid: number;
  state: AgentRun['state'];
  /** ms since the epoch, or null without a deadline. */
  deadline: number | null;
  /** Its limits (`maxMemoryMB`, `maxProcesses`, `idleTimeoutSeconds`; absent ones are none), or null without any. */
  limits: TreeLimits | null;
  /**
   * Where it stands against its limits, as the budget watch last saw it (about once a second): live members,
   * memory in bytes and what it counts (`PSS`, or `RSS` under 80 % of the limit and where PSS cannot be read),
   * seconds idle, and which limits the kernel holds. Null without limits, before the first look, and once ended.
   */
  use: BudgetUse | null;
  /** What ended it when it went past a limit ("memory limit 512 MB exceeded (611 MB)"), else null. */
  limitExceeded: string | null;
  /** Whether the agent waits for someone (its hooks, its terminal's notifications; a key ends a wait). */
  attention: ApiAttention;
  /**
   * The live members, read when first asked for (for every tree of the same `list()` at once) through the view's
   * member source; none once the run has ended.
   */
  readonly members: ApiMember[];
}

export interface ApiAttention {
  /** `ended` once the run is no longer running. */
  state: 'working' | 'waiting' | 'idle' | 'ended';
  /** The agent's own words ("Claude needs your permission"), or null. */
  message: string | null;
  /** What it asks about, when its hook says (a tool and its command), or null. */
  detail: string | null;
  /** When this state began, ms since the epoch. */
  since: number;
  /** What said so: the agent's `hook`, its `terminal` (OSC 9, 777, 99, a bell), or null (a key, or the start). */
  source: 'hook' | 'terminal' | null;
}

export interface ApiMember {
  pid: number;
  ppid: number;
  command: string;
}

/** What the API object works through. */
export type ApiParts = Pick<ExtensionParts, 'owner' | 'launcher' | 'runs' | 'runMembers' | 'sweeper' | 'windowTerminals' | 'mcp'>;

export function createApi(parts: ApiParts): AgentTreesApi {
  const { runs, launcher, mcp } = parts;
  return {
    version: 3,
    recordsDir: parts.owner.store.dir,
    windowId: parts.windowTerminals.windowId,
    launch: async (definition) => (await launcher.launch(definition, { interactive: false })).id,
    list: () => listTrees(runs, parts.runMembers),
    agents: () => launcher.launchable().map(({ definition, from }) => ({ name: definition.name, kind: definition.kind ?? 'agent', from })),
    kill: async (treeId) => {
      const r = await runs.kill(treeId, 'killed');
      return { signalled: r.signalled, survivors: r.survivors };
    },
    sweep: async () => {
      const r = await parts.sweeper.sweep('API');
      return { trees: r.trees.length, killed: r.killed };
    },
    mcp: () => ({
      providing: mcp.providing,
      servers: mcp.servers().map((s) => ({ id: s.id, name: s.name, state: s.state, wrapperPid: s.owner.pid, rootPid: s.tree.rootPid })),
    }),
  };
}

/** The runs as the owner knows them; members read only when a tree's `members` is, for all of them at once. */
function listTrees(runs: AgentRuns, runMembers: RunMembers): ApiTree[] {
  let read: Map<string, MemberInfo[]> | undefined;
  const membersOf = (id: string): ApiMember[] =>
    ((read ??= runMembers.now()).get(id) ?? []).map((p) => ({ pid: p.pid, ppid: p.ppid, command: p.command }));
  return runs.list().map((run) => {
    const live = run.live;
    const owner = runs.owner;
    let members: ApiMember[] | undefined;
    return {
      id: run.id,
      name: run.name,
      rootPid: run.tree.record.rootPid,
      pgid: run.tree.record.pgid,
      state: run.state,
      deadline: run.deadline ?? null,
      limits: run.tree.record.limits ?? null,
      use: (live && owner.budgetUse(run.id)) || null,
      limitExceeded: run.breach ? breachText(run.breach) : null,
      attention: apiAttention(run),
      get members() {
        return (members ??= live ? membersOf(run.id) : []);
      },
    };
  });
}

function apiAttention(run: AgentRun): ApiAttention {
  const a = run.attention.current;
  const running = run.live && run.state === 'running';
  return {
    state: running ? a.state : 'ended',
    message: running ? (a.message ?? null) : null,
    detail: running ? (a.detail ?? null) : null,
    since: running ? a.since : (run.endedAt ?? a.since),
    source: running ? (a.source ?? null) : null,
  };
}
