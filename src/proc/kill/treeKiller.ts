/**
 * The killer registry: one kill per target at a time, through the platform's backend (posixKill.ts on Linux
 * and macOS, windowsKill.ts on Windows). A second request for a target whose kill is running joins it (one
 * grace timer, one escalation; a shorter grace wins).
 */
import { EventEmitter } from 'events';
import { CgroupProber } from '../cgroup/probe';
import { CgroupControl, cgroupVerified } from '../cgroup/treeCgroup';
import { SignalGuard } from '../identity/guard';
import { Membership, TreeIdentity } from '../members/membership';
import { ExecAsync } from '../platform/execAsync';
import { Logger, processCount, silentLogger } from '../platform/log';
import { ProcessTable, Snapshot } from '../platform/processTable';
import { Signaller } from '../platform/signaller';
import { TreeRecord } from '../records/schema';
import { KillOptions, KillPhase, KillReport, KillTarget, targetId } from './killTarget';
import { interruptGroup, KillSpec, PosixTreeKill } from './posixKill';
import { killWindows } from './windowsKill';

/** Everything a killer reads and signals through. */
export interface KillerDeps {
  platform: NodeJS.Platform;
  table: ProcessTable;
  signaller: Signaller;
  /** The guard for this moment (it is rebuilt when this process is re-parented). */
  guard: () => SignalGuard;
  cgroups: CgroupControl;
  /** Windows: runs taskkill. */
  exec: ExecAsync;
}

/**
 * Kills trees and subtrees. Emits `terminate` and `escalate` with the target's id, for the log and tests.
 * Build one per process (see core.ts), so that requests for one tree from anywhere in the process join.
 */
export class TreeKiller extends EventEmitter {
  private readonly running = new Map<string, { promise: Promise<KillReport>; kill?: PosixTreeKill }>();

  constructor(private readonly deps: KillerDeps) {
    super();
  }

  /** Kills a whole tree; a request for a tree whose kill is running joins it. */
  kill(tree: TreeIdentity, options: KillOptions): Promise<KillReport> {
    return this.killTarget({ kind: 'tree', tree }, options);
  }

  /**
   * Kills several whole trees at once (a sweep's, an owner's at its end): one kill that resolves them all from
   * one scan of the process table per step (the first may be the caller's `firstLook`, a snapshot taken just
   * now). A tree whose kill is running joins that kill instead. Reports come in the order of `trees`.
   */
  killTrees(trees: { tree: TreeIdentity; options: KillOptions }[], firstLook?: Snapshot): Promise<KillReport[]> {
    return Promise.all(
      this.start(
        trees.map(({ tree, options }) => ({ target: { kind: 'tree', tree }, options })),
        firstLook,
      ),
    );
  }

  /**
   * Kills one process and its descendants (SIGTERM, grace, SIGKILL), if it still is the process that started
   * at `startKey`. For "Kill Process and Its Children" on a member of an owned tree.
   */
  killSubtree(pid: number, startKey: number, options: KillOptions): Promise<KillReport> {
    return this.killTarget({ kind: 'subtree', pid, startKey }, options);
  }

  /**
   * Kills whatever `resolve` finds in each snapshot (SIGTERM, grace, SIGKILL, frozen first, as for a tree), one
   * process at a time, never a whole group: for member sets that are not an owned tree, such as what a
   * terminal's shell left running (see `KillTarget`). A second call with the same `id` while one runs joins it.
   */
  killResolved(
    id: string,
    resolve: (snap: Snapshot, guard: SignalGuard) => Membership,
    graceMs: number,
    log?: Logger,
  ): Promise<KillReport> {
    return this.killTarget({ kind: 'members', id, resolve }, { graceMs, continuouslyOwned: false, cgroupVerified: false, log });
  }

  killTarget(target: KillTarget, options: KillOptions): Promise<KillReport> {
    return this.start([{ target, options }])[0];
  }

  /** Starts one kill of every spec whose target has none running; the others join theirs (a shorter grace wins). */
  private start(specs: KillSpec[], firstLook?: Snapshot): Promise<KillReport>[] {
    const fresh = specs.filter((s) => !this.running.has(targetId(s.target)));
    const started = new Map<string, Promise<KillReport>>();
    let kill: PosixTreeKill | undefined;
    if (fresh.length > 0 && this.deps.platform !== 'win32') {
      const onPhase = (id: string, phase: KillPhase) =>
        this.phase(
          fresh.find((s) => targetId(s.target) === id)!,
          phase,
        );
      kill = new PosixTreeKill(fresh, this.killDeps(), onPhase, firstLook);
      const all = kill.run();
      fresh.forEach((s, i) =>
        started.set(
          targetId(s.target),
          all.then((reports) => reports[i]),
        ),
      );
    } else {
      for (const s of fresh) started.set(targetId(s.target), this.killOnWindows(s));
    }
    for (const s of fresh) {
      const id = targetId(s.target);
      const begun = Date.now();
      const log = s.options.log ?? silentLogger;
      const promise = started
        .get(id)!
        .then((report) => {
          logReport(log, describe(s.target), report, Date.now() - begun);
          return report;
        })
        .finally(() => this.running.delete(id));
      this.running.set(id, { promise, kill });
    }
    return specs.map((s) => {
      const existing = this.running.get(targetId(s.target))!;
      if (!fresh.includes(s)) existing.kill?.hurry(s.options.graceMs);
      return existing.promise;
    });
  }

  private phase(spec: KillSpec, phase: KillPhase): void {
    const { target, options } = spec;
    (options.log ?? silentLogger).debug(
      `${describe(target)}: ${phase === 'terminate' ? `SIGTERM, grace ${options.graceMs} ms` : 'SIGKILL'}`,
    );
    this.emit(phase, targetId(target));
  }

  private killOnWindows(spec: KillSpec): Promise<KillReport> {
    const { table, exec, signaller } = this.deps;
    const deps = { table, exec, killProcess: (pid: number) => signaller.signalProcess(pid, 'SIGKILL') };
    return killWindows(spec.target, spec.options, deps, (phase) => this.phase(spec, phase));
  }

  /**
   * SIGKILL for a whole tree, synchronously, with no grace and no waiting: for a process that is exiting
   * right now (the 'exit' event), where nothing asynchronous will run again. Returns whether it signalled.
   * Windows has no synchronous path: false.
   */
  killNowSync(tree: TreeIdentity, options: Omit<KillOptions, 'graceMs'>): boolean {
    if (this.deps.platform === 'win32') return false;
    return new PosixTreeKill(
      [{ target: { kind: 'tree', tree }, options: { ...options, graceMs: 0 } }],
      this.killDeps(),
      () => {},
    ).killNow();
  }

  /** Ctrl-C for a tree: SIGINT to its process group, while that provably is the tree's (POSIX only). */
  interrupt(
    tree: TreeIdentity,
    options: Pick<KillOptions, 'continuouslyOwned' | 'cgroupVerified' | 'extraSeeds' | 'rootAliveAt'>,
  ): boolean {
    if (this.deps.platform === 'win32') return false;
    return interruptGroup(tree, options, this.killDeps());
  }

  private killDeps() {
    return { table: this.deps.table, signaller: this.deps.signaller, guard: this.deps.guard(), cgroups: this.deps.cgroups };
  }
}

function describe(target: KillTarget): string {
  if (target.kind === 'tree') return `tree ${target.tree.id}`;
  if (target.kind === 'subtree') return `process ${target.pid} and its children`;
  return target.id;
}

function logReport(log: Logger, what: string, report: KillReport, ms: number): void {
  log.info(
    `${what}: ended ${processCount(report.signalled)} in ${ms} ms` +
      (report.escalated ? ' (SIGKILL needed)' : '') +
      (report.survivors ? `; ${report.survivors} survived: ${report.survivorPids.join(', ')}` : ''),
  );
  for (const why of report.refused) log.warn(`${what}: not signalled: ${why}`);
}

/**
 * Kills a tree another owner records (alive or not): as that owner's kill would, but without its continuous
 * ownership, so the group counts only while provably the recorded one and the cgroup only once checked ours.
 */
export function killRecordedTree(
  parts: { killer: Pick<TreeKiller, 'kill'>; cgroupProber: Pick<CgroupProber, 'location'> },
  tree: TreeRecord,
  graceMs: number,
  log?: Logger,
): Promise<KillReport> {
  return parts.killer.kill(tree, { graceMs, continuouslyOwned: false, cgroupVerified: cgroupVerified(tree, parts), log });
}
