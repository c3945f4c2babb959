/**
 * What every membership rule answers (`Membership`) and reads (`MemberDeps`), and the one walk they share: a set
 * of proven members and every descendant of theirs.
 */
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { ProcessInfo, Snapshot, WATCHDOG_VARIABLE } from '../platform/processTable';
import { TreeRecord } from '../records/schema';

export type TreeIdentity = Pick<
  TreeRecord,
  'id' | 'rootPid' | 'pgid' | 'sid' | 'rootStartTime' | 'trackedAt' | 'cgroup' | 'rootStartTicks' | 'trackedAtTicks'
>;

export interface Membership {
  members: ProcessInfo[];
  /** Whether the process group (and session) is provably the recorded one, so `kill(-pgid)` is allowed. */
  groupProven: boolean;
  /** Why the group was not trusted, when it was not. */
  groupDoubt?: string;
  /** Pids in the cgroup (when the tree has one). */
  inCgroup: number;
  /** Processes that looked like members but are protected (ourselves, an ancestor, our group), and why. */
  excluded: string[];
}

/** What a resolution reads besides the snapshot: the guard (who can never be a member) and the cgroups. */
export interface MemberDeps {
  /** Ourselves, our ancestors, our own group and PID 1: never members, and never walked; and our uid. */
  guard: Pick<SignalGuard, 'protectedReason'> & Partial<Pick<SignalGuard, 'otherUid'>>;
  cgroups: Pick<CgroupControl, 'procs'>;
}

/** A process shaped as an owner's watchdog: its owner (its parent), and why it is spared. */
export interface Watchdog {
  owner: number;
  why: string;
}

/**
 * The owners' watchdogs in `snap`, by pid, each with why it is never a member: a watchdog is started by its owner
 * (`owner/watchdog.ts`), which may itself run inside a tree (an `agent-trees run` an agent started), so it descends
 * from that tree's members; ending it would leave its owner's own trees without the one process that ends them when
 * the owner dies. A process counts as one only while it is what a watchdog is: it carries
 * `AGENT_TREES_WATCHDOG=<pid>:<start key>`, leads a session of its own, and its parent is that very owner, alive.
 * Anyone can set a variable, so this spares a process no longer than its parent lives, and only while that parent
 * is a member of the tree itself (the caller checks `owner`): a tree member posing as a watchdog of another member
 * is a member again once that member is killed, and one posing as the watchdog of a process outside the tree (PID 1
 * or a subreaper that adopted it) is one all along. `since`: only processes that started at or after this start
 * key are looked at (a tree's watchdogs started after its root).
 */
export function watchdogsIn(snap: Snapshot, since = 0): Map<number, Watchdog> {
  const out = new Map<number, Watchdog>();
  for (const [value, list] of snap.tagged(WATCHDOG_VARIABLE, since)) {
    const m = /^(\d+):(\d+)$/.exec(value);
    if (!m) continue;
    const [ownerPid, ownerKey] = [Number(m[1]), Number(m[2])];
    const owner = snap.processes.get(ownerPid);
    if (owner && owner.startKey !== ownerKey) continue;
    for (const p of list) {
      if (p.ppid === ownerPid && p.sid === p.pid && p.pgid === p.pid) {
        out.set(p.pid, {
          owner: ownerPid,
          why: `pid ${p.pid} is the watchdog of process ${ownerPid}: a watchdog is never a tree's member`,
        });
      }
    }
  }
  return out;
}

/** The seeds and every descendant of theirs, whatever the pid order (pids wrap around). */
export function withDescendants(
  seeds: Map<number, ProcessInfo>,
  snap: Snapshot,
  isProtected: (p: ProcessInfo) => boolean,
): Map<number, ProcessInfo> {
  const children = snap.children();
  const members = new Map(seeds);
  const queue = [...seeds.values()];
  while (queue.length > 0) {
    const p = queue.pop()!;
    for (const child of children.get(p.pid) ?? []) {
      if (!members.has(child.pid) && !isProtected(child)) {
        members.set(child.pid, child);
        queue.push(child);
      }
    }
  }
  return members;
}
