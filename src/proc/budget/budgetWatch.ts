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
import { KernelLines, pidsCap, presentLines, readKernelEvents, setPidsCap } from '../cgroup/treeLimits';
import { Logger, silentLogger } from '../platform/log';
import { ProcessInfo, ProcessTable } from '../platform/processTable';
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
 * The longest a look may take the members it last resolved (re-read, as no process was born since) before it
 * resolves them by the rules again (a resolve costs some ten looks): what changes membership without a birth (a
 * process moved into a tree's cgroup, or into its group) counts this late at most.
 */
const RESOLVE_EVERY_MS = 30_000;
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
}

export class BudgetWatch {
  private readonly trees = new Map<string, WatchedTree>();
  private readonly tracker: MemberTracker;
  private readonly now: () => number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  /** The members as last resolved by the rules, and the newest pid just before. */
  private resolved: { newestPid: number; at: number; members: Map<string, ProcessInfo[]> } | undefined;
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
      query: { ...query, beyondCgroup: true },
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
    this.trees.delete(id);
    if (this.trees.size === 0) this.schedule();
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
    // Read before the members: a process born while they are read moves it, and the next look resolves them again.
    const newestPid = this.options.table.newestPid?.();
    const members = this.membersAsBefore(trees, newestPid) ?? this.resolveMembers(trees, newestPid);
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
    this.resolved = newestPid === undefined ? undefined : { newestPid, at: this.now(), members };
    return members;
  }

  /**
   * Where no process was born since the members were last resolved (the newest pid stands still), they are those
   * members, each read again: one stat per member, no walk and no rules. Undefined when the members must be
   * resolved: a member is gone, a process was born, a tree is new, a census is due and a process was born since
   * the last, or RESOLVE_EVERY_MS passed (a process moved into a tree's cgroup or joined its group without a fork,
   * or pid allocation went all the way round).
   */
  private membersAsBefore(trees: WatchedTree[], newestPid: number | undefined): Map<string, ProcessInfo[]> | undefined {
    const before = this.resolved;
    const { table } = this.options;
    if (!before || newestPid === undefined || newestPid !== before.newestPid || !table.reread) return undefined;
    const since = this.now() - before.at;
    if (since < 0 || since >= RESOLVE_EVERY_MS || trees.some((t) => !before.members.has(t.query.id))) return undefined;
    // A process born since the last census may have left the parent chain at once (a `setsid -f` daemon): no walk
    // finds it, only the census, due every 10 s (memberTracker.ts), so a due census is never put off by a look
    // between births.
    if (newestPid !== this.newestAtScan && this.tracker.scanDue()) return undefined;
    const members = new Map<string, ProcessInfo[]>();
    for (const t of trees) {
      const known = before.members.get(t.query.id)!;
      const alive = table.reread(known);
      // One that could not be read again (gone, or a read that failed for a moment) is told by the rules.
      if (alive.length !== known.length) return undefined;
      members.set(t.query.id, alive);
    }
    before.members = members;
    return members;
  }

  dispose(): void {
    this.trees.clear();
    this.schedule();
  }

  private breached(id: string, breach: Breach): void {
    this.trees.delete(id);
    this.schedule();
    this.options.onBreach(id, breach);
  }

  /** One tree at one look: its use, the kernel's line kept above its threads, and the limit it is past, if any. */
  private judge(tree: WatchedTree, members: ProcessInfo[], now: number): Breach | undefined {
    if (!tree.linesChecked) {
      tree.lines = presentLines(tree.lines);
      tree.linesChecked = true;
    }
    const { limits, lines } = tree;
    const kernelEnded = this.kernelBreach(tree);
    if (kernelEnded) return kernelEnded;
    this.keepPidsCap(tree, members);
    const memoryLimit = (limits.maxMemoryMB ?? Infinity) * BYTES_PER_MB;
    let memory = tree.gauge.measure(members, memoryLimit * NEAR_LIMIT);
    // Never ended on an estimate: past the limit, every member's PSS is read again.
    if (memory.bytes > memoryLimit) memory = tree.gauge.measure(members, memoryLimit * NEAR_LIMIT, true);
    const idleSeconds = limits.idleTimeoutSeconds ? this.idleSeconds(tree, members, now) : undefined;
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
  private idleSeconds(tree: WatchedTree, members: ProcessInfo[], now: number): number {
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
    const idle = Math.max(0, now - tree.lastActive) / 1000;
    if (idle < tree.limits.idleTimeoutSeconds! || !tree.quietCpuNs) return idle;
    // Before a tree is ended as idle, its exact CPU time must not have moved either.
    const exact = this.cpuNs(members);
    if ([...exact].every(([key, ns]) => tree.quietCpuNs!.get(key) === ns)) return idle;
    tree.lastActive = now;
    tree.quietCpuNs = exact;
    return 0;
  }

  /** Each member's exact CPU time (ns), where it can be read. */
  private cpuNs(members: ProcessInfo[]): Map<string, number | undefined> {
    const read = this.options.readCpuNs;
    return new Map(members.map((p) => [`${p.pid}:${p.startKey}`, read?.(p.pid)]));
  }

  /** When the tree wants its next look: sooner near a limit the kernel does not hold, and at its idle deadline. */
  private nextLookIn(tree: WatchedTree, memoryLimit: number): number {
    const { limits, lines, use } = tree;
    const near =
      (!lines.pids && !!limits.maxProcesses && use!.processes >= limits.maxProcesses * NEAR_PROCESSES) ||
      (!lines.memory && use!.memory.bytes >= memoryLimit * NEAR_LIMIT);
    let wait = near ? NEAR_LOOK_MS : LOOK_MS;
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
