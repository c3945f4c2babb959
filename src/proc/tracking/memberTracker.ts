/**
 * The live view's members at a cost that follows the members, not the machine.
 *
 * A refresh reads only the processes that can be members, and resolves them by the core's rules (`listMembers`:
 * resolveTreeMembers, resolveTerminalTrees, windowRecords) on that small snapshot:
 *   - a tree in a verified cgroup of its own: the pids in its cgroup and every cgroup below it (nothing can leave
 *     a cgroup), plus its root and leaders;
 *   - any other tree, and a terminal: its members at the last refresh, its root (shell), its group and session
 *     leaders, and every descendant of theirs, walked down through `/proc/<pid>/task/<tid>/children`;
 *   - another owner's record: its owner process, and its trees as above;
 *   - the extension host's processes of other extensions (hostChildren/): the host, its members at the last
 *     refresh, the processes it saw before, and every descendant of theirs.
 * A member that left the parent chain between two refreshes (a `setsid -f` daemon re-parented to PID 1, say) is
 * reachable by neither: a full scan finds it, at a lower rate (every FULL_SCAN_INTERVAL_MS while refreshes come,
 * or when asked), and from then on it is a known member. A full scan lists every process but reads only those
 * that started since the previous one (a census, see `snapshotOfNewcomers`): a process that was no member then
 * cannot have become one since (group, session and tags are set at birth; a descendant of a member is born after
 * it). It reads every process the first time, when asked, when a tree or terminal comes that it knows no
 * members of, and every THOROUGH_SCAN_EVERY-th time (pid allocation can come round unseen). A tree that is a
 * large part of the machine is refreshed by a full scan every time (listing /proc then costs less than the walk).
 * Where the kernel has no children lists (CONFIG_PROC_CHILDREN), or the platform cannot read processes one by
 * one, every refresh reads every process.
 *
 * Nothing here reads a process unless a refresh is asked for: no timers. Kills and sweeps never use it; they
 * resolve on a full scan every time, so their reach does not depend on what a refresh saw.
 */
import { seenPids } from '../members/seenProcesses';
import { ProcessTable } from '../platform/processTable';
import { CgroupLocator, ListingDeps, listMembers, MemberListing, recordedTreeQuery, TreeQuery, ViewExtras } from './listing';

/** How often a full scan looks for members that left the parent chain, while the view refreshes. */
const FULL_SCAN_INTERVAL_MS = 10_000;
/**
 * Every this many full scans, one reads every process. A census trusts what it read of a pid until ns_last_pid and
 * the fork count say allocation may have come round to it, but forks that fail after their pid was allocated (in a
 * pid namespace whose init exited, in a full pids cgroup) move allocation on and count nowhere: a member left at
 * a pid seen before stays hidden from the view for at most this many scans, not for ever.
 */
const THOROUGH_SCAN_EVERY = 6;
/**
 * A full scan that is due this soon runs with the refresh at hand: at 1 Hz the 10th refresh after a scan may
 * come a few ms before the 10 s are up, and waiting for the 11th would make the interval 11 s.
 */
const FULL_SCAN_EARLY_MS = 500;
/**
 * How often a refresh walks down from the extension host's processes (the children lists of each of their threads:
 * the host, claude and a Node server run a dozen threads each, so a walk reads some ten times more files than
 * there are processes); the refreshes between read the known ones only. A newcomer there shows this much later at
 * most, and a host child only once it has run for 2 s anyway (hostChildren/grouping.ts).
 */
const HOST_WALK_INTERVAL_MS = 3000;
/**
 * Listing /proc costs about a twelfth of reading one children list per process (0.6 µs against 7 µs here): once
 * the processes to walk from are more than this share of the machine, a full scan is the cheaper refresh.
 */
const WALK_SHARE_OF_MACHINE = 1 / 12;
/**
 * Below this many processes to walk from, the walk is taken whatever the machine's size: it costs well under a
 * millisecond, and on a small machine (a fresh CI box of ~100 processes) a handful of members would otherwise be
 * "a twelfth of the machine" and each refresh would list /proc, the choice flipping as processes come and go.
 */
const MIN_WALK_FOR_LISTING = 64;

/** One refresh, as plain data (it crosses to the snapshot worker). */
export interface RefreshRequest {
  trees: TreeQuery[];
  extras: ViewExtras;
  /** Pids of each item's members at the last refresh, by item key (see `itemKeys`). */
  known: Record<string, number[]>;
  /** Look at every process on the machine (finds members that left the parent chain). */
  full: boolean;
  /** Read every process, not only those that started since the last full scan. */
  thorough?: boolean;
  /**
   * The members to read are most of the machine: a plain scan of every process reads no more, and keeps no
   * census (the next one still reads everything that started since the last).
   */
  mostOfMachine?: boolean;
  /** Whose full scans these are: each asker's census is its own (see MemberTracker). */
  channel?: string;
  /** Walk down from the extension host's processes (`extras.host`); else read only those known (see HOST_WALK_INTERVAL_MS). */
  hostWalk?: boolean;
}

const treeKey = (id: string) => `tree:${id}`;
const terminalKey = (shellKey: string) => `terminal:${shellKey}`;
const recordKey = (id: string) => `record:${id}`;
/** The extension host's processes of other extensions (one item: `ViewExtras.host`). */
const HOST_KEY = 'host';

/** Whether a tree's members are exactly its cgroup's processes. */
function inOwnCgroup(t: TreeQuery): boolean {
  return t.cgroup !== null && t.cgroupVerified && !t.beyondCgroup;
}

/** The items a request asks about that a refresh must walk to (not held by a cgroup of their own), by key. */
function walkedItems(trees: TreeQuery[], extras: ViewExtras, deps: CgroupLocator): string[] {
  return [
    ...trees.filter((t) => !inOwnCgroup(t)).map((t) => treeKey(t.id)),
    ...(extras.terminals?.shells ?? []).map((s) => terminalKey(s.key)),
    ...(extras.liveRecords ?? []).flatMap((r) =>
      r.record.trees.filter((t) => !inOwnCgroup(recordedTreeQuery(t, deps))).map((t) => recordKey(t.id)),
    ),
    ...(extras.host ? [HOST_KEY] : []),
  ];
}

/** Whether `table` can refresh these without reading every process. */
export function canTrack(table: ProcessTable, trees: TreeQuery[], extras: ViewExtras, deps: CgroupLocator): boolean {
  if (!table.snapshotOf) return false;
  return walkedItems(trees, extras, deps).length === 0 || (table.listsChildren?.() ?? false);
}

/**
 * Runs one refresh: every member asked about in `request`, read as described at the top of this module. The
 * same on any thread: all it needs is in the request.
 */
export function refreshMembers(table: ProcessTable, request: RefreshRequest, treesDeps: ListingDeps): MemberListing {
  const { trees, extras } = request;
  // One listing of each cgroup per refresh: the seeds and the member rules read the same one.
  const listed = new Map<string, number[]>();
  const cgroups = treesDeps.cgroups;
  const deps: ListingDeps = {
    ...treesDeps,
    cgroups: { ...cgroups, procs: (dir) => listed.get(dir) ?? listed.set(dir, cgroups.procs(dir)).get(dir)! },
  };
  const asked =
    trees.length > 0 || (extras.terminals?.shells.length ?? 0) > 0 || (extras.liveRecords?.length ?? 0) > 0 || extras.host !== undefined;
  if (!asked) return { takenAt: Date.now(), processCount: 0, fullScan: false, trees: [], terminals: [], windowRecords: [] };
  const walking = canTrack(table, trees, extras, deps);
  // A snapshot of some processes only: what the rules need beyond it (a tagged process's ancestors) is read.
  const readProcess = (pid: number) => table.read(pid);
  if (request.full && walking && !request.mostOfMachine && table.snapshotOfNewcomers && table.listsChildren?.()) {
    // Known members, leaders and every process that started since the last full scan: what a full resolution
    // finds is among these, and no walk is needed.
    const { read, walk } = seedsOf(request, deps);
    const snap = table.snapshotOfNewcomers([...read, ...walk], [], { everything: request.thorough, channel: request.channel });
    return { ...listMembers(snap, trees, deps, { extras, readProcess }), fullScan: true };
  }
  if (request.full || !walking) return { ...listMembers(table.snapshot(), trees, deps, { extras }), fullScan: true };
  const { read, walk } = seedsOf(request, deps);
  return { ...listMembers(table.snapshotOf!(read, walk), trees, deps, { extras, readProcess }), fullScan: false };
}

/** The processes a refresh starts from: cgroup listings, owners and leaders to read, and known members to walk from. */
function seedsOf(request: RefreshRequest, deps: ListingDeps): { read: Set<number>; walk: Set<number> } {
  const read = new Set<number>();
  const walk = new Set<number>();
  const known = (key: string) => request.known[key] ?? [];
  const tree = (t: TreeQuery, key: string) => {
    const leaders = [t.rootPid, t.pgid, t.sid];
    if (t.cgroup === null || !t.cgroupVerified) {
      for (const pid of [...leaders, ...known(key)]) walk.add(pid);
      return;
    }
    const inCgroup = deps.cgroups.procs(t.cgroup);
    for (const pid of [...inCgroup, ...leaders]) read.add(pid);
    // Members that left the cgroup (counted by the rules: a budget asks for them) are read, and walked from.
    if (t.beyondCgroup) {
      const listed = new Set(inCgroup);
      for (const pid of known(key)) if (!listed.has(pid)) walk.add(pid);
    }
  };
  for (const t of request.trees) tree(t, treeKey(t.id));
  const terminals = request.extras.terminals;
  for (const shell of terminals?.shells ?? []) {
    walk.add(shell.pid);
    for (const pid of known(terminalKey(shell.key))) walk.add(pid);
    for (const pid of seenPids(terminals!.seen[shell.key] ?? [])) walk.add(pid);
  }
  for (const { record } of request.extras.liveRecords ?? []) {
    read.add(record.owner.pid);
    for (const t of record.trees) tree(recordedTreeQuery(t, deps), recordKey(t.id));
  }
  const host = request.extras.host;
  if (host)
    for (const pid of [host.host.pid, ...known(HOST_KEY), ...seenPids(host.seen)]) (request.hostWalk === false ? read : walk).add(pid);
  // PID 1 and below are never members, and walking PID 1 would read every orphan on the machine.
  for (const pid of walk) if (pid <= 1) walk.delete(pid);
  for (const pid of read) if (pid <= 0) read.delete(pid);
  return { read, walk };
}

export interface MemberTrackerOptions {
  fullScanIntervalMs?: number;
  /** The clock in ms (tests move it); monotonic by default. */
  now?: () => number;
}

/**
 * What one asker (the view; the look at terminals while it is hidden) knows between refreshes: each item's
 * members, when the last full scan ran, how many processes the machine had. It decides what the next refresh
 * reads (`next`) and learns from its answer (`learn`); the reading itself is `refreshMembers`, on whichever
 * thread. Each asker needs a tracker of its own, and its own census (`channel`): a census marks the processes it
 * read as seen, for the items it was asked about only.
 */
export class MemberTracker {
  private known = new Map<string, number[]>();
  /** What the last request walked to: each is known after its answer, with no member if it had none. */
  private asked: string[] = [];
  private lastFullScanAt = -Infinity;
  private lastHostWalkAt = -Infinity;
  /** Full scans since the last that read every process. */
  private scansSinceThorough = 0;
  private scanWanted = false;
  private machine: number | undefined;
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly deps: CgroupLocator,
    options: MemberTrackerOptions = {},
    private readonly channel = 'view',
  ) {
    this.intervalMs = options.fullScanIntervalMs ?? FULL_SCAN_INTERVAL_MS;
    // Monotonic: a wall-clock step must not move the next full scan.
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * The next refresh. A full scan when one is due (or asked for) and something must be walked to (a cgroup of
   * its own holds every member of a tree), when walking costs more than listing /proc, or when `tracking` is
   * false (the table cannot walk children). It reads every process when asked, when an item comes whose members
   * it does not know (they may be older than the last full scan), and every THOROUGH_SCAN_EVERY full scans.
   */
  next(trees: TreeQuery[], extras: ViewExtras = {}, tracking = true): RefreshRequest {
    const walked = walkedItems(trees, extras, this.deps);
    this.asked = walked;
    const known: Record<string, number[]> = {};
    for (const key of walked) {
      const pids = this.known.get(key);
      if (pids) known[key] = pids;
    }
    const unknown = walked.some((key) => !this.known.has(key));
    const due = this.scanWanted || unknown || this.scanDue();
    const toWalk = walked.length * 3 + Object.values(known).reduce((n, pids) => n + pids.length, 0);
    const cheaper = this.machine !== undefined && toWalk > Math.max(MIN_WALK_FOR_LISTING, this.machine * WALK_SHARE_OF_MACHINE);
    const full = walked.length > 0 && (!tracking || due || cheaper);
    const thorough = full && (this.scanWanted || unknown || this.scansSinceThorough >= THOROUGH_SCAN_EVERY - 1);
    if (full) {
      this.lastFullScanAt = this.now();
      this.scanWanted = false;
      this.scansSinceThorough = thorough ? 0 : this.scansSinceThorough + 1;
    }
    const mostOfMachine = full && !thorough && this.machine !== undefined && toWalk > this.machine / 2;
    return { trees, extras, known, full, thorough, mostOfMachine, channel: this.channel, hostWalk: this.hostWalk(extras) };
  }

  /** Whether a full scan is due by time (or asked for): the next refresh that walks to something is one. */
  scanDue(): boolean {
    const since = this.now() - this.lastFullScanAt;
    // A clock that went back (an injected one) makes the scan due, never puts it off by the size of the step.
    return this.scanWanted || since < 0 || since >= this.intervalMs - FULL_SCAN_EARLY_MS;
  }

  /** Whether this refresh walks down from the host's processes: when it knows none yet, else every HOST_WALK_INTERVAL_MS. */
  private hostWalk(extras: ViewExtras): boolean {
    if (!extras.host) return false;
    const since = this.now() - this.lastHostWalkAt;
    if (this.known.has(HOST_KEY) && since >= 0 && since < HOST_WALK_INTERVAL_MS - FULL_SCAN_EARLY_MS) return false;
    this.lastHostWalkAt = this.now();
    return true;
  }

  /** Takes in a refresh's answer: its members are the known members from now on. */
  learn(result: MemberListing): void {
    const known = new Map<string, number[]>();
    for (const t of result.trees)
      known.set(
        treeKey(t.id),
        t.members.map((m) => m.pid),
      );
    for (const t of result.terminals)
      known.set(
        terminalKey(t.shellKey),
        t.members.map((m) => m.pid),
      );
    for (const r of result.windowRecords)
      for (const t of r.trees)
        known.set(
          recordKey(t.id),
          t.members.map((m) => m.pid),
        );
    if (result.host)
      known.set(
        HOST_KEY,
        result.host.members.map((m) => m.pid),
      );
    for (const key of this.asked) if (!known.has(key)) known.set(key, []); // another window's record, say
    this.known = known;
    if (result.listed !== undefined) this.machine = result.listed;
  }

  /** The next refresh reads every process (the user asked for a fresh look). */
  scanSoon(): void {
    this.scanWanted = true;
  }
}
