/**
 * What every membership rule answers (`Membership`) and reads (`MemberDeps`), and the one walk they share: a set
 * of proven members and every descendant of theirs.
 */
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { ProcessInfo, Snapshot } from '../platform/processTable';
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
