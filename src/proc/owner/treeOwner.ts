/**
 * A tree owner: the process (CLI or extension host) that spawns trees, keeps their record on disk, watches
 * them until every member is gone, and kills them on request. Both front ends use this class and nothing below.
 */
import { ChildProcess } from 'child_process';
import { EventEmitter } from 'events';
import { BudgetWatch } from '../budget/budgetWatch';
import { Breach, breachText, BudgetUse } from '../budget/limits';
import { KeptCgroupActivity } from '../cgroup/cgroupActivity';
import { CgroupMode, CgroupProber, CgroupProbeResult } from '../cgroup/probe';
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { OwnerInfo, selfIdentity } from '../identity/ownerIdentity';
import { emptyReport, KillOptions, KillReport } from '../kill/killTarget';
import { killRecordedTree, TreeKiller } from '../kill/treeKiller';
import { ResolveOptions, resolveTreeMembers } from '../members/treeMembers';
import { hostClock } from '../platform/bootClock';
import { freshProcessTable } from '../platform/createProcessTable';
import { Logger, processCount, silentLogger } from '../platform/log';
import { readCpuNs, readPssBytes } from '../platform/procFiles';
import { ProcessInfo, ProcessTable, Snapshot } from '../platform/processTable';
import { PtyRoot } from '../pty/ptyRoot';
import { PtySpawnOptions, spawnPtyTree } from '../pty/spawnPtyTree';
import { RecordStore } from '../records/claims';
import { setAsidePreviousRecord } from '../records/previousRecord';
import { HostProcessesRecord, TreeRecord } from '../records/schema';
import { UntrustedFileError } from '../records/trustedFiles';
import { SpawnError } from '../spawn/spawnError';
import { SpawnedTree, spawnTree, SpawnTreeOptions, TreeRoot } from '../spawn/spawnTree';
import type { TreeQuery } from '../tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../tracking/memberTracker';
import { Watchdog, WatchdogOptions } from './watchdog';

export type TreeState = 'running' | 'exited' | 'killing' | 'ended';

/** The first look of the watch after a spawn (ms); see `TreeOwner.scheduleWatch`. */
const FIRST_LOOK_MS = 2;
/**
 * How long after a spawn the watch reads whether a pseudo-terminal's root still runs (ms). Not longer: a running
 * tree is not read while nothing asks for it (the view hidden reads nothing), and a root that ran this long has been
 * seen running after whatever it started at once. A root with pipes needs no read (see `reapedWhenReported`): it is
 * noted alive at every look while it runs.
 */
const ROOT_LOOKS_MS = 1000;

/** An owned tree; its root is a ChildProcess (pipes, inherited stdio) or a PtyRoot (a pseudo-terminal). */
export interface OwnedTree<R extends TreeRoot = TreeRoot> {
  readonly record: TreeRecord;
  readonly child: R;
  readonly tier: 'cgroup' | 'group';
  state: TreeState;
  /** How the root ended, once it has. */
  rootExit?: { code: number | null; signal: NodeJS.Signals | null };
  /** The last kill's report, if it was killed. */
  lastKill?: KillReport;
  /** The limit it was seen past, once it was (its front end ends it). */
  breach?: Breach;
}

/**
 * The core parts an owner works through (see core.ts: the front ends pass this process's). One table (warm
 * caches) and one killer (requests for one tree join) per process.
 */
export interface OwnerParts {
  readonly platform: NodeJS.Platform;
  readonly table: ProcessTable;
  readonly killer: TreeKiller;
  readonly cgroups: CgroupControl;
  readonly cgroupProber: CgroupProber;
  readonly guard: SignalGuard;
  cgroupTier(mode: CgroupMode): CgroupProbeResult;
}

export interface TreeOwnerOptions {
  /** The core parts this owner works through. */
  core: OwnerParts;
  recordsDir: string;
  log?: Logger;
  cgroups?: CgroupMode;
  /** How often to look whether an exited root's tree has emptied (ms). */
  watchIntervalMs?: number;
  /**
   * When this process exits with trees still owned (its host cut `dispose()` short, say), SIGKILL them
   * synchronously in the 'exit' event. Their record stays, so a sweep confirms and removes it.
   */
  killTreesOnExit?: boolean;
  /**
   * A watchdog that outlives this process and sweeps its record the moment it dies (see watchdog.ts): started
   * with the first tree (or the first host processes recorded), told to quit when the record goes. None when omitted.
   */
  watchdog?: WatchdogOptions;
  /** Least time between two writes of the record for a change of its host processes alone (ms; default 1000). */
  hostProcessesWriteMs?: number;
}

/** What `spawn` takes: what to run and how (SpawnTreeOptions), and when the tree is due to be killed. */
export type OwnerSpawnOptions = SpawnTreeOptions & {
  /** When the owner will kill the tree (ms since the epoch), written to the record for other readers. */
  deadline?: number;
};

/**
 * Events: `spawned` (tree), `rootExit` (tree), `ended` (tree): the tree has no live member left and is no
 * longer recorded; `limit` (tree, breach): the tree was seen past one of its limits (`tree.breach`), and its front
 * end ends it as at its timeout; `budget`: the limited trees' use was looked at again (`budgetUse`).
 *
 * What happens to the processes a root leaves behind is the front end's policy (the CLI's exit code waits for
 * it, agent runs count it): each listens for `rootExit` and calls `kill()`. Until then the tree stays owned and
 * watched, and is dropped once empty.
 */
export class TreeOwner extends EventEmitter {
  readonly store: RecordStore;
  readonly self: OwnerInfo;
  readonly core: OwnerParts;
  private readonly trees = new Map<string, OwnedTree>();
  /** What this owner saw of each tree, by tree id: what proves its group when the group has no leader. */
  private readonly witnesses = new Map<string, TreeWitness>();
  /** Trees whose kill is running: that kill ends them, not the watch (which would end a tree mid-kill). */
  private readonly beingKilled = new Map<string, number>();
  private readonly log: Logger;
  private watchTimer: NodeJS.Timeout | undefined;
  /** The wait before the next look (see `scheduleWatch`). */
  private watchDelay = FIRST_LOOK_MS;
  private readonly watchTracker: MemberTracker;
  private disposed = false;
  private watchdog: Watchdog | undefined;
  /** What this owner records of its extension host's other processes (see hostChildren/), if anything. */
  private hostRecord: HostProcessesRecord | undefined;
  /** When the record was last written for a change of `hostRecord` (monotonic ms), and the write waiting, if any. */
  private hostWrittenAt = -Infinity;
  private hostWriteTimer: NodeJS.Timeout | undefined;
  private readonly budget: BudgetWatch;

  constructor(private readonly options: TreeOwnerOptions) {
    super();
    this.store = new RecordStore(options.recordsDir);
    this.log = options.log ?? silentLogger;
    this.core = options.core;
    this.watchTracker = new MemberTracker(this.core, {}, 'owner watch');
    this.budget = new BudgetWatch({
      table: this.core.table,
      deps: this.core,
      readPss: this.core.platform === 'linux' ? readPssBytes : undefined,
      readCpuNs: this.core.platform === 'linux' ? readCpuNs : undefined,
      cgroupActivity: this.core.platform === 'linux' ? new KeptCgroupActivity() : undefined,
      onBreach: (id, breach) => this.limitExceeded(id, breach),
      onLook: () => this.emit('budget'),
      log: this.log,
    });
    this.self = selfIdentity(this.core.table);
    const previous = setAsidePreviousRecord(this.store, this.self);
    if (previous.outcome === 'set-aside') {
      this.log.info(
        `record ${this.store.fileOf(this.self.pid)} was left by an earlier process with our pid; kept for the sweep as ${previous.claim}`,
      );
    } else if (previous.outcome === 'unreadable') {
      this.log.warn(`record ${this.store.fileOf(this.self.pid)}: ${previous.problem}`);
    }
    // Probe cgroups now, in the background: a spawn never waits for it (see `prepare`).
    if ((options.cgroups ?? 'auto') === 'auto') void this.core.cgroupProber.probe('auto');
    if (options.killTreesOnExit) {
      this.onExit = () => this.killAllNowSync();
      process.on('exit', this.onExit);
    }
  }

  private onExit: (() => void) | undefined;

  /** SIGKILL every owned tree now, synchronously (see `killTreesOnExit`). */
  killAllNowSync(): void {
    for (const tree of this.trees.values()) {
      try {
        this.core.killer.killNowSync(tree.record, this.resolveOptions(tree.record.id));
      } catch {
        /* exiting: nothing more can be done here; the next sweep has the record */
      }
    }
  }

  /**
   * Waits until the cgroup probe has its answer, so the next spawn gets the cgroup tier where there is one.
   * Only the probe as an ordinary user takes time (`systemd-run`); it never blocks the event loop.
   */
  async prepare(): Promise<void> {
    await this.core.cgroupProber.probe(this.options.cgroups ?? 'auto');
  }

  /** Spawns an owned tree and records it before returning. Throws SpawnError when nothing could start. */
  spawn(options: OwnerSpawnOptions): OwnedTree<ChildProcess> {
    this.checkCanSpawn();
    const { deadline, ...spawnOptions } = options;
    return this.spawnWatched(() => spawnTree({ cgroups: this.options.cgroups, ...spawnOptions, held: true }, this.core), deadline);
  }

  /** Spawns an owned tree on a pseudo-terminal of its own (pty/spawnPtyTree.ts), recorded like any other. */
  spawnTerminal(options: PtySpawnOptions & Pick<OwnerSpawnOptions, 'deadline'>): OwnedTree<PtyRoot> {
    this.checkCanSpawn();
    const { deadline, ...spawnOptions } = options;
    return this.spawnWatched(() => spawnPtyTree({ cgroups: this.options.cgroups, ...spawnOptions, held: true }, this.core), deadline);
  }

  private checkCanSpawn(): void {
    if (this.disposed) throw new Error('this tree owner has been disposed');
    try {
      this.store.ensureDir();
    } catch (e) {
      // A tree is never started without a record it can be swept by: a folder that cannot be made, or that
      // others could plant records in, refuses the spawn with one line saying why.
      throw new SpawnError(
        e instanceof UntrustedFileError ? e.message : `records folder ${this.store.dir}: ${(e as Error).message}`,
        'EACCES',
      );
    }
    // Under a /proc of another pid namespace (`unshare -p` without --mount-proc) no pid read from it is ours:
    // the tree could be neither seen nor ended (a timeout ended 0 of it and said so), so it is not started.
    const clock = hostClock();
    if (clock && !clock.procIsOurs) {
      throw new SpawnError(
        'the /proc mounted here is of another pid namespace (mount one of ours: unshare --mount-proc): a tree started here could not be seen or ended',
        'EINVAL',
      );
    }
  }

  /** Starts a root through `start`, watched by the watchdog from before the tree exists, and owns it. */
  private spawnWatched<R extends TreeRoot>(start: () => SpawnedTree<R>, deadline: number | undefined): OwnedTree<R> {
    // Watching before the tree exists, so no moment of it goes unwatched.
    this.startWatchdog();
    let spawned: SpawnedTree<R>;
    try {
      spawned = start();
    } catch (e) {
      if (this.trees.size === 0 && !this.hostRecord) this.stopWatchdog();
      throw e;
    }
    if (deadline !== undefined) spawned.record.deadline = Math.round(deadline);
    return this.adopt(spawned);
  }

  /**
   * Owns a tree whose root is held before its command (see `SpawnTreeOptions.held`): records it, then lets the root
   * go. A tree that cannot be recorded is not started: its root is killed before it ran anything.
   */
  private adopt<R extends TreeRoot>(spawned: SpawnedTree<R>): OwnedTree<R> {
    const tree: OwnedTree<R> = { record: spawned.record, child: spawned.child, tier: spawned.tier, state: 'running' };
    this.trees.set(tree.record.id, tree);
    this.witnesses.set(tree.record.id, { seen: [], spawnedAt: performance.now() });
    const problem = this.writeRecord();
    if (problem) {
      this.core.killer.killNowSync(spawned.record, this.resolveOptions(tree.record.id));
      this.trees.delete(tree.record.id);
      this.witnesses.delete(tree.record.id);
      spawned.child.on('error', () => {});
      for (const dir of [spawned.record.cgroup, spawned.record.pidsCgroup]) if (dir) this.core.cgroups.remove(dir);
      if (this.trees.size === 0 && !this.hostRecord) this.stopWatchdog();
      throw new SpawnError(`${problem}: nothing was started, since a tree no record names could outlive this process`, 'EACCES');
    }
    spawned.release?.();
    const r = tree.record;
    this.log.info(
      `tree ${r.id} (${r.label}): spawned pid ${r.rootPid}, group ${r.pgid}, tier ${tree.tier}` +
        (spawned.tierNote ? ` (no cgroup: ${spawned.tierNote})` : '') +
        `: ${r.command.join(' ')}`,
    );
    if (r.limits) this.budget.watch(this.queryOf(r.id)!, r.limits, spawned.kernelLines);
    spawned.child.on('error', (e) => this.log.error(`tree ${r.id}: ${e.message}`));
    spawned.child.on('exit', (code, signal) => {
      // Told as the limit's end, not the root's, when the kernel's OOM killer ended it.
      this.budget.checkKernel(r.id);
      tree.rootExit = { code, signal };
      if (tree.state === 'running') tree.state = 'exited';
      this.log.info(`tree ${r.id}: root ${r.rootPid} exited (${signal ?? `code ${code}`})`);
      this.emit('rootExit', tree);
      this.scheduleWatch();
    });
    this.emit('spawned', tree);
    // Watched from the start: while the root runs, the watch notes that it does (see `TreeWitness`).
    this.scheduleWatch(true);
    return tree;
  }

  get(id: string): OwnedTree | undefined {
    return this.trees.get(id);
  }

  list(): OwnedTree[] {
    return [...this.trees.values()];
  }

  /**
   * How to resolve one of our trees' members (for `membersOfTrees`): we own it throughout, made its cgroup, and
   * know what we saw of it.
   */
  queryOf(id: string): TreeQuery | undefined {
    const tree = this.trees.get(id);
    return tree && { ...tree.record, ...this.resolveOptions(id) };
  }

  /** The options every resolution of our tree `id` takes: our ownership, its cgroup, and what we saw of it. */
  private resolveOptions(id: string): Pick<ResolveOptions, 'continuouslyOwned' | 'cgroupVerified' | 'extraSeeds' | 'rootAliveAt'> {
    const tree = this.trees.get(id);
    const w = this.witnesses.get(id);
    return { continuouslyOwned: true, cgroupVerified: tree?.record.cgroup != null, extraSeeds: w?.seen, rootAliveAt: w?.rootAliveAt };
  }

  /** Live members of a tree in `snap` (a fresh snapshot when omitted). */
  members(id: string, snap: Snapshot = this.core.table.snapshot()): ProcessInfo[] {
    const tree = this.trees.get(id);
    if (!tree) return [];
    const members = resolveTreeMembers(tree.record, snap, this.resolveOptions(id), this.core).members;
    this.saw(id, members);
    return members;
  }

  /** Notes the members a resolution of tree `id` found: they prove its group for as long as they live. */
  private saw(id: string, members: ProcessInfo[]): void {
    const w = this.witnesses.get(id);
    if (w) w.seen = members.map((p) => ({ ...p }));
  }

  /** Kills a whole tree; a second call while one runs joins it. The tree is dropped once empty. */
  async kill(id: string, graceMs: number): Promise<KillReport> {
    const tree = this.trees.get(id);
    if (!tree) return emptyReport(id);
    if (tree.state !== 'ended') tree.state = 'killing';
    this.beingKilled.set(id, (this.beingKilled.get(id) ?? 0) + 1);
    let report: KillReport;
    try {
      report = await this.core.killer.kill(tree.record, this.killOptions(tree, graceMs));
    } finally {
      const left = this.beingKilled.get(id)! - 1;
      if (left > 0) this.beingKilled.set(id, left);
      else this.beingKilled.delete(id);
    }
    tree.lastKill = report;
    this.checkEnded(tree);
    if (tree.state !== 'ended') this.scheduleWatch();
    return report;
  }

  /** Where a tree with limits stands against them, as last looked at; undefined without limits. */
  budgetUse(id: string): BudgetUse | undefined {
    return this.budget.use(id);
  }

  /** A byte went through a tree's terminal or stdio (its front end saw it): the tree is not idle. */
  noteActivity(id: string): void {
    this.budget.noteActivity(id);
  }

  private limitExceeded(id: string, breach: Breach): void {
    const tree = this.trees.get(id);
    if (!tree || tree.breach) return;
    tree.breach = breach;
    this.log.info(`tree ${id} (${tree.record.label}): ${breachText(breach)}`);
    this.emit('limit', tree, breach);
  }

  private killOptions(tree: OwnedTree, graceMs: number): KillOptions {
    return { ...this.resolveOptions(tree.record.id), graceMs, rootAlive: () => rootRuns(tree), log: this.log };
  }

  /** Ctrl-C for a tree: SIGINT to its process group. */
  interrupt(id: string): boolean {
    const tree = this.trees.get(id);
    return tree ? this.core.killer.interrupt(tree.record, this.resolveOptions(id)) : false;
  }

  /**
   * Kills one process of an owned tree and its descendants ("Kill Process and Its Children"), if it still is a
   * member, started at `startKey`.
   */
  async killProcess(pid: number, startKey: number, graceMs: number): Promise<KillReport> {
    const snap = (await freshProcessTable(this.core.table)).snapshot();
    const member = this.list().some((t) => this.members(t.record.id, snap).some((p) => p.pid === pid && p.startKey === startKey));
    if (!member) return { ...emptyReport(`process-${pid}-${startKey}`), refused: [`pid ${pid} is not a member of a tree this owner runs`] };
    return this.core.killer.killSubtree(pid, startKey, { graceMs, continuouslyOwned: true, cgroupVerified: false, log: this.log });
  }

  /**
   * Kills a process that no tree of this owner holds (one in a terminal, or in another owner's tree) and its
   * descendants, if it still is the process that started at `startKey`: that start is its only proof.
   */
  killForeignProcess(pid: number, startKey: number, graceMs: number): Promise<KillReport> {
    return this.core.killer.killSubtree(pid, startKey, { graceMs, continuouslyOwned: false, cgroupVerified: false, log: this.log });
  }

  /**
   * Kills a tree another owner records (a window's `agent-trees run`, an orphan): as that owner would, but without
   * its continuous ownership (see `killRecordedTree`).
   */
  killRecordedTree(tree: TreeRecord, graceMs: number, log: Logger = this.log): Promise<KillReport> {
    return killRecordedTree(this.core, tree, graceMs, log);
  }

  /**
   * Stops owning a tree without killing it (its members keep running, unowned): removes it from the record.
   */
  release(id: string): void {
    const tree = this.trees.get(id);
    if (!tree) return;
    this.trees.delete(id);
    this.budget.unwatch(id);
    this.writeRecord();
    this.log.info(`tree ${id}: released; its processes keep running and are no longer owned`);
    // Out of the tree's cgroup, into this owner's, so that nothing of the tree is left once they end.
    for (const dir of [tree.record.cgroup, tree.record.pidsCgroup]) {
      if (!dir) continue;
      const { left, problem } = this.core.cgroups.release(dir);
      if (left.length > 0)
        this.log.warn(
          `tree ${id}: could not move what it let go out of its cgroup ${dir} (${problem}): ${processCount(left.length)} ` +
            'still in it; a sweep removes the cgroup once they have ended',
        );
    }
  }

  /**
   * What this owner, an extension host, records of the processes its other extensions started (or undefined:
   * nothing). The record names them beside the trees, so that the watchdog, or any sweep, ends them once this
   * process is gone; it exists, and the watchdog runs, while either is recorded. A change is written at once,
   * unless the last was less than `hostProcessesWriteMs` ago: then once that much time has passed.
   */
  setHostProcesses(hostProcesses: HostProcessesRecord | undefined): void {
    if (JSON.stringify(hostProcesses) === JSON.stringify(this.hostRecord)) return;
    this.hostRecord = hostProcesses;
    if (this.hostWriteTimer) return; // the write waiting takes the latest
    const wait = this.hostWrittenAt + (this.options.hostProcessesWriteMs ?? 1000) - performance.now();
    if (wait <= 0 || this.disposed) return this.writeHostProcesses();
    this.hostWriteTimer = setTimeout(() => this.writeHostProcesses(), wait);
    this.hostWriteTimer.unref();
  }

  /** What the record names of the host's other processes now (see `setHostProcesses`). */
  get hostProcesses(): HostProcessesRecord | undefined {
    return this.hostRecord;
  }

  private writeHostProcesses(): void {
    if (this.hostWriteTimer) clearTimeout(this.hostWriteTimer);
    this.hostWriteTimer = undefined;
    this.hostWrittenAt = performance.now();
    this.writeRecord();
    // Once the record is there (its folder made if it was missing): a folder others could write gets none.
    if (this.hostRecord && this.store.folderProblem() === undefined) this.startWatchdog();
  }

  /**
   * Kills every tree (grace `graceMs`) and stops owning them. Trees that left survivors stay in the record, so a
   * later sweep retries them; with none, the record is removed, unless it names host processes: then it stays, with
   * the watchdog, which ends what of them outlives this process.
   */
  async dispose(graceMs: number): Promise<KillReport[]> {
    this.disposed = true;
    this.budget.dispose();
    if (this.watchTimer) clearTimeout(this.watchTimer);
    this.watchTimer = undefined;
    if (this.hostWriteTimer) this.writeHostProcesses();
    const reports = await this.killAll(graceMs);
    for (const report of reports) {
      if (report.survivors === 0) this.trees.delete(report.treeId);
    }
    this.writeRecord();
    if (this.onExit && this.trees.size === 0) process.off('exit', this.onExit);
    return reports;
  }

  /** Kills every tree at once (one kill for all: each step resolves them all from one scan). */
  private async killAll(graceMs: number): Promise<KillReport[]> {
    const trees = [...this.trees.values()];
    for (const tree of trees) if (tree.state !== 'ended') tree.state = 'killing';
    const reports = await this.core.killer.killTrees(
      trees.map((tree) => ({ tree: tree.record, options: this.killOptions(tree, graceMs) })),
    );
    const snap = this.core.platform === 'win32' ? undefined : this.core.table.snapshot();
    trees.forEach((tree, i) => {
      tree.lastKill = reports[i];
      this.checkEnded(tree, snap);
    });
    return reports;
  }

  /**
   * Looks once at every tree whose root has exited (or that is being killed); drops those with no live member.
   * A running tree waits for its root's exit to be reported (a pseudo-terminal reports it once the output is
   * drained), so a tree never ends before its root's exit is known.
   */
  checkAll(snap: Snapshot = this.core.table.snapshot()): void {
    for (const tree of this.trees.values())
      if (tree.state !== 'running' && !this.beingKilled.has(tree.record.id)) this.checkEnded(tree, snap);
  }

  private checkEnded(tree: OwnedTree, snap?: Snapshot): void {
    // The root is a member while it runs; on Windows only the root is known.
    if (this.core.platform === 'win32' ? rootRuns(tree) : this.members(tree.record.id, snap).length > 0) return;
    for (const dir of [tree.record.cgroup, tree.record.pidsCgroup]) if (dir) this.core.cgroups.remove(dir);
    tree.state = 'ended';
    this.trees.delete(tree.record.id);
    this.budget.unwatch(tree.record.id);
    this.witnesses.delete(tree.record.id);
    this.writeRecord();
    this.log.info(`tree ${tree.record.id}: no process left; no longer recorded`);
    this.emit('ended', tree);
  }

  /**
   * One look of the watch, at a cost that follows the members (see tracking/memberTracker.ts): a walk from the members seen
   * at the last look, and a full resolution only for a tree the walk finds empty, before it is dropped.
   */
  private watchOnce(): void {
    const table = this.core.table;
    this.noteRootsAlive();
    // A running tree waits for its root's exit to be reported, as in checkAll: a pseudo-terminal root reports it
    // up to 200 ms after it died, and the tree must not end before. A tree being killed is its kill's to end.
    const trees = [...this.trees.values()].filter((t) => t.state !== 'running' && !this.beingKilled.has(t.record.id));
    if (trees.length === 0) return;
    const queries = trees.flatMap((t) => this.queryOf(t.record.id) ?? []);
    if (this.core.platform === 'win32' || !canTrack(table, queries, {}, this.core)) return this.checkAll();
    const seen = refreshMembers(table, this.watchTracker.next(queries, {}, true), this.core);
    this.watchTracker.learn(seen);
    let snap: Snapshot | undefined;
    for (const tree of trees) {
      const members = seen.trees.find((t) => t.id === tree.record.id)?.members ?? [];
      if (members.length > 0) {
        this.saw(tree.record.id, members);
        continue;
      }
      this.checkEnded(tree, (snap ??= table.snapshot()));
    }
  }

  private rootReadAlive(tree: OwnedTree): boolean {
    return this.core.table.read(tree.record.rootPid)?.startKey === tree.record.rootStartTicks;
  }

  /** Whether a running tree's root is still looked at in /proc: in the first ROOT_LOOKS_MS after its spawn. */
  private inRootLooks(tree: OwnedTree): boolean {
    const w = this.witnesses.get(tree.record.id);
    return w !== undefined && performance.now() - w.spawnedAt <= ROOT_LOOKS_MS;
  }

  /**
   * Notes, for each running tree whose root can be told to be alive now, that it is: the boot clock first, then
   * the root, so the root held its pid at that tick (see `TreeWitness.rootAliveAt`). Where there is no boot clock,
   * nothing is noted.
   */
  private noteRootsAlive(): void {
    const clock = hostClock();
    const running = [...this.trees.values()].filter((t) => t.state === 'running' && t.record.rootStartTicks !== undefined);
    if (running.length === 0 || !clock?.procIsOurs) return;
    let at: number;
    try {
      at = clock.nowTicks();
    } catch {
      return;
    }
    for (const tree of running) {
      const w = this.witnesses.get(tree.record.id);
      if (!w) continue;
      const alive = reapedWhenReported(tree) ? rootRuns(tree) : this.inRootLooks(tree) && this.rootReadAlive(tree);
      if (alive) w.rootAliveAt = at;
    }
  }

  /**
   * Schedules the next look of the watch (see `watchOnce`). After a spawn (`fresh`) the first look comes after
   * FIRST_LOOK_MS, then each twice as far apart as the last, up to the watch interval: a process a root started at
   * once is seen to have been born while the root ran if the root lives about twice as long as it took to start it
   * (see `TreeWitness`). A pseudo-terminal's root is read for ROOT_LOOKS_MS, at a handful of looks per spawn; a root
   * with pipes is noted alive at every look while it runs, at no read.
   */
  private scheduleWatch(fresh = false): void {
    if (this.disposed) return;
    const interval = this.options.watchIntervalMs ?? 1000;
    if (fresh) {
      this.watchDelay = Math.min(FIRST_LOOK_MS, interval);
      if (this.watchTimer) clearTimeout(this.watchTimer);
      this.watchTimer = undefined;
    }
    if (this.watchTimer) return;
    this.watchTimer = setTimeout(() => {
      this.watchTimer = undefined;
      try {
        this.watchOnce();
      } catch (e) {
        this.log.warn(`checking owned trees failed: ${(e as Error).message}`);
      }
      this.watchDelay = Math.min(this.watchDelay * 2, interval);
      // Watched while a root has exited (its tree ends once empty), is still looked at after its spawn, or can be
      // told to be alive without a look (see `noteRootsAlive`).
      if ([...this.trees.values()].some((t) => t.rootExit || this.inRootLooks(t) || (t.state === 'running' && reapedWhenReported(t))))
        this.scheduleWatch();
    }, this.watchDelay);
    this.watchTimer.unref();
  }

  /** Writes (or removes) this owner's record; returns what went wrong, if it could not. */
  private writeRecord(): string | undefined {
    let problem: string | undefined;
    try {
      this.store.write(
        this.self,
        [...this.trees.values()].map((t) => t.record),
        this.hostRecord,
      );
    } catch (e) {
      problem = `cannot write the owned-trees record in ${this.store.dir}: ${(e as Error).message}`;
      this.log.error(problem);
    }
    if (this.trees.size === 0 && !this.hostRecord) this.stopWatchdog();
    return problem;
  }

  /** The watchdog's pid while one runs (for tests and tooling). */
  get watchdogPid(): number | undefined {
    return this.watchdog?.running ? this.watchdog.pid : undefined;
  }

  private startWatchdog(): void {
    if (!this.options.watchdog || this.watchdog?.running) return;
    this.watchdog = Watchdog.start(this.core, {
      ...this.options.watchdog,
      recordsDir: this.store.dir,
      log: this.log,
      cgroups: this.options.cgroups,
    });
  }

  private stopWatchdog(): void {
    this.watchdog?.stop();
    this.watchdog = undefined;
  }
}

/**
 * What an owner saw of one of its trees. A group that has lost its leader is the tree's only while it provably
 * never emptied (its id is free for anyone once nothing holds it): these prove that it did not.
 */
interface TreeWitness {
  /** The members the owner's last look found, by pid and start key: while one lives on, the group never emptied. */
  seen: ProcessInfo[];
  /** When the tree was spawned (performance.now()): its root is looked at for ROOT_LOOKS_MS after. */
  spawnedAt: number;
  /**
   * The latest tick (boot clock, start-key units) read just before the owner found the root running: members of
   * the root's session born before it were born while the root lived (see `ResolveOptions.rootAliveAt`).
   */
  rootAliveAt?: number;
}

/**
 * Whether the root's exit is reported in the same step of the event loop that reaps it: a root with pipes (a
 * `ChildProcess`: libuv's waitpid and the exit callback run in one go), so while its exit is unreported, between two
 * steps, its pid is still its own (alive, or a zombie only we can reap) and no one else can have it. A
 * pseudo-terminal's root is reaped by node-pty's own thread before its exit is reported: only /proc can tell.
 */
function reapedWhenReported(tree: OwnedTree): boolean {
  return tree.child instanceof ChildProcess && process.platform !== 'win32';
}

function rootRuns(tree: OwnedTree): boolean {
  return tree.child.exitCode === null && tree.child.signalCode === null;
}
