/**
 * Terminal trees: what runs under the shell of an editor terminal, found by the same member rules as an owned
 * tree (what that shell leaves running when its terminal closes is leftovers.ts's, ending it ending.ts's).
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
 */
import { processKey } from '../identity/processIdentity';
import { MemberDeps, TreeIdentity } from '../members/membership';
import { stillSeen } from '../members/seenProcesses';
import { resolveTreeMembers } from '../members/treeMembers';
import { hostClock, START_KEYS_ARE_BOOT_TICKS } from '../platform/bootClock';
import { ProcessInfo, ProcessTable, Snapshot, WINDOW_TAG_VARIABLE } from '../platform/processTable';
import { START_PRECISION_MS } from '../platform/procParsers';
import { RecordFile } from '../records/schema';

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
  /** The same in clock ticks since boot (Linux): what identities are compared in (see platform/bootClock.ts). */
  trackedAtTicks?: number;
}

/** The shell running at `pid` now, as a terminal's shell; undefined when it is gone or unreadable. */
export function readShell(pid: number, table: Pick<ProcessTable, 'read'>, now = Date.now()): TerminalShell | undefined {
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
  /** The guard (and cgroups) resolutions use. */
  deps: MemberDeps;
  /** Why a process can never be a member (see ResolveOptions.protectedReason); default: the guard's. */
  protectedReason?: (p: ProcessInfo) => string | undefined;
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
export function resolveTerminalTrees(snap: Snapshot, query: TerminalQuery, options: TerminalResolveOptions): TerminalMembership[] {
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
export function resolveWithClosing(
  snap: Snapshot,
  query: TerminalQuery,
  options: TerminalResolveOptions,
  closing?: string,
): (TerminalMembership & { deferred: ProcessInfo[] })[] {
  const kept = new Set(query.kept);
  const tagged = windowTagged(snap, query.windowTags).filter((p) => !kept.has(processKey(p)));
  const resolve = (shell: TerminalShell, more: ProcessInfo[]) => resolveShell({ snap, query, options, kept, tagged }, shell, more);

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

/** What every shell of one query is resolved against: the snapshot, the query, and the window's tagged processes. */
interface ShellContext {
  snap: Snapshot;
  query: TerminalQuery;
  options: TerminalResolveOptions;
  /** Keys of processes the user chose to keep. */
  kept: Set<string>;
  /** The window's tagged processes, less the kept ones. */
  tagged: ProcessInfo[];
}

/**
 * The members of one shell's tree by the owned-tree rules, seeded with `more`, with what was seen as its members
 * before (still the same processes) and with tagged members of its session.
 */
function resolveShell(c: ShellContext, shell: TerminalShell, more: ProcessInfo[]): ProcessInfo[] {
  const extraSeeds: ProcessInfo[] = [...more, ...stillSeen(c.snap, c.query.seen[shell.key] ?? [], c.kept)];
  // Tagged members of the shell's session: they prove the session once the shell (its leader) is gone.
  for (const p of c.tagged) if (p.sid === shell.sid) extraSeeds.push(p);
  const options = {
    continuouslyOwned: false,
    cgroupVerified: false,
    extraSeeds,
    rootStartKey: shell.startKey,
    protectedReason: c.options.protectedReason,
  };
  return resolveTreeMembers(terminalIdentity(shell), c.snap, options, c.options.deps).members;
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
