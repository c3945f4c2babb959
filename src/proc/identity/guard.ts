/**
 * The processes this program must never signal: PID 0 and 1, itself, its ancestors and its own process group,
 * on every path (one process, a group, a whole cgroup). Other users' processes are never members on a tag
 * alone (see members/treeMembers.ts); a member that changed uid is proven by cgroup or parentage, and the kernel decides
 * whether we may signal it.
 */
import { ProcessInfo, ProcessTable } from '../platform/processTable';

/** Who "this program" is: the process the guard protects, with its parent and uid. */
export interface GuardSelf {
  pid: number;
  ppid: number;
  /** Our uid; undefined where the platform has none (Windows). */
  uid: number | undefined;
}

export function currentSelf(): GuardSelf {
  return { pid: process.pid, ppid: process.ppid, uid: typeof process.getuid === 'function' ? process.getuid() : undefined };
}

const SELF_OR_ANCESTOR = 'is this process or its ancestor';
const IN_OWN_GROUP = 'is in our own process group';

/**
 * What a kill report's refusal says the guard spared, when it spared a process (a kill run from inside the tree
 * it kills): this process or an ancestor, or another member of our own process group. Else undefined.
 */
export function guardedPidOf(refusal: string): { pid: number; why: 'self-or-ancestor' | 'own-group' } | undefined {
  const m = new RegExp(`^pid (\\d+) (${SELF_OR_ANCESTOR}|${IN_OWN_GROUP})$`).exec(refusal);
  return m ? { pid: Number(m[1]), why: m[2] === SELF_OR_ANCESTOR ? 'self-or-ancestor' : 'own-group' } : undefined;
}

export class SignalGuard {
  readonly self: GuardSelf;
  private readonly protectedPids = new Set<number>([0, 1]);
  private readonly ownGroup: number | undefined;
  private readonly uid: number | undefined;

  constructor(
    private readonly table: ProcessTable,
    self: GuardSelf = currentSelf(),
  ) {
    this.self = self;
    this.protectedPids.add(self.pid);
    // Ancestors, walked through the table (the chain ends at 1 or at a pid we cannot read).
    let pid = self.ppid;
    for (let i = 0; i < 4096 && pid > 1 && !this.protectedPids.has(pid); i++) {
      this.protectedPids.add(pid);
      const p = table.read(pid);
      if (!p) break;
      pid = p.ppid;
    }
    this.ownGroup = table.read(self.pid)?.pgid;
    this.uid = self.uid;
  }

  /**
   * This process, an ancestor, PID 0/1, or a member of our own group: never a tree member, and never walked
   * for descendants (our own other children are not a tree's).
   */
  protectedReason(p: Pick<ProcessInfo, 'pid' | 'pgid'>): string | undefined {
    if (this.protectedPids.has(p.pid)) return p.pid <= 1 ? `pid ${p.pid}` : `pid ${p.pid} ${SELF_OR_ANCESTOR}`;
    if (this.ownGroup !== undefined && p.pgid === this.ownGroup) return `pid ${p.pid} ${IN_OWN_GROUP}`;
    return undefined;
  }

  /**
   * Why `p` may never be signalled even on its own, or undefined: this process, an ancestor, or PID 0/1. What
   * `protectedReason` adds, our own group, a kill may reach one by one where its resolution proved each member
   * (an extension host's own children share its editor's process group: see kill/killTarget.ts).
   */
  protectedPidReason(p: Pick<ProcessInfo, 'pid'>): string | undefined {
    if (!this.protectedPids.has(p.pid)) return undefined;
    return p.pid <= 1 ? `pid ${p.pid}` : `pid ${p.pid} ${SELF_OR_ANCESTOR}`;
  }

  /** This process, an ancestor, or PID 0/1. */
  isProtectedPid(pid: number): boolean {
    return this.protectedPids.has(pid);
  }

  /**
   * The uid of `p` when it is not ours, else undefined. Membership uses it for the one kind of evidence another
   * user can fake: an environment tag.
   */
  otherUid(p: Pick<ProcessInfo, 'pid' | 'uid'>): number | undefined {
    if (this.uid === undefined) return undefined;
    const uid = p.uid >= 0 ? p.uid : (this.table.read(p.pid)?.uid ?? -1); // a snapshot leaves uid unread
    return uid >= 0 && uid !== this.uid ? uid : undefined;
  }

  /**
   * Whether a whole process group may be signalled at once: never PID 0/1's, our own, or one that holds this
   * process or an ancestor right now (a leaderless group can hold our parent while we are not in it). `members`
   * are the processes of the group the caller means to signal.
   */
  groupRefusal(pgid: number, members: Pick<ProcessInfo, 'pid' | 'pgid'>[]): string | undefined {
    if (pgid <= 1) return `process group ${pgid}`;
    if (pgid === this.ownGroup) return `process group ${pgid} is our own`;
    if (this.protectedPids.has(pgid)) return `process group ${pgid} is led by this process or an ancestor`;
    for (const pid of this.protectedPids) {
      if (pid > 1 && this.table.read(pid)?.pgid === pgid) return `process group ${pgid} holds pid ${pid}, this process or its ancestor`;
    }
    for (const m of members) {
      const why = this.protectedReason(m);
      if (why) return why;
    }
    return undefined;
  }

  /**
   * Whether a cgroup may be killed or frozen as a whole, given the pids in it (with those of its child cgroups):
   * never while it holds this process or an ancestor (a killer inside the tree it kills).
   */
  cgroupRefusal(pids: number[]): string | undefined {
    const inside = pids.find((pid) => this.protectedPids.has(pid));
    return inside === undefined ? undefined : `it holds pid ${inside}, this process or its ancestor`;
  }
}
