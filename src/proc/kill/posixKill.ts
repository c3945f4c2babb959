/**
 * Killing whole owned trees on Linux and macOS: SIGTERM to every member, a grace period, then SIGKILL to
 * whatever is left.
 *
 * Members are frozen with SIGSTOP before each signal round, and membership is resolved again until no new
 * member appears, so a member cannot fork its way out of the kill. A member frozen once stays a target for the
 * whole kill while it is that same process (pid and start time), whatever happens to its parent, group or tag
 * meanwhile: the kill's own group SIGKILL must not orphan it out of the tree. Every signal goes to a process
 * whose identity was just re-read, or to the recorded process group while it provably is ours.
 *
 * One kill may end several targets at once (a sweep's, an owner's at its end): they go through the steps
 * together, and each step resolves every target from one scan of the process table, so its cost follows the
 * steps, not the targets times the machine.
 */
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { startedNoLaterThanTrackingBy } from '../identity/startTimes';
import { Membership, TreeIdentity, watchdogsIn } from '../members/membership';
import { resolveSubtreeMembers } from '../members/subtreeMembers';
import { resolveTreeMembers } from '../members/treeMembers';
import { ProcessInfo, ProcessTable, provesIdentity, Snapshot } from '../platform/processTable';
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

/** One target of a kill, and what the kill learns of it. */
class TargetKill {
  readonly id: string;
  /** The tree, for a whole-tree kill (a subtree has no group, session or cgroup of its own). */
  readonly tree: TreeIdentity | undefined;
  /** Pids signalled (a pid is not reused within one kill: its holder is frozen or dead). */
  readonly signalled = new Set<number>();
  readonly refused = new Set<string>();
  /** Every process stopped as a member during this kill, by pid: a target while it is that same process. */
  private readonly frozen = new Map<number, ProcessInfo>();
  /** The members the current (or last) freeze stopped, to be ended. */
  stopped: ProcessInfo[] = [];
  /** The members the current freeze has tried to stop, by pid and start key. */
  private stoppedKeys = new Map<number, number>();
  groupDoubt: string | undefined;
  /** Whether cgroup.kill reached the tree (then the cgroup listing tells when its members are gone). */
  cgroupKilled = false;
  escalated = false;

  constructor(
    readonly target: KillTarget,
    readonly options: KillOptions,
    private readonly deps: KillDeps,
  ) {
    this.id = targetId(target);
    this.tree = target.kind === 'tree' ? target.tree : undefined;
  }

  /** The members in `snap`: by the target's rules, plus every process this kill froze that still is that process. */
  resolve(snap: Snapshot): Membership {
    const t = this.target;
    const frozen = [...this.frozen.values()];
    let m: Membership;
    if (t.kind === 'tree') {
      m = resolveTreeMembers(t.tree, snap, { ...this.options, extraSeeds: [...(this.options.extraSeeds ?? []), ...frozen] }, this.deps);
    } else if (t.kind === 'subtree') {
      m = resolveSubtreeMembers(snap, [{ pid: t.pid, startKey: t.startKey }, ...frozen], this.deps);
    } else {
      m = { ...t.resolve(snap, this.deps.guard), groupProven: false };
      const listed = new Set(m.members.map((p) => p.pid));
      const still = frozen.filter((p) => !listed.has(p.pid) && snap.processes.get(p.pid)?.startKey === p.startKey);
      if (still.length > 0) m = { ...m, members: [...m.members, ...still.map((p) => snap.processes.get(p.pid)!)] };
    }
    if (m.groupDoubt) this.groupDoubt = m.groupDoubt;
    for (const why of m.excluded) this.refused.add(why);
    return m;
  }

  /** Starts a freeze: nobody stopped by it yet. */
  beginFreeze(): void {
    this.stopped = [];
    this.stoppedKeys = new Map();
  }

  /** SIGSTOPs the members of `snap` not stopped yet in this freeze; returns whether there were any. */
  stopFresh(snap: Snapshot): boolean {
    const m = this.resolve(snap);
    const fresh = m.members.filter((p) => this.stoppedKeys.get(p.pid) !== p.startKey);
    if (fresh.length === 0) return false;
    // Tried once per freeze: one we may not signal (another uid) is not a reason for another round.
    for (const p of fresh) this.stoppedKeys.set(p.pid, p.startKey);
    for (const p of this.signalMembers({ ...m, members: fresh }, 'SIGSTOP', UNCOUNTED)) {
      this.stopped.push(p);
      this.frozen.set(p.pid, p);
    }
    return true;
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
  signalAll(list: ProcessInfo[], signal: NodeJS.Signals, opts: SignalOptions = COUNTED): void {
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

  /** Whether the process still runs: the same start key, or, known by pid alone, any process at that pid. */
  isAlive(p: ProcessRef): boolean {
    const now = this.deps.table.read(p.pid);
    return now !== undefined && (p.startKey === undefined || now.startKey === p.startKey);
  }

  /**
   * The atomic SIGKILLs: the cgroup (`cgroup.kill`), else the process group while it provably is the recorded
   * one in `snap`. Nothing they reach can fork again. Returns whom they reached (counted).
   */
  killAtomically(look: () => Snapshot): ProcessRef[] {
    const tree = this.tree;
    if (!tree) return [];
    if (this.killsByCgroup) {
      const hit = this.killCgroup(tree.cgroup!);
      if (hit.length > 0) return hit.map((pid) => ({ pid }));
    }
    const m = this.resolve(look());
    if (!m.groupProven) return [];
    const inGroup = m.members.filter((p) => p.pgid === tree.pgid);
    if (inGroup.length === 0 || !this.sendGroup(tree.pgid, 'SIGKILL')) return [];
    for (const p of inGroup) this.signalled.add(p.pid);
    return inGroup;
  }

  /**
   * `cgroup.kill`, unless the cgroup holds a process no kill of ours may take: a killer inside the tree (and its
   * ancestors), or an owner's watchdog (one started by an owner inside the tree: a watchdog sits in a cgroup of
   * its own only on the root tier). Then the other members are ended one by one instead, each frozen first. The
   * tree's own group goes first when its leader is the recorded root: proven by one read, and it holds no watchdog
   * (a watchdog leads a group of its own), so most members die as fast as by kill(-pgid) while the rest is looked at.
   */
  private killCgroup(cgroup: string): number[] {
    const listed = this.deps.cgroups.procs(cgroup);
    const groupKilled = this.killLedGroup();
    const look = this.watchdogAmong(listed);
    const why = this.deps.guard.cgroupRefusal(listed) ?? look.why;
    if (why) {
      this.refused.add(`cgroup ${cgroup} not killed as a whole: ${why}`);
      if (!groupKilled) return [];
      // What the group's SIGKILL reached: every listed process but those seen alive outside the group after it.
      const pgid = this.tree!.pgid;
      const reached = listed.filter((pid) => (look.snap?.processes.get(pid)?.pgid ?? pgid) === pgid);
      for (const pid of reached) this.signalled.add(pid);
      return reached;
    }
    const hit = new Set(listed);
    for (const pid of this.deps.cgroups.kill(cgroup, (pid) => {
      const p = this.deps.table.read(pid);
      if (p) this.signalOne(p, 'SIGKILL', COUNTED);
    }))
      hit.add(pid);
    for (const pid of hit) this.signalled.add(pid);
    // Every member was born in the cgroup: the group is in it too.
    this.cgroupKilled = hit.size > 0;
    return [...hit];
  }

  /** SIGKILLs the tree's process group while its leader is the recorded root itself (its exact start ticks). */
  private killLedGroup(): boolean {
    const tree = this.tree!;
    if (tree.rootPid !== tree.pgid || tree.rootStartTicks === undefined || this.deps.table.startPrecision.unit !== 'ticks') return false;
    if (this.deps.table.read(tree.rootPid)?.startKey !== tree.rootStartTicks) return false;
    return this.sendGroup(tree.pgid, 'SIGKILL');
  }

  /**
   * Why the cgroup's `pids` may not go by cgroup.kill: one is the watchdog of an owner among them (see
   * `watchdogsIn`). A watchdog leads a session and group of its own, so only the processes that do have their
   * environment and parent read: a read of each one's stat, not of its environment too. Also returns what was read
   * of `pids`.
   */
  private watchdogAmong(pids: number[]): { why?: string; snap?: Snapshot } {
    const table = this.deps.table;
    const since = table.startPrecision.unit === 'ticks' ? (this.tree?.rootStartTicks ?? 0) : 0;
    let snap: Snapshot;
    let read: Snapshot | undefined;
    if (table.snapshotOf) {
      read = table.snapshotOf(pids);
      const leaders = [...read.processes.values()].filter((p) => p.sid === p.pid && p.pgid === p.pid);
      if (leaders.length === 0) return { snap: read };
      snap = table.snapshotOf([...leaders.map((p) => p.pid), ...leaders.map((p) => p.ppid)]);
    } else {
      snap = read = table.snapshot();
    }
    // Spared for its owner's sake, a member: its owner sits in the cgroup too (see `resolveTreeMembers`).
    const listed = new Set(pids);
    const watchdogs = [...watchdogsIn(snap, since)].filter(([pid, w]) => listed.has(pid) && listed.has(w.owner));
    return { why: watchdogs[0]?.[1].why, snap: read };
  }

  /** Whether the atomic kill is the tree's cgroup's (checked ours), which needs no scan of the machine. */
  get killsByCgroup(): boolean {
    return !!this.tree?.cgroup && this.options.cgroupVerified;
  }

  /** Waits (up to `ms`) until the tree's cgroup holds no process. */
  async waitCgroupEmpty(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.deps.cgroups.procs(this.tree!.cgroup!).length > 0 && Date.now() < deadline) await sleep(5);
  }

  /**
   * Waits (up to `ms`) until every listed process is dead; returns those still alive. Checks one at a time and
   * moves on once it is gone, so waiting on 1000 dying processes reads about 1000 files, not 1000 per poll.
   */
  async waitDead<T extends ProcessRef>(list: T[], ms: number): Promise<T[]> {
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

  /**
   * The report: `left` are the members alive at the end. What was signalled and is gone is what it ended; a
   * signalled process still alive is a survivor, not an ended one.
   */
  report(left: ProcessInfo[]): KillReport {
    const leftPids = new Set(left.map((p) => p.pid));
    return {
      treeId: this.id,
      signalled: [...this.signalled].filter((pid) => !leftPids.has(pid)).length,
      survivors: left.length,
      survivorPids: left.map((p) => p.pid),
      escalated: this.escalated,
      refused: [...this.refused],
      groupDoubt: this.groupDoubt,
    };
  }
}

/** One target of a kill, with its own options (its cgroup proof, what its caller saw of it). */
export interface KillSpec {
  target: KillTarget;
  options: KillOptions;
}

/** One kill of one or more targets, from request to reports. */
export class PosixTreeKill {
  private readonly kills: TargetKill[];
  private graceDeadline = Infinity;
  /** A snapshot to start from instead of a scan of our own (the caller's, taken just now). */
  private firstLook: Snapshot | undefined;
  /** The last freeze's snapshot when it found no member of any target: nothing was signalled since. */
  private quietLook: Snapshot | undefined;

  constructor(
    specs: KillSpec[],
    private readonly deps: KillDeps,
    private readonly onPhase: (id: string, phase: KillPhase) => void,
    firstLook?: Snapshot,
  ) {
    this.kills = specs.map((s) => new TargetKill(s.target, s.options, deps));
    this.firstLook = firstLook;
  }

  /** Ends every target; resolves with a report per target, in the order of the specs. */
  async run(): Promise<KillReport[]> {
    const graceMs = Math.min(...this.kills.map((k) => k.options.graceMs));
    let left = this.kills;
    if (graceMs > 0) {
      this.freeze(left);
      // Nobody stopped is not nobody left: members we may not signal are counted by the final look.
      left = left.filter((k) => k.stopped.length > 0);
      for (const k of left) {
        this.onPhase(k.id, 'terminate');
        k.signalAll(k.stopped, 'SIGTERM');
        k.signalAll(k.stopped, 'SIGCONT', UNCOUNTED);
      }
      this.hurry(graceMs);
      if (left.length > 0) left = await this.waitForEmpty(left);
    }
    if (left.length > 0) await this.escalate(left);
    return this.finish();
  }

  /**
   * SIGSTOPs every member of each kill, resolving again until a round finds no one new, so the set cannot grow
   * behind our back; each round resolves every kill from one snapshot. Leaves each kill's stopped members in
   * `stopped` (to be SIGCONTed or SIGKILLed).
   */
  private freeze(kills: TargetKill[]): Snapshot | undefined {
    for (const k of kills) k.beginFreeze();
    let pending = kills;
    let snap: Snapshot | undefined;
    for (let round = 0; round < STOP_ROUNDS && pending.length > 0; round++) {
      snap = this.firstLook ?? this.deps.table.snapshot();
      this.firstLook = undefined;
      pending = pending.filter((k) => k.stopFresh(snap!));
    }
    const quiet = kills.length === this.kills.length && kills.every((k) => k.stopped.length === 0);
    this.quietLook = quiet ? snap : undefined;
    return snap;
  }

  /**
   * Polls until every listed member of each kill is dead and a fresh resolution finds no one, or the grace
   * deadline; returns the kills that still have members. Kills whose members all died since the last poll are
   * resolved again together, from one snapshot.
   */
  private async waitForEmpty(kills: TargetKill[]): Promise<TargetKill[]> {
    const known = new Map(kills.map((k) => [k, k.stopped]));
    let interval = 5;
    while (known.size > 0 && Date.now() < this.graceDeadline) {
      await sleep(Math.min(interval, Math.max(1, this.graceDeadline - Date.now())));
      interval = Math.min(interval * 2, 100);
      const emptied: TargetKill[] = [];
      for (const [k, list] of known) {
        const alive = list.filter((p) => k.isAlive(p));
        known.set(k, alive);
        if (alive.length === 0) emptied.push(k);
      }
      if (emptied.length === 0) continue;
      this.freeze(emptied);
      for (const k of emptied) {
        if (k.stopped.length === 0) {
          known.delete(k);
          continue;
        }
        // Born during the grace period: they get their SIGTERM too.
        k.signalAll(k.stopped, 'SIGTERM');
        k.signalAll(k.stopped, 'SIGCONT', UNCOUNTED);
        known.set(k, k.stopped);
      }
    }
    return [...known.keys()];
  }

  /** SIGKILL for everything left, the atomic kills first, then round after round until a resolution finds no one. */
  private async escalate(kills: TargetKill[]): Promise<void> {
    // One scan for every group proof (none where every tree goes by its cgroup). The group's SIGKILL orphans a member
    // outside the group that is one only through a parent in it (one born in the grace, or every such one when there
    // was no grace): the trees that have members outside their group are frozen first, so those stay targets.
    let snap: Snapshot | undefined;
    const look = () => (snap ??= this.deps.table.snapshot());
    const outside = kills.filter((k) => k.tree && !k.killsByCgroup && k.resolve(look()).members.some((p) => p.pgid !== k.tree!.pgid));
    if (outside.length > 0) snap = this.freeze(outside);
    const hits = kills.map((k) => ({ k, hit: k.killAtomically(look) }));
    for (const { k, hit } of hits) if (hit.length > 0) this.escalated(k);
    // Let the kernel finish the exits it has started before scanning: a scan of a dying tree competes with
    // that work (on 2 cores it doubled the time to death) and would find only the dying. After cgroup.kill one
    // listing of the cgroup per look tells (an exited member leaves it, zombie or not), not a read per member.
    await Promise.all(hits.map(({ k, hit }) => (k.cgroupKilled ? k.waitCgroupEmpty(500) : k.waitDead(hit, 500))));
    let pending = kills;
    for (let round = 0; round < KILL_ROUNDS && pending.length > 0; round++) {
      this.freeze(pending);
      pending = pending.filter((k) => k.stopped.length > 0);
      for (const k of pending) {
        this.escalated(k);
        k.signalAll(k.stopped, 'SIGKILL');
      }
      await Promise.all(pending.map((k) => k.waitDead(k.stopped, 500)));
    }
  }

  private escalated(k: TargetKill): void {
    if (k.escalated) return;
    k.escalated = true;
    this.onPhase(k.id, 'escalate');
  }

  /**
   * One synchronous SIGKILL round, no waiting, for a process that is exiting now: the atomic kills, then
   * every other member, frozen first. Returns whether anything was signalled.
   */
  killNow(): boolean {
    // Stopped first, as in `escalate`: the group's SIGKILL must not orphan a member out of the tree.
    let snap = this.freeze(this.kills);
    const look = () => (snap ??= this.deps.table.snapshot());
    const hit = this.kills.map((k) => k.killAtomically(look).length > 0);
    for (const k of this.kills) k.signalAll(k.stopped, 'SIGKILL');
    return hit.some(Boolean) || this.kills.some((k) => k.stopped.length > 0);
  }

  /** A later request with a shorter grace period wins: SIGKILL comes no later than it asks. */
  hurry(graceMs: number): void {
    this.graceDeadline = Math.min(this.graceDeadline, Date.now() + graceMs);
  }

  /** The last look: who is left of each target (giving the signalled time to finish exiting), and the reports. */
  private async finish(): Promise<KillReport[]> {
    // A freeze that just found no member of any target has looked already: nothing was signalled since.
    const first = this.quietLook ?? this.deps.table.snapshot();
    const left = new Map(this.kills.map((k) => [k, k.resolve(first).members]));
    // Give the signalled ones time to finish exiting; those we could not signal will not.
    const waited = await Promise.all(
      this.kills.map(async (k) => {
        const dying = left.get(k)!.filter((p) => k.signalled.has(p.pid));
        return dying.length > 0 && (await k.waitDead(dying, REAP_WAIT_MS)).length < dying.length;
      }),
    );
    if (waited.some(Boolean)) {
      const again = this.deps.table.snapshot();
      this.kills.forEach((k, i) => waited[i] && left.set(k, k.resolve(again).members));
    }
    return this.kills.map((k) => {
      const tree = k.tree;
      if (tree?.cgroup && k.options.cgroupVerified && left.get(k)!.length === 0) this.deps.cgroups.remove(tree.cgroup);
      return k.report(left.get(k)!);
    });
  }
}

/**
 * SIGINT to a tree's process group, as Ctrl-C in a terminal sends it: only for a group that provably is the
 * tree's (its leader started no later than tracking; a leaderless one by what the caller saw of it, as a kill
 * proves it).
 */
export function interruptGroup(
  tree: TreeIdentity,
  options: Pick<KillOptions, 'continuouslyOwned' | 'cgroupVerified' | 'extraSeeds' | 'rootAliveAt'>,
  deps: KillDeps,
): boolean {
  const leader = deps.table.read(tree.pgid);
  const precision = deps.table.startPrecision;
  let proven: boolean;
  if (leader) proven = startedNoLaterThanTrackingBy(precision, leader, tree);
  else if (!provesIdentity(precision)) proven = options.continuouslyOwned;
  else proven = resolveTreeMembers(tree, deps.table.snapshot(), options, deps).groupProven;
  if (!proven || tree.pgid <= 1 || deps.guard.groupRefusal(tree.pgid, leader ? [leader] : [])) return false;
  return deps.signaller.signalGroup(tree.pgid, 'SIGINT') === 'sent';
}
