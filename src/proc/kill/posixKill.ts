/**
 * Killing a whole owned tree on Linux and macOS: SIGTERM to every member, a grace period, then SIGKILL to
 * whatever is left.
 *
 * Members are frozen with SIGSTOP before each signal round, and membership is resolved again until no new
 * member appears, so a member cannot fork its way out of the kill. Every signal goes to a process whose
 * identity (pid + start time) was just re-read, or to the recorded process group while it provably is ours.
 */
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { startedNoLaterThanTrackingBy } from '../identity/startTimes';
import { Membership, TreeIdentity } from '../members/membership';
import { resolveSubtreeMembers } from '../members/subtreeMembers';
import { resolveTreeMembers } from '../members/treeMembers';
import { ProcessInfo, ProcessTable } from '../platform/processTable';
import { Signaller } from '../platform/signaller';
import { KillOptions, KillPhase, KillReport, KillTarget, targetId } from './killTarget';

/** What a kill reads and signals through; tests pass synthetic ones. */
export interface KillDeps {
  table: ProcessTable;
  signaller: Signaller;
  guard: SignalGuard;
  cgroups: CgroupControl;
}

/** A process a kill waits on: by pid and start key, or by pid alone where only the pid is known (cgroup.procs). */
type ProcessRef = Pick<ProcessInfo, 'pid'> & { startKey?: number };

interface SignalOptions {
  /** Whether the processes it reaches count as ended in the report (SIGTERM, SIGKILL) or not (SIGSTOP, SIGCONT). */
  counted: boolean;
}
const COUNTED: SignalOptions = { counted: true };
const UNCOUNTED: SignalOptions = { counted: false };

const STOP_ROUNDS = 8;
const KILL_ROUNDS = 10;
/** How long to wait for SIGKILLed processes to finish exiting (uninterruptible sleep can delay it). */
const REAP_WAIT_MS = 3000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One kill of one target, from request to report. */
export class PosixTreeKill {
  /** Pids signalled (a pid is not reused within one kill: its holder is frozen or dead). */
  private readonly signalled = new Set<number>();
  private readonly refused = new Set<string>();
  private groupDoubt: string | undefined;
  private graceDeadline = Infinity;
  /** Whether cgroup.kill reached the tree (then the cgroup listing tells when its members are gone). */
  private cgroupKilled = false;
  /** The tree, for a whole-tree kill (a subtree has no group, session or cgroup of its own). */
  private readonly tree: TreeIdentity | undefined;

  constructor(
    private readonly target: KillTarget,
    private readonly options: KillOptions,
    private readonly deps: KillDeps,
    private readonly onPhase: (phase: KillPhase) => void,
  ) {
    this.tree = target.kind === 'tree' ? target.tree : undefined;
  }

  async run(): Promise<KillReport> {
    if (this.options.graceMs > 0) {
      const stopped = this.freeze();
      // Nobody stopped is not nobody left: members we may not signal are counted by the final look.
      if (stopped.length === 0) return this.finish(false);
      this.onPhase('terminate');
      this.signalAll(stopped, 'SIGTERM', COUNTED);
      this.signalAll(stopped, 'SIGCONT', UNCOUNTED);
      this.hurry(this.options.graceMs);
      if (await this.waitForEmpty(stopped)) return this.finish(false);
    }
    return this.finish(await this.escalate());
  }

  private resolve(): Membership {
    const snap = this.deps.table.snapshot();
    const t = this.target;
    const m =
      t.kind === 'tree'
        ? resolveTreeMembers(t.tree, snap, this.options, this.deps)
        : t.kind === 'subtree'
          ? resolveSubtreeMembers(snap, [{ pid: t.pid, startKey: t.startKey }], this.deps)
          : { ...t.resolve(snap, this.deps.guard), groupProven: false };
    if (m.groupDoubt) this.groupDoubt = m.groupDoubt;
    for (const why of m.excluded) this.refused.add(why);
    return m;
  }

  /**
   * SIGSTOPs every member, resolving again until a round finds no one new, so the set cannot grow behind our
   * back. Returns the stopped members (the caller must SIGCONT or SIGKILL them).
   */
  private freeze(): ProcessInfo[] {
    const stopped = new Map<number, ProcessInfo>();
    for (let round = 0; round < STOP_ROUNDS; round++) {
      const m = this.resolve();
      const fresh = m.members.filter((p) => stopped.get(p.pid)?.startKey !== p.startKey);
      if (fresh.length === 0) break;
      for (const p of this.signalMembers({ ...m, members: fresh }, 'SIGSTOP', UNCOUNTED)) stopped.set(p.pid, p);
    }
    return [...stopped.values()];
  }

  /** Signals members of one resolution: the proven group at once, the rest one by one. Returns who got it. */
  private signalMembers(m: Membership, signal: NodeJS.Signals, opts: SignalOptions): ProcessInfo[] {
    let groupDone = false;
    const pgid = this.tree?.pgid;
    if (pgid !== undefined && m.groupProven) groupDone = this.sendGroup(pgid, signal);
    const got: ProcessInfo[] = [];
    for (const p of m.members) {
      if (groupDone && p.pgid === pgid) {
        got.push(p);
        if (opts.counted) this.signalled.add(p.pid);
        continue;
      }
      if (this.signalOne(p, signal, opts)) got.push(p);
    }
    return got;
  }

  /** Signals a list of processes one by one (each identity re-read first). */
  private signalAll(list: ProcessInfo[], signal: NodeJS.Signals, opts: SignalOptions): void {
    for (const p of list) this.signalOne(p, signal, opts);
  }

  private signalOne(p: ProcessInfo, signal: NodeJS.Signals, opts: SignalOptions): boolean {
    const oneByOne = this.target.kind === 'members' && this.target.ownGroup === 'one-by-one';
    const why = oneByOne ? this.deps.guard.protectedPidReason(p) : this.deps.guard.protectedReason(p);
    if (why) {
      this.refused.add(why);
      return false;
    }
    const now = this.deps.table.read(p.pid);
    if (!now || now.startKey !== p.startKey) return false; // gone, or the pid is someone else's now
    const result = this.sendPid(p.pid, signal);
    if (result === 'denied') {
      // A member that changed uid (a set-uid program): only root or that uid may signal it. It is counted
      // among the survivors by the final look, and this says why.
      this.refused.add(`pid ${p.pid} runs as uid ${now.uid}: only root or uid ${now.uid} can end it`);
    }
    if (result !== 'sent') return false;
    if (opts.counted) this.signalled.add(p.pid);
    return true;
  }

  /**
   * The two places a signal leaves a kill. Each checks the guard once more, whatever the caller proved: our own
   * group may be leaderless (its leader gone), it may hold our parent, and nothing else would stop kill(-pgid).
   */
  private sendGroup(pgid: number, signal: NodeJS.Signals): boolean {
    const why = pgid <= 1 ? `process group ${pgid}` : this.deps.guard.groupRefusal(pgid, []);
    if (why) {
      this.refused.add(`not signalled as a group: ${why}`);
      return false;
    }
    return this.deps.signaller.signalGroup(pgid, signal) === 'sent';
  }

  private sendPid(pid: number, signal: NodeJS.Signals): 'sent' | 'gone' | 'denied' {
    if (pid <= 1 || this.deps.guard.isProtectedPid(pid)) return 'denied';
    return this.deps.signaller.signalProcess(pid, signal);
  }

  /** Polls until every listed member is dead and a fresh resolution finds no one; false at the grace deadline. */
  private async waitForEmpty(members: ProcessInfo[]): Promise<boolean> {
    let known = members;
    let interval = 5;
    while (Date.now() < this.graceDeadline) {
      await sleep(Math.min(interval, Math.max(1, this.graceDeadline - Date.now())));
      interval = Math.min(interval * 2, 100);
      known = known.filter((p) => this.isAlive(p));
      if (known.length > 0) continue;
      const stopped = this.freeze();
      if (stopped.length === 0) return true;
      // Born during the grace period: they get their SIGTERM too.
      this.signalAll(stopped, 'SIGTERM', COUNTED);
      this.signalAll(stopped, 'SIGCONT', UNCOUNTED);
      known = stopped;
    }
    return false;
  }

  /** Whether the process still runs: the same start key, or, known by pid alone, any process at that pid. */
  private isAlive(p: ProcessRef): boolean {
    const now = this.deps.table.read(p.pid);
    return now !== undefined && (p.startKey === undefined || now.startKey === p.startKey);
  }

  /** SIGKILL for everything left, round after round until a resolution finds no one. */
  private async escalate(): Promise<boolean> {
    const hit = this.killAtomically();
    let escalated = hit.length > 0;
    if (escalated) this.onPhase('escalate');
    // Let the kernel finish the exits it has started before scanning: a scan of a dying tree competes with
    // that work (on 2 cores it doubled the time to death) and would find only the dying. After cgroup.kill one
    // listing of the cgroup per look tells (an exited member leaves it, zombie or not), not a read per member.
    if (this.cgroupKilled) await this.waitCgroupEmpty(500);
    else await this.waitDead(hit, 500);
    for (let round = 0; round < KILL_ROUNDS; round++) {
      const stopped = this.freeze();
      if (stopped.length === 0) break;
      if (!escalated) {
        escalated = true;
        this.onPhase('escalate');
      }
      this.signalAll(stopped, 'SIGKILL', COUNTED);
      await this.waitDead(stopped, 500);
    }
    return escalated;
  }

  /**
   * The atomic SIGKILLs, before any full scan: the cgroup (`cgroup.kill`), else the process group while it
   * provably is the recorded one. Nothing they reach can fork again. Returns whom they reached (counted).
   */
  private killAtomically(): ProcessRef[] {
    const tree = this.tree;
    if (!tree) return [];
    if (tree.cgroup && this.options.cgroupVerified) {
      // cgroup.kill (or the cgroup freeze) would reach a killer inside the tree, and its ancestors: then the
      // other members are ended one by one instead, each frozen (SIGSTOP) first.
      const why = this.deps.guard.cgroupRefusal(this.deps.cgroups.procs(tree.cgroup));
      if (why) {
        this.refused.add(`cgroup ${tree.cgroup} not killed as a whole: ${why}`);
      } else {
        const pids = this.deps.cgroups.kill(tree.cgroup, (pid) => {
          const p = this.deps.table.read(pid);
          if (p) this.signalOne(p, 'SIGKILL', COUNTED);
        });
        for (const pid of pids) this.signalled.add(pid);
        // Every member was born in the cgroup: the group is in it too.
        this.cgroupKilled = pids.length > 0;
        if (pids.length > 0) return pids.map((pid) => ({ pid }));
      }
    }
    if (!this.groupIsProvenCheaply(tree)) return [];
    // One plain scan (no command lines, no environments) to count the group, then the group SIGKILL.
    const inGroup = [...this.deps.table.snapshot().processes.values()].filter(
      (p) => p.pgid === tree.pgid && !this.deps.guard.protectedReason(p),
    );
    if (inGroup.length === 0 || !this.sendGroup(tree.pgid, 'SIGKILL')) return [];
    for (const p of inGroup) this.signalled.add(p.pid);
    return inGroup;
  }

  /**
   * One synchronous SIGKILL round, no waiting, for a process that is exiting now: the atomic kills, then
   * every other member, frozen first. Returns whether anything was signalled.
   */
  killNow(): boolean {
    const hit = this.killAtomically();
    const stopped = this.freeze();
    this.signalAll(stopped, 'SIGKILL', COUNTED);
    return hit.length > 0 || stopped.length > 0;
  }

  /** The group is ours without a full scan: its leader started before tracking, or we owned it throughout. */
  private groupIsProvenCheaply(tree: TreeIdentity): boolean {
    const leader = this.deps.table.read(tree.pgid);
    if (leader) return leader.pgid === tree.pgid && startedNoLaterThanTrackingBy(this.deps.table.startPrecision, leader, tree);
    return this.options.continuouslyOwned;
  }

  /** A later request with a shorter grace period wins: SIGKILL comes no later than it asks. */
  hurry(graceMs: number): void {
    this.graceDeadline = Math.min(this.graceDeadline, Date.now() + graceMs);
  }

  /** Waits (up to `ms`) until the tree's cgroup holds no process. */
  private async waitCgroupEmpty(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.deps.cgroups.procs(this.tree!.cgroup!).length > 0 && Date.now() < deadline) await sleep(5);
  }

  /**
   * Waits (up to `ms`) until every listed process is dead; returns those still alive. Checks one at a time and
   * moves on once it is gone, so waiting on 1000 dying processes reads about 1000 files, not 1000 per poll.
   */
  private async waitDead<T extends ProcessRef>(list: T[], ms: number): Promise<T[]> {
    const deadline = Date.now() + ms;
    let i = 0;
    while (i < list.length) {
      if (this.isAlive(list[i])) {
        if (Date.now() >= deadline) break;
        await sleep(5);
        continue;
      }
      i++;
    }
    return list.slice(i).filter((p) => this.isAlive(p));
  }

  private async finish(escalated: boolean): Promise<KillReport> {
    let left = this.resolve().members;
    // Give the signalled ones time to finish exiting; those we could not signal will not.
    const dying = left.filter((p) => this.signalled.has(p.pid));
    if (dying.length > 0 && (await this.waitDead(dying, REAP_WAIT_MS)).length < dying.length) left = this.resolve().members;
    if (this.tree?.cgroup && this.options.cgroupVerified && left.length === 0) this.deps.cgroups.remove(this.tree.cgroup);
    return this.report(escalated, left);
  }

  private report(escalated: boolean, survivors: ProcessInfo[]): KillReport {
    return {
      treeId: targetId(this.target),
      signalled: this.signalled.size,
      survivors: survivors.length,
      survivorPids: survivors.map((p) => p.pid),
      escalated,
      refused: [...this.refused],
      groupDoubt: this.groupDoubt,
    };
  }
}

/**
 * SIGINT to a tree's process group, as Ctrl-C in a terminal sends it: only for a group that provably is the
 * tree's (its leader started no later than tracking, or the caller owned it throughout).
 */
export function interruptGroup(
  tree: TreeIdentity,
  continuouslyOwned: boolean,
  deps: Pick<KillDeps, 'table' | 'signaller' | 'guard'>,
): boolean {
  const leader = deps.table.read(tree.pgid);
  if (leader ? !startedNoLaterThanTrackingBy(deps.table.startPrecision, leader, tree) : !continuouslyOwned) return false;
  if (tree.pgid <= 1 || deps.guard.groupRefusal(tree.pgid, leader ? [leader] : [])) return false;
  return deps.signaller.signalGroup(tree.pgid, 'SIGINT') === 'sent';
}
