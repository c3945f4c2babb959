/**
 * Which live processes belong to an owned tree. Five ways in, each proven before it counts:
 * the tree's process group and session (only while provably the recorded ones), its cgroup, every process
 * carrying its exact tag, and every descendant of any member.
 */
import { isRecordedRoot, startedNoLaterThanTrackingBy } from '../identity/startTimes';
import { ProcessInfo, provesIdentity, Snapshot, TREE_ID_VARIABLE } from '../platform/processTable';
import { MemberDeps, Membership, TreeIdentity, Watchdog, watchdogsIn, withDescendants } from './membership';

export interface ResolveOptions {
  /**
   * The caller has owned the tree continuously since it spawned it (a live owner). Where the platform gives no
   * start times (Windows), only such an owner can tell its group from another: a process at the leader's pid, or
   * a leaderless group, is its on its word. Elsewhere it proves nothing by itself: a group that emptied may be
   * another's now (its id is free once nothing holds it), so a leaderless group is proven by what the caller saw
   * (`extraSeeds`, `rootAliveAt`), a tagged member or the cgroup.
   */
  continuouslyOwned: boolean;
  /** Whether the tree's cgroup directory was checked to be ours. Only then are its pids members. */
  cgroupVerified: boolean;
  /**
   * Why a process can never be a member; such are not walked either. Defaults to the guard's (`MemberDeps`):
   * ourselves, our ancestors, our own group and PID 1.
   */
  protectedReason?: (p: ProcessInfo) => string | undefined;
  /**
   * Processes the caller has proven members by other means (seen as members before, pid and start time
   * re-checked against this snapshot; a terminal's processes carrying its window's tag). Like tagged ones they
   * seed the walk and prove a leaderless group or session they sit in.
   */
  extraSeeds?: ProcessInfo[];
  /**
   * The root's exact start key, when the caller read the root itself (a terminal's shell). A group or session
   * led by the root's pid is then proven by the key alone: equal keys, the same process; any other, another.
   */
  rootStartKey?: number;
  /**
   * A start key before which the root was provably alive: the clock, read (in start-key units, boot ticks) just
   * before a read of the root found it running. For a root that led its session and group (every tree spawned
   * here), a process of that session that started before this key was born while the root lived, so the session's
   * id has been held ever since: the session and the group are the tree's, leader or not. A group or session
   * made with that id after the tree's emptied holds only processes born after the root died.
   */
  rootAliveAt?: number;
}

/**
 * Resolves the live members of `tree` in `snap`.
 *
 * A running group leader (pid == pgid) proves the group only if it provably started no later than the tree was
 * tracked (`startedNoLaterThanTracking`: in boot ticks, the recorded root exactly). A leaderless group is proven
 * only while it provably never emptied: one of its members carries the tree's tag, sits in its cgroup, or was
 * seen as a member by the caller (`extraSeeds`), or (`rootAliveAt`) was born while the root lived. Otherwise its
 * members are not taken on a guess: its id may be another group's by now.
 *
 * Another user's process is a member only by lineage (the cgroup, the proven group or session, descent from a
 * member): anyone can set an environment variable, so a tag alone never makes it one. A member that changed
 * uid (a set-uid program) is still a member. An owner's watchdog is never one (see `watchdogsIn`) while its owner
 * is a member: one whose parent is not (PID 1 or a subreaper that adopted it, any process outside the tree) only
 * poses as one, and no kill of the tree would ever end its owner.
 */
export function resolveTreeMembers(tree: TreeIdentity, snap: Snapshot, options: ResolveOptions, deps: MemberDeps): Membership {
  // Nothing older than the root carries its tag (or is a watchdog started inside it): their environments go unread.
  const watchdogs = watchdogsIn(snap, snap.startPrecision.unit === 'ticks' ? (tree.rootStartTicks ?? 0) : 0);
  const first = resolveSparing({ tree, snap, options, deps }, watchdogs);
  const memberPids = new Set(first.membership.members.map((p) => p.pid));
  const posing = [...first.spared].filter((pid) => !memberPids.has(watchdogs.get(pid)!.owner));
  if (posing.length === 0) return first.membership;
  for (const pid of posing) watchdogs.delete(pid);
  return resolveSparing({ tree, snap, options, deps }, watchdogs).membership;
}

/** The members, sparing `watchdogs`; and which of them it spared (met as would-be members). */
function resolveSparing(
  r: { tree: TreeIdentity; snap: Snapshot; options: ResolveOptions; deps: MemberDeps },
  watchdogs: Map<number, Watchdog>,
): { membership: Membership; spared: Set<number> } {
  const { tree, snap, options, deps } = r;
  const procs = snap.processes;
  /** Members by lineage: the cgroup, the proven group and session, the root. */
  const seeds = new Map<number, ProcessInfo>();
  const excluded = new Set<string>();
  const spared = new Set<number>();
  const since = snap.startPrecision.unit === 'ticks' ? (tree.rootStartTicks ?? 0) : 0;
  const guard = options.protectedReason ?? ((p: ProcessInfo) => deps.guard.protectedReason(p));
  const isProtected = (p: ProcessInfo): boolean => {
    if (p.pid <= 1) return true;
    const watchdog = watchdogs.get(p.pid);
    if (watchdog) spared.add(p.pid);
    const why = watchdog?.why ?? guard(p);
    if (why) excluded.add(why);
    return why !== undefined;
  };
  const add = (p: ProcessInfo | undefined) => {
    if (p && !isProtected(p)) seeds.set(p.pid, p);
  };

  const cgroupPids = tree.cgroup && options.cgroupVerified ? deps.cgroups.procs(tree.cgroup) : [];
  for (const pid of cgroupPids) add(procs.get(pid));
  for (const p of options.extraSeeds ?? []) if (procs.get(p.pid)?.startKey === p.startKey) add(procs.get(p.pid));
  const tagged = (snap.tagged(TREE_ID_VARIABLE, since).get(tree.id) ?? []).filter((p) => p.startKey >= since && !isProtected(p));
  const taggedPids = new Set(tagged.map((p) => p.pid));

  // Group and session: sid == pgid == rootPid for trees we spawned; each is checked on its own anyway.
  const groupMembers: ProcessInfo[] = [];
  const sessionMembers: ProcessInfo[] = [];
  for (const p of procs.values()) {
    if (p.pgid === tree.pgid) groupMembers.push(p);
    if (p.sid === tree.sid) sessionMembers.push(p);
  }
  const evidence: GroupEvidence = { tree, snap, options, deps, seeds, taggedPids, sessionMembers };
  let groupDoubt: string | undefined;
  const group = groupProof(evidence, tree.pgid, groupMembers, 'process group');
  const groupProven = group === true;
  if (groupProven) for (const p of groupMembers) add(p);
  else if (group) groupDoubt = group;
  const session = groupProof(evidence, tree.sid, sessionMembers, 'session');
  if (session === true) for (const p of sessionMembers) add(p);
  else if (session) groupDoubt = session;

  addRoot(tree, snap, add);
  const members = withTagged(tagged, seeds, { snap, deps, isProtected, excluded });
  const membership = { members: [...members.values()], groupProven, groupDoubt, inCgroup: cgroupPids.length, excluded: [...excluded] };
  return { membership, spared };
}

/** The root itself, if it is not its own group leader (it always is for trees spawned here). */
function addRoot(tree: TreeIdentity, snap: Snapshot, add: (p: ProcessInfo) => void): void {
  const root = snap.processes.get(tree.rootPid);
  const precision = snap.startPrecision;
  if (
    root &&
    root.pid !== tree.pgid &&
    provesIdentity(precision) &&
    isRecordedRoot(root, tree, precision.unit === 'ticks', precision.errorMs)
  )
    add(root);
}

/**
 * The members: the seeds, the tagged processes of our own uid (another user's only if lineage makes it a member
 * anyway), and every descendant of them all.
 */
function withTagged(
  tagged: ProcessInfo[],
  seeds: Map<number, ProcessInfo>,
  walk: { snap: Snapshot; deps: MemberDeps; isProtected: (p: ProcessInfo) => boolean; excluded: Set<string> },
): Map<number, ProcessInfo> {
  const foreign = new Map<number, number>();
  for (const p of tagged) {
    if (seeds.has(p.pid)) continue;
    const uid = walk.deps.guard.otherUid?.(p);
    if (uid === undefined) seeds.set(p.pid, p);
    else foreign.set(p.pid, uid);
  }
  const members = withDescendants(seeds, walk.snap, walk.isProtected);
  for (const [pid, uid] of foreign) {
    if (!members.has(pid))
      walk.excluded.add(
        `pid ${pid} carries the tree's tag but runs as uid ${uid}: a tag alone does not make another user's process a member`,
      );
  }
  return members;
}

/** What a group or session is proven by: the tree, the snapshot, the resolution's options, and the members so far. */
interface GroupEvidence {
  tree: TreeIdentity;
  snap: Snapshot;
  options: ResolveOptions;
  deps: MemberDeps;
  /** Members by lineage so far (the cgroup, proven seeds, and the group once it is proven). */
  seeds: Map<number, ProcessInfo>;
  /** Processes carrying the tree's tag. */
  taggedPids: Set<number>;
  /** Every process of the tree's session. */
  sessionMembers: ProcessInfo[];
}

/**
 * Whether the process group (or session) led by `leaderPid`, of `members`, provably is the tree's: true, or why
 * not; undefined when it has no member. A running leader proves it only if it provably started no later than the
 * tree was tracked; a leaderless one only while it provably never emptied (see `resolveTreeMembers`).
 */
function groupProof(e: GroupEvidence, leaderPid: number, members: ProcessInfo[], what: string): true | string | undefined {
  const { tree, options } = e;
  if (members.length === 0) return undefined;
  const precision = e.snap.startPrecision;
  const leader = e.snap.processes.get(leaderPid);
  if (leader && !provesIdentity(precision)) {
    // No start times (Windows): a process at the leader's pid may be anyone's; only the owner knows.
    return options.continuouslyOwned ? true : `${what} ${leaderPid}: this platform gives no start times to prove its leader`;
  }
  if (leader && options.rootStartKey !== undefined && leaderPid === tree.rootPid) {
    return leader.startKey === options.rootStartKey ? true : `${what} ${leaderPid} is led by another process than the recorded one`;
  }
  if (leader) {
    if (startedNoLaterThanTrackingBy(precision, leader, tree)) return true;
    return precision.unit === 'ticks' && tree.trackedAtTicks === undefined && tree.rootStartTicks === undefined
      ? `${what} ${leaderPid} has a leader whose start cannot be compared with the record (no boot-clock times in it)`
      : `${what} ${leaderPid} is led by a process that started after the tree was tracked`;
  }
  if (options.continuouslyOwned && !provesIdentity(precision)) return true;
  return neverEmptied(e, members)
    ? true
    : `${what} ${leaderPid} has no leader and no member carrying the tree's tag${options.continuouslyOwned ? ' or seen as a member' : ''}: it may have emptied, and its id be another's now`;
}

/**
 * Whether a leaderless group (or session) provably never emptied since it was the tree's: one of its members
 * carries the tree's tag (of our uid), sits in its cgroup or was seen as a member. Where the root led both its
 * session and its group (every tree spawned here), both ids are held as long as any process of the session lives,
 * so any process of the session proves both by the same evidence, or by having been born while the root lived.
 */
function neverEmptied(e: GroupEvidence, members: ProcessInfo[]): boolean {
  const { tree, options } = e;
  const vouched = (m: ProcessInfo) => e.seeds.has(m.pid) || (e.taggedPids.has(m.pid) && e.deps.guard.otherUid?.(m) === undefined);
  const rootLedBoth = tree.rootPid === tree.pgid && tree.pgid === tree.sid;
  if (!rootLedBoth) return members.some(vouched);
  const aliveAt = options.rootAliveAt;
  return e.sessionMembers.some((m) => vouched(m) || (aliveAt !== undefined && m.startKey < aliveAt));
}
