/**
 * Which live processes are an extension host's own, besides Agent Trees' trees: the processes the other
 * extensions of that host (and VS Code in it) started, found by the member rules of the rest of the core, each
 * proven before it counts:
 *   - the host's children, while the host runs as the process it was (pid and start key);
 *   - every process seen as the host's before, while it is still that process (pid and start key): one that left
 *     the parent chain (a `setsid -f` daemon whose parent exited) stays the host's;
 *   - every process carrying the host's mark (`AGENT_TREES_HOST=<host pid>:<start key>`, set in the host's own
 *     environment when Agent Trees activates, so every process the host starts later inherits it), of our own uid
 *     only: anyone can set a variable;
 *   - every descendant of those, by parent links.
 * What the query names is proven too, since it may come from a record on disk: a process seen or marked counts only
 * if it started no earlier than the host, and only the host's own mark (its pid and start key) finds anything.
 * Never one: PID 1, this process or its ancestors (the guard), a process of an owned tree (it carries a tree's
 * tag: its owner's rules apply), a process in a terminal (it carries a window's terminal tag), a watchdog of
 * Agent Trees (it carries `AGENT_TREES_WATCHDOG`), Agent Trees' own children of the host (`exclude`: its watchdog,
 * its trees' roots), nor anything reached only through those. Nothing is matched by name, and a process started
 * elsewhere with the same command line is none of these.
 *
 * The host's children share its process group with the editor (the server, the pty host, other windows' hosts):
 * so group and session prove nothing here, and the guard's own-group rule is not applied to members proven this
 * way (a kill of them goes one by one: see kill/killTarget.ts).
 */
import type { SignalGuard } from '../identity/guard';
import { ProcessIdentity, processKey } from '../identity/processIdentity';
import { withDescendants } from '../members/membership';
import { stillSeen } from '../members/seenProcesses';
import {
  HOST_MARK_VARIABLE,
  ProcessInfo,
  Snapshot,
  TREE_ID_VARIABLE,
  WATCHDOG_VARIABLE,
  WINDOW_TAG_VARIABLE,
} from '../platform/processTable';

/** Everything needed to find one extension host's processes in a snapshot (plain data: it crosses to the snapshot worker). */
export interface HostQuery {
  /** The extension host (pid and start key). */
  host: ProcessIdentity;
  /** The value of `AGENT_TREES_HOST` its children inherit. */
  mark: string;
  /** Keys (`pid:startKey`) of processes seen as the host's before. */
  seen: string[];
  /** Keys of Agent Trees' own children of the host (its watchdog, its trees' roots): never members, never walked. */
  exclude: string[];
}

/** What a resolution reads besides the snapshot: who is never signalled, and whose uid a process runs as. */
export interface HostMemberDeps {
  guard: Pick<SignalGuard, 'protectedPidReason'> & Partial<Pick<SignalGuard, 'otherUid'>>;
}

export interface HostMembership {
  /** The host's processes, in pid order. */
  members: ProcessInfo[];
  /** Processes that looked like the host's and are not, and why (protected, another user's on the mark alone). */
  excluded: string[];
}

/** The mark of the extension host `host`: the value of `AGENT_TREES_HOST` its children inherit. */
export function hostMark(host: ProcessIdentity): string {
  return processKey(host);
}

/**
 * Why `p` can never be one of the host's processes (nor be walked through), or undefined: protected by the guard,
 * Agent Trees' own child of the host, a member of an owned tree, or a watchdog.
 */
export function hostProtection(
  snap: Snapshot,
  query: Pick<HostQuery, 'exclude'>,
  deps: HostMemberDeps,
): (p: ProcessInfo) => string | undefined {
  const excluded = new Set(query.exclude);
  let inTrees: Set<number> | undefined;
  let inTerminals: Set<number> | undefined;
  let watchdogs: Set<number> | undefined;
  return (p) => {
    if (p.pid <= 1) return `pid ${p.pid}`;
    const why = deps.guard.protectedPidReason(p);
    if (why) return why;
    if (excluded.has(processKey(p))) return `pid ${p.pid} is Agent Trees' own`;
    inTrees ??= new Set([...snap.tagged(TREE_ID_VARIABLE).values()].flat().map((t) => t.pid));
    if (inTrees.has(p.pid)) return `pid ${p.pid} is a member of an owned tree`;
    // The host drops this tag from its environment: a process carrying it and the mark is in a terminal an extension
    // opened with the host's environment, which the pty host keeps across a reload (the terminals' rules apply).
    inTerminals ??= new Set([...snap.tagged(WINDOW_TAG_VARIABLE).values()].flat().map((t) => t.pid));
    if (inTerminals.has(p.pid)) return `pid ${p.pid} runs in a terminal (it carries a window's terminal tag)`;
    watchdogs ??= new Set([...snap.tagged(WATCHDOG_VARIABLE).values()].flat().map((t) => t.pid));
    if (watchdogs.has(p.pid)) return `pid ${p.pid} is a watchdog of Agent Trees`;
    return undefined;
  };
}

/** The host's processes in `snap` (see the top of this file). */
export function resolveHostProcesses(snap: Snapshot, query: HostQuery, deps: HostMemberDeps): HostMembership {
  const excluded = new Set<string>();
  const protection = hostProtection(snap, query, deps);
  const isProtected = (p: ProcessInfo) => {
    const why = protection(p);
    if (why) excluded.add(why);
    return why !== undefined;
  };
  const seeds = new Map<number, ProcessInfo>();
  const add = (p: ProcessInfo) => {
    if (!seeds.has(p.pid) && !isProtected(p)) seeds.set(p.pid, p);
  };
  const host = snap.processes.get(query.host.pid);
  if (host && host.startKey === query.host.startKey) for (const p of snap.children().get(host.pid) ?? []) add(p);
  // Whatever the host started, it started after itself: a record naming an older process was not written by it.
  const sinceHost = (p: ProcessInfo) => {
    if (p.startKey >= query.host.startKey) return true;
    excluded.add(`pid ${p.pid} started before extension host ${query.host.pid}: it cannot be one of its processes`);
    return false;
  };
  for (const p of stillSeen(snap, query.seen)) if (sinceHost(p)) add(p);
  // Only the host's own mark: a record naming another's (edited, forged) would reach another host's processes.
  const marked = query.mark === hostMark(query.host) ? (snap.tagged(HOST_MARK_VARIABLE).get(query.mark) ?? []) : [];
  if (query.mark !== hostMark(query.host))
    excluded.add(`the mark ${query.mark} is not extension host ${query.host.pid}'s own: nothing is found by it`);
  for (const p of marked) {
    const uid = deps.guard.otherUid?.(p);
    if (uid !== undefined)
      excluded.add(
        `pid ${p.pid} carries this host's mark but runs as uid ${uid}: a mark alone does not make another user's process the host's`,
      );
    else if (sinceHost(p)) add(p);
  }
  const members = [...withDescendants(seeds, snap, isProtected).values()].sort((a, b) => a.pid - b.pid);
  return { members, excluded: [...excluded] };
}
