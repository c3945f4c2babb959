/**
 * What the integration tests and the benchmark look at and drive from inside the extension host: the view's rows
 * and refresh counts, the terminals' close questions, the agent terminals' state. Not part of the API: the
 * exports carry these only when the extension runs for development or tests (`ExtensionMode.Development` or
 * `Test`), as `testHooks`; an installed extension (`Production`) has none.
 */
import * as vscode from 'vscode';
import { HostProcessesRecord, SourceStats } from '../proc';
import type { HookCallOutcome } from '../agents/attentionInbox';
import type { AgentTreesApi } from './api';
import type { AttentionEntry, ShownNotification } from './attention';
import type { ExtensionParts } from './parts';
import type { Settings } from './settings';
import { TerminalState } from './terminal';
import { CloseAnswer, TerminalClosing, TerminalQuestion } from './terminalTrees';
import { Row } from './treeView';

export interface AgentTreesTestHooks {
  /** How long loading the bundle and `activate()` took, in ms. */
  readonly timings: { loadMs?: number; activateMs: number };
  /** Why this host cannot keep records (told at activation), or undefined when it can. */
  recordsProblem(): string | undefined;
  /** The `agentTrees.*` settings as the extension last read them (defaults, deprecated aliases and bad values resolved). */
  settings(): Settings;
  /** What the deadline status bar item shows now. */
  statusBar(): { visible: boolean; text: string; warning: boolean; tooltip: string };
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
   * The view's refresh so far: whether the view is visible, refreshes and full scans, every process read of this
   * extension host (`/proc` files, the snapshot worker's included), and the pids each top row showed at the last
   * refresh (by row id: `run:<tree id>`, `terminal:<shell key>`, ...), without refreshing.
   */
  viewRefresh(): ViewRefreshStats;
  /** What a tree's agent terminal holds, if it has one. */
  terminalState(treeId: string): TerminalState | undefined;
  /** How many agent terminals are open. */
  terminalCount(): number;
  /** A run's recent output (what its terminal shows when opened), or undefined for an unknown tree. */
  output(treeId: string): string | undefined;
  /**
   * Agents waiting for you: every agent with an attention state (the window's `agent-trees run` trees too), the
   * waiting count in the status bar, the notifications shown, and the hook calls taken or refused.
   */
  attention(): AttentionFacts;
  /**
   * Other extensions' processes as last looked at (the view's or the hidden look's), whose each is, and what this
   * host's record names of them; `look()` takes a fresh look first.
   */
  otherExtensions(look?: boolean): Promise<OtherExtensionsState>;
  /**
   * Answers the next Kill Agent Tree quick pick in place of the user: `choose` gets the items it offers and returns
   * the index of the one to pick (undefined: none, as Escape).
   */
  answerKillPick(choose: (items: KillPickItem[]) => number | undefined): void;
}

/** An item of Kill Agent Tree's quick pick, as the user sees it. */
export interface KillPickItem {
  label: string;
  description?: string;
  detail?: string;
}

export interface OtherExtensionsState {
  /** This host's mark (`AGENT_TREES_HOST`), and whether other extensions are tracked (the mode is not "off"). */
  mark: string | undefined;
  enabled: boolean;
  extensions: { id: string; name: string; pids: number[]; left: number[] }[];
  recorded: HostProcessesRecord | undefined;
}

export interface AttentionFacts {
  entries: AttentionEntry[];
  statusBar: { visible: boolean; text: string };
  notifications: ShownNotification[];
  hookCalls: HookCallOutcome[];
  /** The attention folder (in the records folder). */
  folder: string;
}

/** The exports of a development or test host: the API, and the hooks. */
export interface AgentTreesTestExports extends AgentTreesApi {
  readonly testHooks: AgentTreesTestHooks;
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

/** Whether an extension host of this mode gets the hooks: never an installed extension's. */
export function exposesTestHooks(mode: vscode.ExtensionMode): boolean {
  return mode === vscode.ExtensionMode.Test || mode === vscode.ExtensionMode.Development;
}

/** What the hooks look through. */
export type TestHookParts = Pick<
  ExtensionParts,
  | 'settings'
  | 'statusBar'
  | 'view'
  | 'provider'
  | 'source'
  | 'windowTerminals'
  | 'terminals'
  | 'runs'
  | 'waiting'
  | 'otherExtensions'
  | 'picks'
>;

/** What activation measured and found. */
export interface ActivationFacts {
  timings: { loadMs?: number; activateMs: number };
  recordsProblem: string | undefined;
}

export function createTestHooks(parts: TestHookParts, facts: ActivationFacts): AgentTreesTestHooks {
  const { provider, windowTerminals, terminals, source, runs } = parts;
  return {
    timings: facts.timings,
    recordsProblem: () => facts.recordsProblem,
    settings: () => parts.settings(),
    statusBar: () => parts.statusBar.state(),
    view: async () => {
      await provider.refresh();
      return provider.currentRows().map(plainRow);
    },
    terminalQuestions: () => windowTerminals.pendingQuestions(),
    answerTerminalQuestion: (id, answer) => windowTerminals.answer(id, answer),
    terminalClosings: () => [...windowTerminals.closings],
    viewRefresh: () => ({ ...source.stats(), visible: parts.view.visible, shown: shownPids(provider.currentRows()) }),
    terminalState: (treeId) => terminals.state(treeId),
    terminalCount: () => terminals.openCount,
    output: (treeId) => runs.get(treeId)?.output.text(),
    otherExtensions: async (look = false) => {
      const others = parts.otherExtensions;
      if (look) {
        const result = await source.query([], { host: others.query() }, 'test hooks');
        others.observe(result.host, result.takenAt);
      }
      return {
        mark: others.mark,
        enabled: others.enabled,
        extensions: (others.viewInput() ?? []).map((e) => ({
          id: e.id,
          name: e.name,
          pids: e.members.map((p) => p.pid),
          left: e.left.map((p) => p.pid),
        })),
        recorded: others.recorded(),
      };
    },
    answerKillPick: (choose) =>
      parts.picks.answerNextKillPick((items) => choose(items.map(({ label, description, detail }) => ({ label, description, detail })))),
    attention: () => ({
      entries: parts.waiting.entries(),
      statusBar: parts.waiting.statusBar(),
      notifications: [...parts.waiting.shown],
      hookCalls: [...parts.waiting.inbox.outcomes],
      folder: parts.waiting.folder.dir,
    }),
  };
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
