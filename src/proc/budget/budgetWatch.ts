/**
 * The budget watch: one owner's trees that have limits, looked at about once a second, each ended (through the
 * owner's `onBreach`) when it is seen past one of its limits:
 *   - memory: the members' PSS (RSS where PSS cannot be read; see memoryUse.ts) above `maxMemoryMB`; or the
 *     kernel's OOM kill, where the kernel holds the tree's memory (cgroup/treeLimits.ts);
 *   - processes: more live members than `maxProcesses` (where the kernel holds pids.max, it stops a fork loop at
 *     twice the limit meanwhile; the watch keeps that line above the tree's threads);
 *   - idle: `idleTimeoutSeconds` with no CPU time used by any member, no member come or gone, and no byte through
 *     the tree's terminal or stdio (the owner's front end tells, `noteActivity`).
 * It reads only the members, as the view's refresh does (a member tracker of its own: tracking/memberTracker.ts,
 * the same rules), members that left the tree's cgroup included; nothing at all while no tree has limits. While a
 * tree the kernel does not hold is near a limit (half its processes, 80 % of its memory) it looks ten times a
 * second, so what grows slowly is seen soon past the limit; a fork loop outruns any look (see docs/design/budgets.md).
 */
import { CgroupActivity, CgroupActivitySource } from '../cgroup/cgroupActivity';
import { KernelLines, pidsCap, presentLines, readKernelEvents, setPidsCap } from '../cgroup/treeLimits';
import { Logger, silentLogger } from '../platform/log';
import { COMMAND_SETTLES_MS, ProcessInfo, ProcessTable } from '../platform/processTable';
import { BYTES_PER_MB, TreeLimits } from '../records/schema';
import { ListingDeps, TreeQuery } from '../tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../tracking/memberTracker';
import { Breach, BudgetUse, NEAR_LIMIT } from './limits';
import { MemoryGauge, PssReader } from './memoryUse';

/** How often trees are looked at. */
const LOOK_MS = 1000;
/** How often while a tree the kernel does not hold is near a limit. */
const NEAR_LOOK_MS = 100;
/** The first look after a tree is watched: its idle time starts from there. */
const FIRST_LOOK_MS = 100;
/**
 * The longest a look may take the members it last resolved (re-read, or vouched for by their cgroup) before it
 * resolves them by the rules again (a resolve costs some ten looks): what changes membership without a birth or a
 * move into a tree's own cgroup (a process moved into a tree's group, or into a cgroup below its own) counts this
 * late at most.
 */
const RESOLVE_EVERY_MS = 30_000;
/**
 * The longest a quiet tree's members' figures stand unread (see membersAsBefore): a member's memory can grow while
 * nothing in its cgroup runs (the kernel's khugepaged collapsing its sparse memory into huge pages, another process
 * writing into it through /proc/<pid>/mem or process_vm_writev). As long as a member's PSS reading stands.
 */
const QUIET_FIGURES_STAND_MS = 10_000;
/**
 * Between two looks, at most this many processes born elsewhere on the machine are each checked for a parent among
 * the members (one stat each); past it, the look resolves by the rules (about 40 reads for a 20-process tree).
 */
const MAX_NEWBORNS_CHECKED = 16;
/** A tree is near its process limit from this share on (a loop forks fast: from half, not from 80 %). */
const NEAR_PROCESSES = 0.5;

export interface BudgetWatchOptions {
  table: ProcessTable;
  /** The member rules' parts: the guard, the cgroups and where ours live. */
  deps: ListingDeps;
  /** A process's PSS (Linux: smaps_rollup); RSS is used where it is absent. */
  readPss?: PssReader;
  /** A process's CPU time in ns, exact (Linux: schedstat); without it, the snapshot's clock ticks alone count. */
  readCpuNs?: (pid: number) => number | undefined;
  /**
   * Reads a tree's cgroup at a glance (Linux: cgroup/cgroupActivity.ts): a tree whose cgroup holds exactly its
   * members and used no CPU time since the last look costs that look two reads, whatever its size.
   */
  cgroupActivity?: CgroupActivitySource;
  /** A tree is past a limit: it is no longer watched (the owner ends it). */
  onBreach(id: string, breach: Breach): void;
  /** After each look: the use figures changed. */
  onLook?(): void;
  /** Monotonic ms (tests move it). */
  now?: () => number;
  log?: Logger;
}

interface WatchedTree {
  query: TreeQuery;
  limits: TreeLimits;
  lines: KernelLines;
  linesChecked: boolean;
  gauge: MemoryGauge;
  /** CPU time of each member (`pid:startKey`) at the last look; undefined before the first. */
  cpu?: Map<string, number>;
  /** The members the last look judged (the same list again: membersAsBefore saw none of them run since). */
  judged?: ProcessInfo[];
  /** Each member's exact CPU time (ns) at the first look that saw it quiet; undefined while it is active. */
  quietCpuNs?: Map<string, number | undefined>;
  lastActive: number;
  /** The kernel's OOM kills in its cgroup so far: none in a cgroup made for it. */
  oomKills: number;
  /** pids.max as last written. */
  cap?: number;
  use?: BudgetUse;
  /** When it wants its next look (monotonic ms). */
  due: number;
  /** Its cgroup as the last look that read it saw it. */
  cgroupSeen?: CgroupActivity;
  /**
   * Where it has no cgroup to read: each member's run stamp (`pid:startKey` -> ProcessTable.runStamp) as last read,
   * some maybe read at an earlier look (one that stands still since then did not run since the last look either).
   */
  runStamps?: Map<string, string>;
  /** When its members' figures were last read (resolved or read again), monotonic ms. */
  readAt?: number;
  /** Near a limit the kernel does not hold, as the last look saw it: its members are read at every look. */
  near?: boolean;
}

export class BudgetWatch {
  private readonly trees = new Map<string, WatchedTree>();
  private readonly tracker: MemberTracker;
  private readonly now: () => number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  /** The members as last resolved by the rules, and the newest pid just before. */
  private resolved:
    | {
        newestPid: number;
        at: number;
        members: Map<string, ProcessInfo[]>;
        /** Each tree's processes below its members that are none (MemberListing's `beside`): their children may be. */
        beside: Map<string, number[]>;
        /**
         * Whether a member was younger than COMMAND_SETTLES_MS then: it may have exec'd since, with an environment
         * that changes what the rules make of it (a watchdog is spared), unseen by a read of its stat or run stamp.
         */
        young: boolean;
      }
    | undefined;
  /** The newest pid just before the last resolve that was a full scan (a census of every process born before it). */
  private newestAtScan: number | undefined;

  constructor(private readonly options: BudgetWatchOptions) {
    this.now = options.now ?? (() => performance.now());
    this.log = options.log ?? silentLogger;
    this.tracker = new MemberTracker(options.deps, { now: this.now }, 'budget');
  }

  /** Watches a tree with limits, from now on; `lines`: where the kernel holds them. */
  watch(query: TreeQuery, limits: TreeLimits, lines: KernelLines = {}): void {
    const now = this.now();
    const tree: WatchedTree = {
      query: { ...query, beyondCgroup: true, withBeside: true },
      limits,
      lines,
      linesChecked: false,
      gauge: new MemoryGauge(this.options.readPss, this.now),
      lastActive: now,
      oomKills: 0,
      due: now + FIRST_LOOK_MS,
    };
    this.trees.set(query.id, tree);
    this.schedule();
  }

  unwatch(id: string): void {
    this.drop(id);
    if (this.trees.size > 0) return;
    this.schedule();
    this.options.cgroupActivity?.close();
  }

  /** A byte went through the tree's terminal or stdio: it is not idle. */
  noteActivity(id: string): void {
    const tree = this.trees.get(id);
    if (tree) tree.lastActive = this.now();
  }

  /** Where the tree stands against its limits, as last seen; undefined before the first look. */
  use(id: string): BudgetUse | undefined {
    return this.trees.get(id)?.use;
  }

  /**
   * Asks the kernel at once whether it ended the tree (its root exited: was it the OOM killer?), so that the end
   * is told as the limit's before it is told as the root's exit.
   */
  checkKernel(id: string): void {
    const tree = this.trees.get(id);
    const breach = tree && this.kernelBreach(tree);
    if (breach) this.breached(id, breach);
  }

  /** Looks at every watched tree now (the timer calls it; tests too). */
  look(): void {
    const trees = [...this.trees.values()];
    if (trees.length === 0) return;
    // Read before the members it stands for: a process born while they are read moves it, and the next look
    // resolves them again. Read once, and only when a tree needs it.
    let newest: { pid: number | undefined } | undefined;
    const newestPid = () => (newest ??= { pid: this.options.table.newestPid?.() }).pid;
    const members = this.membersAsBefore(trees, newestPid) ?? this.resolveMembers(trees, newestPid());
    const now = this.now();
    for (const tree of trees) {
      const breach = this.judge(tree, members.get(tree.query.id) ?? [], now);
      if (breach) this.breached(tree.query.id, breach);
    }
    this.options.onLook?.();
  }

  /** Each tree's members by the member rules (tracking/memberTracker.ts): what most looks cost. */
  private resolveMembers(trees: WatchedTree[], newestPid: number | undefined): Map<string, ProcessInfo[]> {
    const queries = trees.map((t) => t.query);
    const { table, deps } = this.options;
    const seen = refreshMembers(table, this.tracker.next(queries, {}, canTrack(table, queries, {}, deps)), deps);
    this.tracker.learn(seen);
    if (seen.fullScan) this.newestAtScan = newestPid;
    const members = new Map(trees.map((t) => [t.query.id, seen.trees.find((s) => s.id === t.query.id)?.members ?? []]));
    const beside = new Map(trees.map((t) => [t.query.id, seen.trees.find((s) => s.id === t.query.id)?.beside ?? []]));
    const youngest = [...members.values()]
      .flat()
      .reduce<ProcessInfo | undefined>((y, p) => (!y || p.startKey > y.startKey ? p : y), undefined);
    const young = youngest !== undefined && this.ageMs(youngest) < COMMAND_SETTLES_MS;
    this.resolved = newestPid === undefined ? undefined : { newestPid, at: this.now(), members, beside, young };
    return members;
  }

  /** How long ago a process started, ms: on the boot clock where the table can tell (a wall-clock step moves nothing). */
  private ageMs(p: ProcessInfo): number {
    const { table } = this.options;
    try {
      if (table.ageMs) return table.ageMs.call(table, p);
    } catch {
      /* the boot clock cannot be read (no file descriptor left): the wall clock will do */
    }
    return Date.now() - p.startTime;
  }

  /**
   * The members as last resolved, where nothing can have changed them since: undefined when they must be resolved
   * again by the rules (a tree is new, or a tree's members may have changed). Whatever any cgroup says, they are
   * resolved again where a census is due with a birth since the last one (only a census finds a member that left
   * the parent chain, a `setsid -f` daemon, or one born anywhere with the tree's tag: due every 10 s in
   * memberTracker.ts), and where the last resolve is RESOLVE_EVERY_MS old (what changes membership without a birth
   * or a move into the tree's own cgroup, a process moved into the tree's group or into a cgroup below its own,
   * or pid allocation come all the way round, counts that late at most).
   * Where a member was young at the last resolve (COMMAND_SETTLES_MS: it may have exec'd since) they are resolved
   * again. Else a tree's members are those last resolved
   *   - as they were, without a read of them, where its cgroup holds exactly them and used no CPU time since the
   *     last look, or where it has no cgroup to read and none of them ran since (runStampsSay) (a process that
   *     does not run neither forks, exits nor execs), their figures were read under QUIET_FIGURES_STAND_MS ago,
   *     and the tree is not near a limit (a member's memory can grow while it does not run: khugepaged, or another
   *     process writing into it). Where a process came into the tree's cgroup or left it, they are resolved
   *     again; where only their figures are old or the tree is near, each is read again;
   *   - else each read again (one stat per member, no walk and no rules) where no process was born to one of them
   *     since (the newest pid stands still, or each process born since has a parent outside them: bornOutside)
   *     and none of them is gone.
   */
  private membersAsBefore(trees: WatchedTree[], newestPid: () => number | undefined): Map<string, ProcessInfo[]> | undefined {
    const before = this.resolved;
    const { table } = this.options;
    if (!before || !table.reread || before.young) return undefined;
    if (trees.some((t) => !before.members.has(t.query.id))) return undefined;
    const now = this.now();
    const since = now - before.at;
    if (since < 0 || since >= RESOLVE_EVERY_MS) return undefined;
    if (this.tracker.scanDue() && newestPid() !== this.newestAtScan) return undefined;
    const members = new Map<string, ProcessInfo[]>();
    /** Trees whose members are as before (their cgroup says so) but whose figures are read again. */
    const toRefresh: WatchedTree[] = [];
    const toReread: WatchedTree[] = [];
    let stampsRead = false;
    for (const t of trees) {
      const known = before.members.get(t.query.id)!;
      // Without a cgroup, run stamps where a process was born since (and once, to start from): else a read of each
      // member's stat (half as many reads, and they bring the figures) is all a look needs.
      const stamps = !this.cgroupOf(t) && (newestPid() !== before.newestPid || !t.runStamps);
      stampsRead ||= stamps;
      const says = this.cgroupOf(t)
        ? this.cgroupSays(t, known)
        : stamps
          ? this.runStampsSay(t, known, before.beside.get(t.query.id) ?? [])
          : undefined;
      if (says === 'moved') return undefined;
      const age = now - (t.readAt ?? -Infinity);
      if (says === 'quiet' && !t.near && age >= 0 && age < QUIET_FIGURES_STAND_MS) members.set(t.query.id, known);
      else (says === 'quiet' ? toRefresh : toReread).push(t);
    }
    if (toReread.length > 0) {
      // Read again after stamps: a member may have forked after the first read and be asleep again by its stamp's
      // read, which the next look then finds unmoved; its child's pid is below this read. Without stamps, the
      // members' stats are read after the first read, and whatever is born after it moves the next look's.
      const newest = stampsRead ? table.newestPid?.call(table) : newestPid();
      if (newest === undefined) return undefined;
      if (newest !== before.newestPid) {
        // A walk down from the members passes through the processes below them that are none (a spared watchdog):
        // a child of theirs may be a member (it carries the tree's tag), so it resolves as a member's child does.
        // Every tree's, quiet ones too: a quiet member may have forked after its stamps were read, before the newest
        // pid was read here, and this is where the next look's check starts.
        const parents = trees.flatMap((t) => [
          ...before.members.get(t.query.id)!.map((p) => p.pid),
          ...(before.beside.get(t.query.id) ?? []),
        ]);
        if (!this.bornOutside(before.newestPid, newest, parents)) return undefined;
        before.newestPid = newest;
      }
    }
    for (const t of [...toRefresh, ...toReread]) {
      const known = before.members.get(t.query.id)!;
      const alive = table.reread(known);
      // One that could not be read again (gone, or a read that failed for a moment) is told by the rules.
      if (alive.length !== known.length) return undefined;
      members.set(t.query.id, alive);
    }
    before.members = members;
    return members;
  }

  /**
   * Whether every process born since the newest pid was `from` (up to `to`) has a parent outside `parents` (the
   * members, and the processes below them that are none: a walk passes through those too), or is gone: then none
   * is a child of theirs, and a walk down from the members would find nothing new. A member's
   * newborn with a newborn of its own has one such child among them (born before its own child, so within the
   * range). What leaves the parent chain at birth (a newborn whose parent exited) is found by the census, as it
   * would be after a walk. False where pid allocation went round (`to` below `from`), or more than
   * MAX_NEWBORNS_CHECKED were born.
   */
  private bornOutside(from: number, to: number, parents: readonly number[]): boolean {
    const { parentOf } = this.options.table;
    if (!parentOf || to < from || to - from > MAX_NEWBORNS_CHECKED) return false;
    const memberPids = new Set(parents);
    for (let pid = from + 1; pid <= to; pid++) {
      const parent = parentOf.call(this.options.table, pid);
      if (parent !== undefined && memberPids.has(parent)) return false;
    }
    return true;
  }

  /**
   * What the tree's cgroup says since the last look: 'quiet' where it holds exactly `known` and used no CPU time,
   * 'moved' where a process came into it or left it (born, ended, or moved by another), undefined where it cannot
   * tell (no cgroup, or members outside it). What it read is kept whatever the answer: the members' figures are
   * read after it, so where it has not moved at the next look they still hold.
   */
  private cgroupSays(tree: WatchedTree, known: readonly ProcessInfo[]): 'quiet' | 'moved' | undefined {
    const dir = this.cgroupOf(tree);
    if (!dir) return undefined;
    const seen = this.options.cgroupActivity!.read(dir);
    const last = tree.cgroupSeen;
    tree.cgroupSeen = seen;
    if (!seen || !last) return undefined;
    const samePids =
      seen.pids === last.pids || (seen.pids.length === last.pids.length && seen.pids.every((pid, i) => pid === last.pids[i]));
    if (!samePids) return 'moved';
    if (seen.cpuUsec !== last.cpuUsec || seen.pids.length !== known.length) return undefined;
    const pids = new Set(seen.pids);
    return pids.size === known.length && known.every((p) => pids.has(p.pid)) ? 'quiet' : undefined;
  }

  /** The tree's own cgroup, where it can be read at a glance. */
  private cgroupOf(tree: WatchedTree): string | undefined {
    return (this.options.cgroupActivity && tree.query.cgroupVerified && tree.query.cgroup) || undefined;
  }

  /**
   * For a tree without a cgroup to read: 'quiet' where none of `known` ran since the last look (each has one thread,
   * the one its run stamp follows, and that stamp stands still), undefined where one did or it cannot tell. A
   * process that does not run neither forks, exits nor execs: as a quiet cgroup, whatever was born elsewhere
   * meanwhile. Its memory can still grow (a CLONE_VM sibling outside the tree writes into it): the stamp carries
   * its memory's sizes too. Not where processes below the members are none of them (a spared watchdog: their
   * children may be members, and they are not followed). The reading stops at the first stamp that moved.
   */
  private runStampsSay(tree: WatchedTree, known: readonly ProcessInfo[], beside: readonly number[]): 'quiet' | undefined {
    const { table } = this.options;
    if (!table.runStamp || beside.length > 0 || !known.every((p) => p.threads === 1)) return undefined;
    const first = tree.runStamps === undefined;
    const stamps = tree.runStamps ?? new Map<string, string>();
    if (stamps.size > 2 * known.length) {
      const keys = new Set(known.map((p) => `${p.pid}:${p.startKey}`));
      for (const key of [...stamps.keys()]) if (!keys.has(key)) this.releaseRunStamp(stamps, key);
    }
    tree.runStamps = stamps;
    let quiet = !first;
    for (const p of known) {
      const key = `${p.pid}:${p.startKey}`;
      const stamp = table.runStamp.call(table, p);
      if (stamp !== undefined && stamp === stamps.get(key)) continue;
      if (stamp === undefined) this.releaseRunStamp(stamps, key);
      else stamps.set(key, stamp);
      quiet = false;
      if (!first) break;
    }
    return quiet ? 'quiet' : undefined;
  }

  /** Forgets a process's run stamp, and closes the files kept for it. */
  private releaseRunStamp(stamps: Map<string, string>, key: string): void {
    stamps.delete(key);
    const [pid, startKey] = key.split(':').map(Number);
    this.options.table.releaseRunStamp?.({ pid, startKey });
  }

  dispose(): void {
    for (const id of [...this.trees.keys()]) this.drop(id);
    this.schedule();
    this.options.cgroupActivity?.close();
  }

  private breached(id: string, breach: Breach): void {
    this.drop(id);
    this.schedule();
    this.options.onBreach(id, breach);
  }

  /** No longer watches the tree, nor keeps its cgroup's files open (they would keep it, once removed, dying). */
  private drop(id: string): void {
    const tree = this.trees.get(id);
    this.trees.delete(id);
    if (tree?.query.cgroup) this.options.cgroupActivity?.forget(tree.query.cgroup);
    for (const key of [...(tree?.runStamps?.keys() ?? [])]) this.releaseRunStamp(tree!.runStamps!, key);
  }

  /** One tree at one look: its use, the kernel's line kept above its threads, and the limit it is past, if any. */
  private judge(tree: WatchedTree, members: ProcessInfo[], now: number): Breach | undefined {
    if (!tree.linesChecked) {
      tree.lines = presentLines(tree.lines);
      tree.linesChecked = true;
    }
    const { limits, lines } = tree;
    // The very members the last look judged: membersAsBefore saw none of them run since, so none allocated (the
    // kernel's OOM killer acts as a member allocates) or started a thread.
    const unchanged = members === tree.judged;
    tree.judged = members;
    if (!unchanged) {
      tree.readAt = now;
      const kernelEnded = this.kernelBreach(tree);
      if (kernelEnded) return kernelEnded;
      this.keepPidsCap(tree, members);
    }
    const memoryLimit = (limits.maxMemoryMB ?? Infinity) * BYTES_PER_MB;
    let memory = tree.gauge.measure(members, memoryLimit * NEAR_LIMIT);
    // Never ended on an estimate: past the limit, every member's PSS is read again.
    if (memory.bytes > memoryLimit) memory = tree.gauge.measure(members, memoryLimit * NEAR_LIMIT, true);
    const idleSeconds = limits.idleTimeoutSeconds ? this.idleSeconds(tree, members, unchanged, now) : undefined;
    tree.use = { processes: members.length, memory, idleSeconds, kernel: { memory: !!lines.memory, processes: !!lines.pids } };
    tree.due = now + this.nextLookIn(tree, memoryLimit);
    if (limits.maxProcesses && members.length > limits.maxProcesses)
      return { kind: 'processes', limit: limits.maxProcesses, count: members.length };
    if (memory.bytes > memoryLimit) return { kind: 'memory', limitMB: limits.maxMemoryMB!, bytes: memory.bytes };
    if (idleSeconds !== undefined && idleSeconds >= limits.idleTimeoutSeconds!)
      return { kind: 'idle', seconds: limits.idleTimeoutSeconds! };
    return undefined;
  }

  /** The kernel's OOM killer ended (some of) the tree since it was first looked at. */
  private kernelBreach(tree: WatchedTree): Breach | undefined {
    if (!tree.lines.memory) return undefined;
    const events = readKernelEvents(tree.lines.memory);
    if (events.oomKills <= tree.oomKills) return undefined;
    const limitMB = tree.limits.maxMemoryMB!;
    return { kind: 'memory', limitMB, bytes: events.memoryPeak ?? limitMB * BYTES_PER_MB, kernelEnded: events.oomKills - tree.oomKills };
  }

  /** pids.max follows the tree's threads (the kernel counts them too), so only processes meet the line. */
  private keepPidsCap(tree: WatchedTree, members: ProcessInfo[]): void {
    if (!tree.lines.pids || !tree.limits.maxProcesses) return;
    const cap = pidsCap(
      tree.limits.maxProcesses,
      members.reduce((n, p) => n + Math.max(0, (p.threads ?? 1) - 1), 0),
    );
    if (cap === tree.cap) return;
    tree.cap = cap;
    setPidsCap(tree.lines.pids, cap);
  }

  /** Seconds since the tree was last active: a member used CPU time, one came or went, or a byte went through. */
  private idleSeconds(tree: WatchedTree, members: ProcessInfo[], unchanged: boolean, now: number): number {
    // Members none of which ran since the last look, once seen quiet, are still quiet.
    if (!unchanged || !tree.quietCpuNs) this.learnActivity(tree, members, now);
    const idle = Math.max(0, now - tree.lastActive) / 1000;
    if (idle < tree.limits.idleTimeoutSeconds! || !tree.quietCpuNs) return idle;
    // Before a tree is ended as idle, its exact CPU time must not have moved either.
    const exact = this.cpuNs(members);
    if ([...exact].every(([key, ns]) => tree.quietCpuNs!.get(key) === ns)) return idle;
    tree.lastActive = now;
    tree.quietCpuNs = exact;
    return 0;
  }

  /** Whether a member used CPU time, or one came or went, since the last look: the tree was active until now. */
  private learnActivity(tree: WatchedTree, members: ProcessInfo[], now: number): void {
    const cpu = new Map(members.map((p) => [`${p.pid}:${p.startKey}`, p.cpuMs]));
    const before = tree.cpu;
    tree.cpu = cpu;
    // Clock ticks round a short run away (a process that writes a line a second uses a few µs of CPU): idle time
    // counts only while each member's exact CPU time is still what it was when the tree was first seen quiet.
    if (!before) {
      // The first look only learns: what ran before it is the start, which is where idle time counts from.
      tree.quietCpuNs = this.cpuNs(members);
    } else if (before.size !== cpu.size || [...cpu].some(([key, ms]) => before.get(key) !== ms)) {
      tree.lastActive = now;
      tree.quietCpuNs = undefined;
    } else if (!tree.quietCpuNs) {
      tree.quietCpuNs = this.cpuNs(members);
      // Since the last look, only the ticks were quiet: it counts as active until now.
      if (this.options.readCpuNs) tree.lastActive = now;
    }
  }

  /** Each member's exact CPU time (ns), where it can be read. */
  private cpuNs(members: ProcessInfo[]): Map<string, number | undefined> {
    const read = this.options.readCpuNs;
    return new Map(members.map((p) => [`${p.pid}:${p.startKey}`, read?.(p.pid)]));
  }

  /** When the tree wants its next look: sooner near a limit the kernel does not hold, and at its idle deadline. */
  private nextLookIn(tree: WatchedTree, memoryLimit: number): number {
    const { limits, lines, use } = tree;
    tree.near =
      (!lines.pids && !!limits.maxProcesses && use!.processes >= limits.maxProcesses * NEAR_PROCESSES) ||
      (!lines.memory && use!.memory.bytes >= memoryLimit * NEAR_LIMIT);
    let wait = tree.near ? NEAR_LOOK_MS : LOOK_MS;
    if (limits.idleTimeoutSeconds && use!.idleSeconds !== undefined) {
      wait = Math.min(wait, Math.max(NEAR_LOOK_MS, (limits.idleTimeoutSeconds - use!.idleSeconds) * 1000));
    }
    return wait;
  }

  /** Runs the next look when the soonest tree wants it; no timer while nothing is watched. */
  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.trees.size === 0) return;
    const due = Math.min(...[...this.trees.values()].map((t) => t.due));
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - this.now()));
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    try {
      this.look();
    } catch (e) {
      this.log.warn(`looking at the trees' limits failed: ${(e as Error).message}`);
      for (const t of this.trees.values()) t.due = this.now() + LOOK_MS;
    }
    this.schedule();
  }
}
