/**
 * Terminal trees: what runs under the shell of an editor terminal, found by the same member rules as an owned
 * tree, and what that shell leaves running when its terminal closes.
 *
 * A terminal tree is named by its shell (pid + start time), the shell's session and process group, and the
 * window's tag (`AGENT_TREES_WINDOW=<id>`, which every process started from the window's terminals inherits).
 * Its members are resolved by `resolveTreeMembers`, seeded with what was seen as a member before (pid + start time
 * re-checked) and with tagged members of the shell's session (which prove the session after the shell is gone).
 * A tagged process that no terminal's session or descendants hold (a double-forked daemon whose parent died) is
 * shown under every open terminal whose shell started before it: never under one that started after it, never by
 * name, never one under the editor's own processes (the hosts of other windows opened from a terminal inherit
 * the tag), and never one the user chose to keep. A closing terminal leaves it only when no other live shell of
 * the window could also have started it (see `deferredLeftovers`): nothing is ended on a guess.
 *
 * The shell itself is never a member of anything that is killed here: ending a terminal's processes spares it.
 */
import { hostClock, START_KEYS_ARE_BOOT_TICKS } from './platform/bootClock';
import { processCore } from './core';
import { KillReport } from './kill/killTarget';
import { Logger } from './platform/log';
import { MemberDeps, Membership, TreeIdentity } from './members/membership';
import { resolveSubtreeMembers } from './members/subtreeMembers';
import { resolveTreeMembers } from './members/treeMembers';
import { ProcessInfo, ProcessTable, Snapshot, TREE_ID_VARIABLE, WINDOW_TAG_VARIABLE } from './platform/processTable';
import { START_PRECISION_MS } from './platform/procParsers';
import { RecordFile } from './records/schema';
import { parseProcessKey, processKey, ProcessIdentity } from './identity/processIdentity';
import { TreeKiller } from './kill/treeKiller';

/** A terminal's shell as first seen. `key` (pid:startKey) names it for as long as it runs. */
export interface TerminalShell {
  key: string;
  pid: number;
  startKey: number;
  startTime: number;
  pgid: number;
  sid: number;
  /** When it was first seen: it started no later. */
  trackedAt: number;
  /** The same in clock ticks since boot (Linux): what identities are compared in (see bootClock.ts). */
  trackedAtTicks?: number;
}

/** The shell running at `pid` now, as a terminal's shell; undefined when it is gone or unreadable. */
export function readShell(pid: number, table: ProcessTable = processCore().table, now = Date.now()): TerminalShell | undefined {
  const p = table.read(pid);
  if (!p) return undefined;
  return {
    key: processKey(p),
    pid: p.pid,
    startKey: p.startKey,
    startTime: p.startTime,
    pgid: p.pgid,
    sid: p.sid,
    trackedAt: Math.max(now, p.startTime),
    ...firstSeenTicks(p.startKey),
  };
}

function firstSeenTicks(startKey: number): { trackedAtTicks?: number } {
  const clock = hostClock();
  if (!clock) return {};
  try {
    return { trackedAtTicks: Math.max(clock.nowTicks(), startKey) };
  } catch {
    return {};
  }
}

/** Everything needed to resolve the terminal trees of one window in one snapshot (plain data: it crosses to the snapshot worker). */
export interface TerminalQuery {
  /** Values of `AGENT_TREES_WINDOW` that are this window's (its id, kept over reloads). */
  windowTags: string[];
  /** The shells of the window's terminals, open or closing. */
  shells: TerminalShell[];
  /** Keys of processes seen as members of each terminal before, by shell key. */
  seen: Record<string, string[]>;
  /** Keys of processes the user chose to keep when their terminal closed: never counted as a terminal's again. */
  kept: string[];
  /**
   * The process under which the editor runs its own hosts (this extension host's parent). A tagged process below
   * it is the editor's (an extension host of a window opened from a terminal inherits the tag), not something a
   * terminal left; so is a shell whose terminal is not known yet.
   */
  editorRoot?: number;
}

export interface TerminalMembership {
  shellKey: string;
  /** Members, the shell itself included while it runs. */
  members: ProcessInfo[];
  shellAlive: boolean;
  /** Tagged processes no session or descendant walk led to, counted to this terminal (and maybe others). */
  unclaimed: number[];
}

export interface TerminalResolveOptions {
  /** Why a process can never be a member (see ResolveOptions.protectedReason); default: the guard's. */
  protectedReason?: (p: ProcessInfo) => string | undefined;
  /** The guard (and cgroups) resolutions use; default: this process's (see core.ts). */
  deps?: MemberDeps;
  /**
   * Reads a process the snapshot does not hold. A snapshot of some processes only (the view's tracked refresh)
   * lacks most ancestors: a tagged process is under the editor only if its ancestors up to the editor are read.
   */
  readProcess?: (pid: number) => ProcessInfo | undefined;
}

function terminalIdentity(shell: TerminalShell): TreeIdentity {
  return {
    id: `terminal:${shell.key}`,
    rootPid: shell.pid,
    pgid: shell.pgid,
    sid: shell.sid,
    rootStartTime: shell.startTime,
    trackedAt: shell.trackedAt,
    cgroup: null,
    // In boot ticks (Linux): the shell exactly, and any other leader only if it started before the shell was seen.
    ...(START_KEYS_ARE_BOOT_TICKS ? { rootStartTicks: shell.startKey, trackedAtTicks: shell.trackedAtTicks } : {}),
  };
}

/** Resolves every terminal of the query in one snapshot. */
export function resolveTerminalTrees(snap: Snapshot, query: TerminalQuery, options: TerminalResolveOptions = {}): TerminalMembership[] {
  return resolveWithClosing(snap, query, options).map(({ deferred: _, ...m }) => m);
}

/** Whether `p` could have come from `shell`: not if the shell started after it. */
function startedBefore(shell: TerminalShell, p: ProcessInfo): boolean {
  // In boot ticks where there are (a clock step between the shell's first look and now moves epoch start times);
  // else with the rounding in its favour.
  return START_KEYS_ARE_BOOT_TICKS ? shell.startKey <= p.startKey : shell.startTime <= p.startTime + 2 * START_PRECISION_MS;
}

/**
 * As `resolveTerminalTrees`; the terminal of `closing` is counted only the unattributable tagged processes no
 * other live shell of the window could also have started, the others are its `deferred` (they stay, and go to
 * the last such terminal that closes).
 */
function resolveWithClosing(
  snap: Snapshot,
  query: TerminalQuery,
  options: TerminalResolveOptions,
  closing?: string,
): (TerminalMembership & { deferred: ProcessInfo[] })[] {
  const kept = new Set(query.kept);
  const tagged = windowTagged(snap, query.windowTags).filter((p) => !kept.has(processKey(p)));
  const resolve = (shell: TerminalShell, more: ProcessInfo[]) => {
    const extraSeeds: ProcessInfo[] = [...more];
    for (const key of query.seen[shell.key] ?? []) {
      const k = parseProcessKey(key);
      const p = k && snap.processes.get(k.pid);
      if (p && p.startKey === k.startKey && !kept.has(key)) extraSeeds.push(p);
    }
    // Tagged members of the shell's session: they prove the session once the shell (its leader) is gone.
    for (const p of tagged) if (p.sid === shell.sid) extraSeeds.push(p);
    return resolveTreeMembers(
      terminalIdentity(shell),
      snap,
      {
        continuouslyOwned: false,
        cgroupVerified: false,
        extraSeeds,
        rootStartKey: shell.startKey,
        protectedReason: options.protectedReason,
      },
      options.deps ?? processCore(),
    ).members;
  };

  const memberships = query.shells.map((shell) => ({
    shell,
    members: resolve(shell, []),
    unclaimed: [] as ProcessInfo[],
    deferred: [] as ProcessInfo[],
  }));
  const claimed = new Set<number>();
  for (const m of memberships) for (const p of m.members) claimed.add(p.pid);
  const underEditor = (p: ProcessInfo) => query.editorRoot !== undefined && hasAncestor(snap, p, query.editorRoot, options.readProcess);
  const unclaimed = tagged.filter((p) => !claimed.has(p.pid) && p.pid !== query.editorRoot && !underEditor(p));
  if (unclaimed.length > 0) {
    const liveShells = query.shells.filter((s) => snap.processes.get(s.pid)?.startKey === s.startKey);
    for (const m of memberships) {
      // A process cannot have come from a shell that started after it.
      let from = unclaimed.filter((p) => startedBefore(m.shell, p));
      if (m.shell.key === closing) {
        const others = liveShells.filter((s) => s.key !== closing);
        m.deferred = from.filter((p) => others.some((s) => startedBefore(s, p)));
        from = from.filter((p) => !m.deferred.includes(p));
      }
      if (from.length === 0) continue;
      m.unclaimed = from;
      m.members = resolve(m.shell, from);
    }
  }
  return memberships.map(({ shell, members, unclaimed: u, deferred }) => ({
    shellKey: shell.key,
    members,
    shellAlive: snap.processes.get(shell.pid)?.startKey === shell.startKey,
    unclaimed: u.map((p) => p.pid),
    deferred,
  }));
}

/** Processes carrying one of the window's tags. */
function windowTagged(snap: Snapshot, tags: string[]): ProcessInfo[] {
  const byTag = snap.tagged(WINDOW_TAG_VARIABLE);
  const out = new Map<number, ProcessInfo>();
  for (const tag of new Set(tags)) for (const p of byTag.get(tag) ?? []) out.set(p.pid, p);
  return [...out.values()];
}

/** Whether `ancestor` is up `p`'s parent chain: through the snapshot, and `read` where the snapshot lacks a parent. */
function hasAncestor(snap: Snapshot, p: ProcessInfo, ancestor: number, read?: (pid: number) => ProcessInfo | undefined): boolean {
  const visited = new Set<number>([p.pid]);
  for (let q: ProcessInfo | undefined = p; q;) {
    if (q.ppid === ancestor) return true;
    if (q.ppid <= 1 || visited.has(q.ppid)) return false;
    visited.add(q.ppid);
    q = snap.processes.get(q.ppid) ?? read?.(q.ppid);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------- owners

/** Owners alive now and the trees they hold: their processes are theirs to end, not a closing terminal's. */
export interface LiveOwnership {
  ownerPids: Set<number>;
  treeIds: Set<string>;
}

export function liveOwnership(live: RecordFile[]): LiveOwnership {
  return {
    ownerPids: new Set(live.map((r) => r.record.owner.pid)),
    treeIds: new Set(live.flatMap((r) => r.record.trees.map((t) => t.id))),
  };
}

/** Whether `p` is a live owner or a member of a live owner's tree (by its tree tag). */
function heldByOwner(snap: Snapshot, owners: LiveOwnership): (p: ProcessInfo) => boolean {
  const inTrees = new Set<number>();
  for (const id of owners.treeIds) for (const p of snap.tagged(TREE_ID_VARIABLE).get(id) ?? []) inTrees.add(p.pid);
  return (p) => owners.ownerPids.has(p.pid) || inTrees.has(p.pid);
}

/**
 * The records of live owners that belong to this window: the owner carries one of the window's tags (it was
 * started from one of its terminals), or runs under one of its terminals.
 */
export function windowRecords(
  live: RecordFile[],
  snap: Snapshot,
  windowTags: string[],
  terminalMembers: Iterable<ProcessInfo>,
): RecordFile[] {
  const tagged = new Set(windowTagged(snap, windowTags).map((p) => p.pid));
  const underTerminal = new Set([...terminalMembers].map((p) => p.pid));
  return live.filter(({ record }) => {
    const owner = snap.processes.get(record.owner.pid);
    return owner !== undefined && (tagged.has(owner.pid) || underTerminal.has(owner.pid));
  });
}

// ---------------------------------------------------------------------------------------------- leftovers

/**
 * What the terminal of `shellKey` leaves running: its members but the shell, less what another open terminal
 * holds (its session or descendants), what another live shell of the window could also have started (see
 * `deferredLeftovers`) and what a live owner holds (an `agent-trees run` ends its own tree).
 */
export function terminalLeftovers(
  snap: Snapshot,
  query: TerminalQuery,
  shellKey: string,
  owners: LiveOwnership,
  options: TerminalResolveOptions = {},
): ProcessInfo[] {
  const all = resolveWithClosing(snap, query, options, shellKey);
  const mine = all.find((m) => m.shellKey === shellKey);
  const shell = query.shells.find((s) => s.key === shellKey);
  if (!mine || !shell) return [];
  const elsewhere = new Set<number>();
  for (const m of all) {
    if (m.shellKey === shellKey) continue;
    const unclaimed = new Set(m.unclaimed);
    for (const p of m.members) if (!unclaimed.has(p.pid)) elsewhere.add(p.pid);
  }
  const held = heldByOwner(snap, owners);
  return mine.members.filter((p) => p.pid !== shell.pid && !elsewhere.has(p.pid) && !held(p));
}

/**
 * The window's tagged processes that no session or parent link attributes, which the closing terminal of
 * `shellKey` could have started but so could another live shell of the window: not its leftovers, they stay
 * until the last terminal that could have started them closes.
 */
export function deferredLeftovers(
  snap: Snapshot,
  query: TerminalQuery,
  shellKey: string,
  options: TerminalResolveOptions = {},
): ProcessInfo[] {
  return resolveWithClosing(snap, query, options, shellKey).find((m) => m.shellKey === shellKey)?.deferred ?? [];
}

/** `deferredLeftovers` on a fresh look at the machine, with each one's command line (for the log of a close). */
export function deferredLeftoversNow(
  query: TerminalQuery,
  shellKey: string,
  table: ProcessTable = processCore().table,
): { pid: number; command: string }[] {
  const snap = table.snapshot();
  return deferredLeftovers(snap, query, shellKey).map((p) => ({ pid: p.pid, command: snap.commandLine(p.pid) }));
}

export interface SettleOptions {
  /** Longest wait for the shell to exit and the rest to settle. */
  timeoutMs?: number;
  /** How long the set must stay the same to count as settled. */
  quietMs?: number;
  pollMs?: number;
}

/**
 * Waits until what a closed terminal left has settled: the shell has exited (its terminal sent it SIGHUP, and
 * it passes that on to its jobs) and the leftovers stayed the same for `quietMs`, or `timeoutMs` passed.
 * Returns the leftovers then. Everything that exits by itself on the hang-up is not reported as left.
 */
export async function settleLeftovers<T extends ProcessInfo>(
  shell: TerminalShell,
  compute: (snap: Snapshot) => T[],
  options: SettleOptions = {},
  table: ProcessTable = processCore().table,
): Promise<T[]> {
  const timeoutMs = options.timeoutMs ?? 3000;
  const quietMs = options.quietMs ?? 300;
  const pollMs = options.pollMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let last = '';
  let sameSince = Date.now();
  for (;;) {
    const snap = table.snapshot();
    const left = compute(snap);
    const shellRuns = snap.processes.get(shell.pid)?.startKey === shell.startKey;
    const signature = left.map(processKey).sort().join(',');
    if (signature !== last) {
      last = signature;
      sameSince = Date.now();
    }
    const now = Date.now();
    if (now >= deadline || (!shellRuns && now - sameSince >= quietMs)) return left;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Ends every member of a terminal's tree but its shell (SIGTERM, grace, SIGKILL), by the core's killer, each
 * member re-resolved in every round (what the shell starts meanwhile goes too).
 */
export function endTerminalTree(
  query: TerminalQuery,
  shellKey: string,
  graceMs: number,
  log?: Logger,
  killer: TreeKiller = processCore().killer,
  options: TerminalResolveOptions = {},
): Promise<KillReport> {
  const shell = query.shells.find((s) => s.key === shellKey);
  if (!shell) return Promise.resolve(refusal(`terminal:${shellKey}`, []));
  if (process.platform === 'win32') return Promise.resolve(refusal(`terminal:${shellKey}`, [NOT_ON_WINDOWS]));
  return killer.killResolved(
    `terminal:${shellKey}`,
    (snap, guard): Membership => {
      // Terminal trees have no cgroup: only the kill's guard matters here.
      const deps = options.deps ?? { guard, cgroups: { procs: () => [] } };
      const mine = resolveTerminalTrees(snap, query, { ...options, deps }).find((m) => m.shellKey === shellKey);
      return { members: (mine?.members ?? []).filter((p) => p.pid !== shell.pid), groupProven: false, inCgroup: 0, excluded: [] };
    },
    graceMs,
    log,
  );
}

/** Ends what a closed terminal left (each still the process it was, and what it started since); spares the shell. */
export function endLeftovers(
  shell: TerminalShell,
  left: ProcessIdentity[],
  graceMs: number,
  log?: Logger,
  killer: TreeKiller = processCore().killer,
): Promise<KillReport> {
  if (process.platform === 'win32') return Promise.resolve(refusal(`terminal-left:${shell.key}`, [NOT_ON_WINDOWS]));
  return killer.killResolved(
    `terminal-left:${shell.key}`,
    (snap, guard) => resolveSubtreeMembers(snap, left, { guard }, [shell.pid]),
    graceMs,
    log,
  );
}

/**
 * Windows has no start times to prove a process's identity by, nor signals to freeze it with: terminal processes
 * are shown there, but not ended (an owned tree's kill goes through taskkill, from the owner that holds its root).
 */
const NOT_ON_WINDOWS = "Windows: a terminal's processes are not ended (no start time proves which process a pid is)";

function refusal(treeId: string, refused: string[]): KillReport {
  return { treeId, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused };
}
