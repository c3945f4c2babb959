/**
 * A tree owner: the process (CLI or extension host) that spawns trees, keeps their record on disk, watches
 * them until every member is gone, and kills them on request. Both front ends use this class and nothing below.
 */
import { ChildProcess } from 'child_process';
import { EventEmitter } from 'events';
import { BudgetWatch } from '../budget/budgetWatch';
import { Breach, breachText, BudgetUse } from '../budget/limits';
import { CgroupMode, CgroupProber, CgroupProbeResult } from '../cgroup/probe';
import { CgroupControl } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { OwnerInfo, selfIdentity } from '../identity/ownerIdentity';
import { emptyReport, KillReport } from '../kill/killTarget';
import { killRecordedTree, TreeKiller } from '../kill/treeKiller';
import { resolveTreeMembers } from '../members/treeMembers';
import { hostClock } from '../platform/bootClock';
import { freshProcessTable } from '../platform/createProcessTable';
import { Logger, silentLogger } from '../platform/log';
import { readPssBytes } from '../platform/procFiles';
import { ProcessInfo, ProcessTable, Snapshot } from '../platform/processTable';
import { PtyRoot } from '../pty/ptyRoot';
import { PtySpawnOptions, spawnPtyTree } from '../pty/spawnPtyTree';
import { RecordStore } from '../records/claims';
import { setAsidePreviousRecord } from '../records/previousRecord';
import { TreeRecord } from '../records/schema';
import { UntrustedFileError } from '../records/trustedFiles';
import { SpawnError } from '../spawn/spawnError';
import { SpawnedTree, spawnTree, SpawnTreeOptions, TreeRoot } from '../spawn/spawnTree';
import type { TreeQuery } from '../tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../tracking/memberTracker';
import { Watchdog, WatchdogOptions } from './watchdog';

export type TreeState = 'running' | 'exited' | 'killing' | 'ended';

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
   * with the first tree, told to quit when the record goes. None when omitted.
   */
  watchdog?: WatchdogOptions;
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
  private readonly log: Logger;
  private watchTimer: NodeJS.Timeout | undefined;
  private readonly watchTracker: MemberTracker;
  private disposed = false;
  private watchdog: Watchdog | undefined;
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
        this.core.killer.killNowSync(tree.record, { continuouslyOwned: true, cgroupVerified: tree.record.cgroup !== null });
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
    return this.spawnWatched(() => spawnTree({ cgroups: this.options.cgroups, ...spawnOptions }, this.core), deadline);
  }

  /** Spawns an owned tree on a pseudo-terminal of its own (pty/spawnPtyTree.ts), recorded like any other. */
  spawnTerminal(options: PtySpawnOptions & Pick<OwnerSpawnOptions, 'deadline'>): OwnedTree<PtyRoot> {
    this.checkCanSpawn();
    const { deadline, ...spawnOptions } = options;
    return this.spawnWatched(() => spawnPtyTree({ cgroups: this.options.cgroups, ...spawnOptions }, this.core), deadline);
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
      if (this.trees.size === 0) this.stopWatchdog();
      throw e;
    }
    if (deadline !== undefined) spawned.record.deadline = Math.round(deadline);
    return this.adopt(spawned);
  }

  private adopt<R extends TreeRoot>(spawned: SpawnedTree<R>): OwnedTree<R> {
    const tree: OwnedTree<R> = { record: spawned.record, child: spawned.child, tier: spawned.tier, state: 'running' };
    this.trees.set(tree.record.id, tree);
    this.writeRecord();
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
    return tree;
  }

  get(id: string): OwnedTree | undefined {
    return this.trees.get(id);
  }

  list(): OwnedTree[] {
    return [...this.trees.values()];
  }

  /** How to resolve one of our trees' members (for `membersOfTrees`): we own it throughout, and made its cgroup. */
  queryOf(id: string): TreeQuery | undefined {
    const tree = this.trees.get(id);
    return tree && { ...tree.record, continuouslyOwned: true, cgroupVerified: tree.record.cgroup !== null };
  }

  /** Live members of a tree in `snap` (a fresh snapshot when omitted). */
  members(id: string, snap: Snapshot = this.core.table.snapshot()): ProcessInfo[] {
    const tree = this.trees.get(id);
    if (!tree) return [];
    return resolveTreeMembers(tree.record, snap, { continuouslyOwned: true, cgroupVerified: tree.record.cgroup !== null }, this.core)
      .members;
  }

  /** Kills a whole tree; a second call while one runs joins it. The tree is dropped once empty. */
  async kill(id: string, graceMs: number): Promise<KillReport> {
    const tree = this.trees.get(id);
    if (!tree) return emptyReport(id);
    if (tree.state !== 'ended') tree.state = 'killing';
    const report = await this.core.killer.kill(tree.record, {
      graceMs,
      continuouslyOwned: true,
      cgroupVerified: tree.record.cgroup !== null,
      rootAlive: () => rootRuns(tree),
      log: this.log,
    });
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

  /** Ctrl-C for a tree: SIGINT to its process group. */
  interrupt(id: string): boolean {
    const tree = this.trees.get(id);
    return tree ? this.core.killer.interrupt(tree.record, true) : false;
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
  }

  /**
   * Kills every tree (grace `graceMs`) and stops owning them. Trees that left survivors stay in the record, so a
   * later sweep retries them; with none, the record is removed.
   */
  async dispose(graceMs: number): Promise<KillReport[]> {
    this.disposed = true;
    this.budget.dispose();
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = undefined;
    const reports = await Promise.all([...this.trees.keys()].map((id) => this.kill(id, graceMs)));
    for (const report of reports) {
      if (report.survivors === 0) this.trees.delete(report.treeId);
    }
    this.writeRecord();
    if (this.onExit && this.trees.size === 0) process.off('exit', this.onExit);
    return reports;
  }

  /**
   * Looks once at every tree whose root has exited (or that is being killed); drops those with no live member.
   * A running tree waits for its root's exit to be reported (a pseudo-terminal reports it once the output is
   * drained), so a tree never ends before its root's exit is known.
   */
  checkAll(snap: Snapshot = this.core.table.snapshot()): void {
    for (const tree of this.trees.values()) if (tree.state !== 'running') this.checkEnded(tree, snap);
  }

  private checkEnded(tree: OwnedTree, snap?: Snapshot): void {
    // The root is a member while it runs; on Windows only the root is known.
    if (this.core.platform === 'win32' ? rootRuns(tree) : this.members(tree.record.id, snap).length > 0) return;
    for (const dir of [tree.record.cgroup, tree.record.pidsCgroup]) if (dir) this.core.cgroups.remove(dir);
    tree.state = 'ended';
    this.trees.delete(tree.record.id);
    this.budget.unwatch(tree.record.id);
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
    // A running tree waits for its root's exit to be reported, as in checkAll: a pseudo-terminal root reports it
    // up to 200 ms after it died, and the tree must not end before.
    const trees = [...this.trees.values()].filter((t) => t.state !== 'running');
    const queries = trees.flatMap((t) => this.queryOf(t.record.id) ?? []);
    if (this.core.platform === 'win32' || !canTrack(table, queries, {}, this.core)) return this.checkAll();
    const seen = refreshMembers(table, this.watchTracker.next(queries, {}, true), this.core);
    this.watchTracker.learn(seen);
    let snap: Snapshot | undefined;
    for (const tree of trees) {
      if ((seen.trees.find((t) => t.id === tree.record.id)?.members.length ?? 0) > 0) continue;
      this.checkEnded(tree, (snap ??= table.snapshot()));
    }
  }

  private scheduleWatch(): void {
    if (this.watchTimer || this.disposed) return;
    this.watchTimer = setInterval(() => {
      try {
        this.watchOnce();
      } catch (e) {
        this.log.warn(`checking owned trees failed: ${(e as Error).message}`);
      }
      if (![...this.trees.values()].some((t) => t.rootExit)) {
        clearInterval(this.watchTimer);
        this.watchTimer = undefined;
      }
    }, this.options.watchIntervalMs ?? 1000);
    this.watchTimer.unref();
  }

  private writeRecord(): void {
    try {
      this.store.write(
        this.self,
        [...this.trees.values()].map((t) => t.record),
      );
    } catch (e) {
      this.log.error(`cannot write the owned-trees record in ${this.store.dir}: ${(e as Error).message}`);
    }
    if (this.trees.size === 0) this.stopWatchdog();
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

function rootRuns(tree: OwnedTree): boolean {
  return tree.child.exitCode === null && tree.child.signalCode === null;
}
