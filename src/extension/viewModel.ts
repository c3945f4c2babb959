/**
 * The Process Trees view as plain data: from the runs, the window's terminals, the trees other owners of this
 * window run (`agent-trees run` in a terminal), the orphaned trees and one snapshot's members, the rows the view
 * shows, with their labels, icons, `contextValue`s (what the menus key on) and a signature per top row (so the
 * view fires only what changed). Pure: no `vscode`, so it is unit-tested as it is; strings go through the
 * `l10n` passed in (`vscode.l10n` in the extension).
 */
import type { Localizer, RunState } from '../agents/runs';
import { formatBytes, MemberInfo } from '../proc';
import { AttentionInput, attentionShown, waitingFirst } from './attentionView';
import { BudgetInput, budgetSizeParts, budgetTooltip, nearLimit, NEAR_LIMIT_ICON } from './budgetView';
import type { OtherExtensionInput } from './otherExtensionsInput';
import { commandLabel, escapeMarkdown, formatDuration } from './viewFormat';

export type { Localizer } from '../agents/runs';

/** An agent run of this extension host. */
export interface RunInput {
  id: string;
  name: string;
  kind: 'agent' | 'mcp';
  state: RunState;
  /** Whether its tree still has members. */
  live: boolean;
  deadline?: number;
  exitCode?: number | null;
  exitSignal?: string | null;
  /** How it ended, one line. */
  endingText: string;
  command: string[];
  rootPid: number;
  pgid: number;
  tier: string;
  /** Its limits and use, when it has limits. */
  budget?: BudgetInput;
  /** Whether it waits for someone (src/agents/attention.ts). */
  attention?: AttentionInput;
}

/**
 * A tree another live owner of this window records: an `agent-trees run` typed in one of its terminals, or the
 * wrapper of an MCP server VS Code's MCP client runs (`mcp`, which stays listed a while after it ended).
 */
export interface WindowTreeInput {
  id: string;
  label: string;
  command: string[];
  rootPid: number;
  pgid: number;
  ownerPid: number;
  deadline?: number;
  tier: string;
  mcp?: { state: 'running' | 'stopped' | 'killed' };
  /** Its limits (from its record) and its use as its members show it, when it has limits. */
  budget?: BudgetInput;
  /** Whether its agent waits for someone, as its `agent-trees run` says. */
  attention?: AttentionInput;
}

/** One of the window's terminals with a shell process. */
export interface TerminalInput {
  shellKey: string;
  name: string;
  shellPid: number;
}

/** A tree of an owner that is gone (listed when the automatic sweep is off). */
export interface OrphanInput {
  treeId: string;
  label: string;
  command: string[];
  rootPid: number;
  ownerPid: number;
}

/** CPU time seen per process (`pid:startKey`), to turn the next snapshot's CPU time into a percentage. */
export type CpuSamples = Map<string, { cpuMs: number; at: number }>;

export interface ViewInput {
  now: number;
  /** When the members were read. */
  takenAt: number;
  runs: RunInput[];
  windowTrees: WindowTreeInput[];
  terminals: TerminalInput[];
  orphans: OrphanInput[];
  /** Members by run id, window tree id, or terminal shell key. */
  members: Map<string, MemberInfo[]>;
  /** The previous build's samples. */
  cpu: CpuSamples;
  /** Other extensions' processes of this extension host, by extension (otherExtensionsInput.ts); undefined: not shown. */
  otherExtensions?: OtherExtensionInput[];
}

/** What a top row with processes beneath stands for. */
export type TopTarget =
  | { kind: 'run'; runId: string }
  | { kind: 'windowTree'; treeId: string; ownerPid: number }
  | { kind: 'terminal'; shellKey: string; shellPid: number }
  | { kind: 'hostExtension'; extensionId: string };

/** What a row's commands act on. A process row names the top row it sits under too. */
export type RowTarget =
  | TopTarget
  | { kind: 'process'; pid: number; startKey: number; top: TopTarget }
  | { kind: 'orphans' }
  | { kind: 'orphan'; treeId: string }
  | { kind: 'otherExtensions' }
  | { kind: 'hostLeftovers'; extensionId: string };

export interface Row {
  /** The TreeItem id: unique in the view, stable across refreshes (pid + start time for processes). */
  id: string;
  target: RowTarget;
  label: string;
  description?: string;
  tooltip?: { text: string; markdown: boolean };
  icon: { id: string; color?: string };
  contextValue: string;
  children: Row[];
  /** Run on a click. */
  command?: { command: string; title: string };
  /** Top rows only: changes whenever anything this row or its subtree shows changes. */
  signature: string;
  /** Shown collapsed until opened (rows with children are shown open otherwise). */
  collapsed?: boolean;
}

export interface ViewModel {
  rows: Row[];
  cpu: CpuSamples;
  /** The process rows of each top row's subtree, depth first (what "Kill Agent Tree" counts). */
  processCount: Map<string, number>;
}

const STATE_ICONS: Record<RunState, [string, string?]> = {
  running: ['pulse', 'charts.green'],
  exited: ['pass', undefined],
  'timed out': ['watch', 'charts.orange'],
  killed: ['circle-slash', 'charts.red'],
  'over limit': ['dashboard', 'charts.red'],
  failed: ['error', 'charts.red'],
};

/** What every row builder of one build shares: the input, the samples and counts it fills, and the strings. */
interface Build {
  input: ViewInput;
  l10n: Localizer;
  /** This build's CPU samples (the next build's `input.cpu`). */
  cpu: CpuSamples;
  processCount: Map<string, number>;
}

/** Builds every row of the view. */
export function buildView(input: ViewInput, l10n: Localizer): ViewModel {
  const build: Build = { input, l10n, cpu: new Map(), processCount: new Map() };
  const agents: { row: Row; waitingSince?: number }[] = [];
  const runs = [...input.runs].sort((a, b) => Number(b.live) - Number(a.live));
  for (const run of runs) {
    const id = `run:${run.id}`;
    const tree = subtree(build, { topId: id, top: { kind: 'run', runId: run.id }, members: run.live ? membersOf(input, run.id) : [] });
    agents.push({
      row: runRow(id, run, tree, build),
      waitingSince: waitingSince(run.live && run.state === 'running', run.attention, l10n),
    });
  }
  for (const t of input.windowTrees) {
    const id = `window:${t.id}`;
    const top: TopTarget = { kind: 'windowTree', treeId: t.id, ownerPid: t.ownerPid };
    const row = windowTreeRow(id, t, subtree(build, { topId: id, top, members: membersOf(input, t.id) }), build);
    agents.push({ row, waitingSince: waitingSince(!t.mcp, t.attention, l10n) });
  }
  const rows: Row[] = waitingFirst(agents);
  for (const t of input.terminals) {
    const id = `terminal:${t.shellKey}`;
    const top: TopTarget = { kind: 'terminal', shellKey: t.shellKey, shellPid: t.shellPid };
    rows.push(terminalRow(id, t, subtree(build, { topId: id, top, members: membersOf(input, t.shellKey) }), build.l10n));
  }
  if (input.otherExtensions?.length) rows.push(otherExtensionsRow(input.otherExtensions, build));
  if (input.orphans.length > 0) rows.push(orphansRow(input.orphans, l10n));
  return { rows, cpu: build.cpu, processCount: build.processCount };
}

/** When a running agent's wait began, if it waits. */
function waitingSince(running: boolean, attention: AttentionInput | undefined, l10n: Localizer): number | undefined {
  return running ? attentionShown(attention, l10n).waitingSince : undefined;
}

function membersOf(input: ViewInput, key: string): MemberInfo[] {
  return input.members.get(key) ?? [];
}

/** How many processes, how much CPU (% of a core) and memory. */
type Size = Pick<Subtree, 'count' | 'cpuPercent' | 'rssBytes'>;

interface Subtree {
  roots: Row[];
  count: number;
  cpuPercent: number;
  rssBytes: number;
  signature: string;
}

/** The processes under one top row. */
interface SubtreeSpec {
  topId: string;
  top: TopTarget;
  members: MemberInfo[];
}

/** The process rows of a top row's subtree, by parent links, counted into `build.processCount`. */
function subtree(build: Build, spec: SubtreeSpec): Subtree {
  build.processCount.set(spec.topId, spec.members.length);
  return processRows(spec, build);
}

/** A process and its row, while the subtree is put together. */
interface ProcessEntry {
  row: Row;
  proc: MemberInfo;
}

function processRows({ topId, top, members }: SubtreeSpec, build: Build): Subtree {
  const { input, cpu, l10n } = build;
  const byPid = new Map<number, ProcessEntry>();
  let cpuTotal = 0;
  let rssTotal = 0;
  const parts: string[] = [];
  for (const m of members) {
    const key = `${m.pid}:${m.startKey}`;
    const prev = input.cpu.get(key);
    const cpuPercent = prev && input.takenAt > prev.at ? Math.max(0, ((m.cpuMs - prev.cpuMs) / (input.takenAt - prev.at)) * 100) : 0;
    cpu.set(key, { cpuMs: m.cpuMs, at: input.takenAt });
    cpuTotal += cpuPercent;
    rssTotal += m.rssBytes;
    // The command too: an exec keeps the pid, the start time and often the size, and the row must follow it.
    parts.push(`${key}:${m.ppid}:${Math.round(m.cpuMs / 100)}:${Math.round(m.rssBytes / 1048576)}:${m.command}`);
    byPid.set(m.pid, { proc: m, row: processRow(`proc:${topId}:${key}`, m, { top, cpuPercent }, l10n) });
  }
  return {
    roots: linkByParent(byPid),
    count: members.length,
    cpuPercent: cpuTotal,
    rssBytes: rssTotal,
    signature: [members.length, Math.round(cpuTotal), Math.round(rssTotal / 1048576), ...parts.sort()].join('|'),
  };
}

function processRow(id: string, m: MemberInfo, at: { top: TopTarget; cpuPercent: number }, l10n: Localizer): Row {
  return {
    id,
    target: { kind: 'process', pid: m.pid, startKey: m.startKey, top: at.top },
    label: commandLabel(m.command),
    description: `${m.pid} · ${at.cpuPercent.toFixed(0)}% · ${formatBytes(m.rssBytes)}`,
    tooltip: {
      text: `${m.command}\n\n${l10n.t('pid {0} · ppid {1} · group {2} · session {3} · state {4}', m.pid, m.ppid, m.pgid, m.sid, m.state)}`,
      markdown: false,
    },
    icon: { id: m.state === 'T' ? 'debug-pause' : at.cpuPercent >= 50 ? 'flame' : 'terminal' },
    contextValue: 'process',
    children: [],
    signature: '',
  };
}

/** Hangs each process row under its parent's (ordered by start time); returns the rows without a parent among them. */
function linkByParent(byPid: Map<number, ProcessEntry>): Row[] {
  const roots: ProcessEntry[] = [];
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of byPid.values()) {
    const parent = entry.proc.ppid !== entry.proc.pid ? byPid.get(entry.proc.ppid) : undefined;
    if (parent) children.set(parent.proc.pid, [...(children.get(parent.proc.pid) ?? []), entry]);
    else roots.push(entry);
  }
  const byStart = (a: ProcessEntry, b: ProcessEntry) => a.proc.startTime - b.proc.startTime || a.proc.pid - b.proc.pid;
  for (const [pid, list] of children) byPid.get(pid)!.row.children = list.sort(byStart).map((e) => e.row);
  return roots.sort(byStart).map((e) => e.row);
}

function stateLabel(run: RunInput, l10n: Localizer): string {
  switch (run.state) {
    case 'running':
      return l10n.t('running');
    case 'exited':
      return run.live ? l10n.t('exited, ending helpers') : l10n.t('exited ({0})', run.exitSignal ?? String(run.exitCode));
    case 'timed out':
      return l10n.t('timed out');
    case 'killed':
      return run.live ? l10n.t('killing') : l10n.t('killed');
    case 'over limit':
      return run.live ? l10n.t('over a limit, ending') : l10n.t('over limit');
    case 'failed':
      return l10n.t('failed');
  }
}

/** Below this much time left a row counts down by the second; above it, by the minute. */
const SECONDS_SHOWN_BELOW_MS = 2 * 60_000;

/**
 * "15 min left" for a deadline ("2 h 5 min left" from an hour on), "1:23 left" in its last two minutes. The row's
 * signature changes with it, and a changed row is sent to the renderer again with every row below it: a tree of
 * hundreds, each second, for a countdown the status bar already shows to the second.
 */
function timeLeft(deadline: number | undefined, now: number, l10n: Localizer): string | undefined {
  if (!deadline) return undefined;
  const ms = deadline - now;
  if (ms < SECONDS_SHOWN_BELOW_MS) return l10n.t('{0} left', formatDuration(ms));
  const minutes = Math.ceil(ms / 60_000);
  if (minutes < 60) return l10n.t('{0} min left', minutes);
  const [hours, rest] = [Math.floor(minutes / 60), minutes % 60];
  return rest === 0 ? l10n.t('{0} h left', hours) : l10n.t('{0} h {1} min left', hours, rest);
}

function sizeParts(tree: Size, l10n: Localizer, budget?: BudgetInput): string[] {
  const count = tree.count === 1 ? l10n.t('1 process') : l10n.t('{0} processes', tree.count);
  return budgetSizeParts({ count, cpu: `${tree.cpuPercent.toFixed(0)}% CPU`, memory: formatBytes(tree.rssBytes) }, budget, l10n);
}

function runRow(id: string, run: RunInput, tree: Subtree, { input: { now }, l10n }: Build): Row {
  const left = run.live ? timeLeft(run.deadline, now, l10n) : undefined;
  const running = run.live && run.state === 'running';
  const attention = running ? attentionShown(run.attention, l10n) : { signature: '' };
  const parts = [attention.words ?? stateLabel(run, l10n), ...(left ? [left] : []), ...(run.live ? sizeParts(tree, l10n, run.budget) : [])];
  const [icon, color] = STATE_ICONS[run.state];
  let tooltip =
    `**${escapeMarkdown(run.name)}** (${run.kind})\n\n\`\`\`shell\n${run.command.join(' ')}\n\`\`\`\n\n` +
    l10n.t('Tree {0} · root pid {1} · group {2} · tier {3}', run.id, run.rootPid, run.pgid, run.tier);
  if (run.live && run.budget) tooltip += `\n\n${escapeMarkdown(budgetTooltip(run.budget, l10n))}`;
  if (!run.live || run.state !== 'running') tooltip += `\n\n${escapeMarkdown(run.endingText)}`;
  if (attention.tooltip) tooltip += `\n\n${escapeMarkdown(attention.tooltip)}`;
  return {
    id,
    target: { kind: 'run', runId: run.id },
    label: run.name,
    description: parts.join(' · '),
    tooltip: { text: tooltip, markdown: true },
    icon:
      running && nearLimit(run.budget)
        ? NEAR_LIMIT_ICON
        : (attention.icon ?? { id: run.live && run.state !== 'running' ? 'loading~spin' : icon, color }),
    contextValue: ['agent', run.live ? 'live' : 'ended', run.live && run.deadline ? 'deadline' : ''].filter(Boolean).join('.'),
    children: tree.roots,
    command: { command: 'agentTrees.showTerminal', title: l10n.t('Show Agent Terminal') },
    signature: [
      run.state,
      run.live,
      left ?? '',
      run.exitCode ?? '',
      run.exitSignal ?? '',
      parts.join(' · '),
      attention.signature,
      tree.signature,
    ].join('|'),
  };
}

function windowTreeRow(id: string, t: WindowTreeInput, tree: Subtree, build: Build): Row {
  if (t.mcp) return mcpServerRow(id, { ...t, mcp: t.mcp }, tree, build);
  const {
    input: { now },
    l10n,
  } = build;
  const left = timeLeft(t.deadline, now, l10n);
  const attention = attentionShown(t.attention, l10n);
  const parts = [
    l10n.t('agent-trees run'),
    ...(attention.words ? [attention.words] : []),
    ...(left ? [left] : []),
    ...sizeParts(tree, l10n, t.budget),
  ];
  return {
    id,
    target: { kind: 'windowTree', treeId: t.id, ownerPid: t.ownerPid },
    label: t.label,
    description: parts.join(' · '),
    tooltip: windowTreeTooltip(
      t,
      l10n.t(
        'Tree {0} · root pid {1} · group {2} · tier {3} · owned by agent-trees run (pid {4}) in a terminal of this window',
        t.id,
        t.rootPid,
        t.pgid,
        t.tier,
        t.ownerPid,
      ),
      [t.budget && budgetTooltip(t.budget, l10n), attention.tooltip],
    ),
    icon: nearLimit(t.budget) ? NEAR_LIMIT_ICON : (attention.icon ?? { id: 'pulse', color: 'charts.green' }),
    contextValue: t.deadline ? 'windowTree.live.deadline' : 'windowTree.live',
    children: tree.roots,
    signature: [left ?? '', parts.join(' · '), attention.signature, tree.signature].join('|'),
  };
}

/** A tree of the window's `agent-trees run`: its label, its command line, who owns it (`owned`), then `notes`. */
function windowTreeTooltip(t: WindowTreeInput, owned: string, notes: (string | undefined | false)[]): Row['tooltip'] {
  const more = notes.filter((n): n is string => !!n).map((n) => `\n\n${escapeMarkdown(n)}`);
  return {
    text: `**${escapeMarkdown(t.label)}**\n\n\`\`\`shell\n${t.command.join(' ')}\n\`\`\`\n\n` + owned + more.join(''),
    markdown: true,
  };
}

const MCP_STATE_COLORS = { running: 'charts.green', stopped: undefined, killed: 'charts.red' } as const;

/** An MCP server of VS Code's MCP client, run through `agent-trees run --mcp`: killable while it runs. */
function mcpServerRow(id: string, t: WindowTreeInput & Required<Pick<WindowTreeInput, 'mcp'>>, tree: Subtree, build: Build): Row {
  const {
    input: { now },
    l10n,
  } = build;
  const state = t.mcp.state;
  const running = state === 'running';
  const left = running ? timeLeft(t.deadline, now, l10n) : undefined;
  const stateText = running ? l10n.t('running') : state === 'killed' ? l10n.t('killed') : l10n.t('stopped');
  const parts = [l10n.t('MCP server of VS Code'), stateText, ...(left ? [left] : []), ...(running ? sizeParts(tree, l10n, t.budget) : [])];
  return {
    id,
    target: { kind: 'windowTree', treeId: t.id, ownerPid: t.ownerPid },
    label: t.label,
    description: parts.join(' · '),
    tooltip: windowTreeTooltip(
      t,
      l10n.t(
        "Tree {0} · root pid {1} · group {2} · tier {3} · started by VS Code's MCP client through agent-trees run (pid {4})",
        t.id,
        t.rootPid,
        t.pgid,
        t.tier,
        t.ownerPid,
      ),
      [running && t.budget ? budgetTooltip(t.budget, l10n) : undefined],
    ),
    icon: running && nearLimit(t.budget) ? NEAR_LIMIT_ICON : { id: 'server-process', color: MCP_STATE_COLORS[state] },
    // While it runs it is a window tree like any other (Kill Agent Tree); once ended, nothing acts on it.
    contextValue: running ? (t.deadline ? 'windowTree.live.deadline' : 'windowTree.live') : 'mcpServer.ended',
    children: running ? tree.roots : [],
    signature: [state, left ?? '', parts.join(' · '), tree.signature].join('|'),
  };
}

function terminalRow(id: string, t: TerminalInput, tree: Subtree, l10n: Localizer): Row {
  return {
    id,
    target: { kind: 'terminal', shellKey: t.shellKey, shellPid: t.shellPid },
    label: t.name,
    description: [l10n.t('shell {0}', t.shellPid), ...sizeParts(tree, l10n)].join(' · '),
    tooltip: {
      text: l10n.t(
        "Terminal '{0}', shell pid {1}: its shell's session, everything the shell started, and what was started from this window's terminals and left running",
        t.name,
        t.shellPid,
      ),
      markdown: false,
    },
    icon: { id: 'terminal' },
    contextValue: 'terminal',
    children: tree.roots,
    command: { command: 'agentTrees.showTerminal', title: l10n.t('Show Terminal') },
    signature: [t.name, tree.signature].join('|'),
  };
}

function orphansRow(orphans: OrphanInput[], l10n: Localizer): Row {
  const children: Row[] = orphans.map((o) => ({
    id: `orphan:${o.treeId}`,
    target: { kind: 'orphan', treeId: o.treeId },
    label: o.label,
    description: l10n.t('root {0}, owner {1} (gone)', o.rootPid, o.ownerPid),
    tooltip: { text: o.command.join(' '), markdown: false },
    icon: { id: 'debug-disconnect' },
    contextValue: 'orphan',
    children: [],
    signature: '',
  }));
  return {
    id: 'orphans',
    target: { kind: 'orphans' },
    label: l10n.t('Orphaned trees ({0})', orphans.length),
    tooltip: { text: l10n.t('Trees recorded by windows that are gone. Sweep ends them.'), markdown: false },
    icon: { id: 'warning', color: 'list.warningForeground' },
    contextValue: 'orphans',
    children,
    signature: orphans.map((o) => o.treeId).join(','),
  };
}

/**
 * The section of other extensions' processes in this extension host: one row per extension (what it started, and
 * beneath, what an exited process of it left), each with its process trees. Collapsed per extension until opened.
 */
function otherExtensionsRow(entries: OtherExtensionInput[], build: Build): Row {
  const { l10n } = build;
  const total: Size = { count: 0, cpuPercent: 0, rssBytes: 0 };
  const children = entries.map((e) => {
    const { row, size } = otherExtensionRow(e, build);
    total.count += size.count;
    total.cpuPercent += size.cpuPercent;
    total.rssBytes += size.rssBytes;
    return row;
  });
  return {
    id: 'otherExtensions',
    target: { kind: 'otherExtensions' },
    label: l10n.t('Other extensions'),
    description: sizeParts(total, l10n).join(' · '),
    tooltip: {
      text: l10n.t(
        'Processes that other extensions (and VS Code) started in this extension host, by the extension whose install folder holds what they run. Nothing of theirs is ended unless you ask; when this extension host is gone, what is left of them is ended (agentTrees.otherExtensions.mode).',
      ),
      markdown: false,
    },
    icon: { id: 'extensions' },
    contextValue: 'hostProcesses',
    children,
    signature: children.map((c) => c.signature).join('||'),
  };
}

/** One extension's row: its process trees, and a row for what its exited processes left. */
function otherExtensionRow(e: OtherExtensionInput, build: Build): { row: Row; size: Size } {
  const { l10n } = build;
  const id = `hostExtension:${e.id}`;
  const top: TopTarget = { kind: 'hostExtension', extensionId: e.id };
  const attached = subtree(build, { topId: id, top, members: e.members });
  const children = [...attached.roots];
  const size: Size = { count: attached.count, cpuPercent: attached.cpuPercent, rssBytes: attached.rssBytes };
  let leftSignature = '';
  if (e.left.length > 0) {
    const leftId = `hostLeft:${e.id}`;
    const left = subtree(build, { topId: leftId, top, members: e.left });
    size.count += left.count;
    size.cpuPercent += left.cpuPercent;
    size.rssBytes += left.rssBytes;
    leftSignature = left.signature;
    children.push({
      id: leftId,
      target: { kind: 'hostLeftovers', extensionId: e.id },
      label: l10n.t('left by an exited process'),
      description: sizeParts(left, l10n).join(' · '),
      tooltip: {
        text: l10n.t(
          'Processes of {0} whose parent exited: they no longer hang from this extension host. They may be a server the extension keeps on purpose; end them if they are not.',
          e.name,
        ),
        markdown: false,
      },
      icon: { id: 'debug-disconnect', color: 'list.warningForeground' },
      contextValue: 'hostLeftovers',
      children: left.roots,
      signature: '',
    });
  }
  build.processCount.set(id, size.count);
  const row: Row = {
    id,
    target: top,
    label: e.name,
    description: sizeParts(size, l10n).join(' · '),
    tooltip: {
      text: l10n.t('Processes the extension {0} ({1}) started in this extension host, and everything they started', e.name, e.id),
      markdown: false,
    },
    icon: { id: 'extensions' },
    contextValue: 'otherExtension',
    children,
    collapsed: true,
    signature: [e.id, e.name, attached.signature, leftSignature].join('|'),
  };
  return { row, size };
}
