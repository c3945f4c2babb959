/**
 * The processes this program must never signal: PID 0 and 1, itself, its ancestors, its own process group,
 * and other users' processes.
 */
import { ProcessInfo, ProcessTable } from './processTable';

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

export class SignalGuard {
  readonly self: GuardSelf;
  private readonly protectedPids = new Set<number>([0, 1]);
  private readonly ownGroup: number | undefined;
  private readonly uid: number | undefined;

  constructor(private readonly table: ProcessTable, self: GuardSelf = currentSelf()) {
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
    if (this.protectedPids.has(p.pid)) return p.pid <= 1 ? `pid ${p.pid}` : `pid ${p.pid} is this process or its ancestor`;
    if (this.ownGroup !== undefined && p.pgid === this.ownGroup) return `pid ${p.pid} is in our own process group`;
    return undefined;
  }

  /** This process, an ancestor, or PID 0/1. */
  isProtectedPid(pid: number): boolean {
    return this.protectedPids.has(pid);
  }

  /** Why `p` must not be signalled, or undefined when it may be. */
  refusal(p: Pick<ProcessInfo, 'pid' | 'pgid' | 'uid'>): string | undefined {
    const why = this.protectedReason(p);
    if (why) return why;
    if (this.uid !== undefined) {
      // A snapshot leaves uid unread (-1): read it now, for the few processes about to be signalled.
      const uid = p.uid >= 0 ? p.uid : this.table.read(p.pid)?.uid ?? -1;
      if (uid >= 0 && uid !== this.uid) return `pid ${p.pid} belongs to uid ${uid}`;
    }
    return undefined;
  }

  /** Whether a whole process group may be signalled at once (given every member we can see). */
  groupRefusal(pgid: number, members: ProcessInfo[]): string | undefined {
    if (pgid <= 1) return `process group ${pgid}`;
    if (pgid === this.ownGroup) return `process group ${pgid} is our own`;
    if (this.protectedPids.has(pgid)) return `process group ${pgid} is led by this process or an ancestor`;
    for (const m of members) {
      const why = this.refusal(m);
      if (why) return why;
    }
    return undefined;
  }
}
