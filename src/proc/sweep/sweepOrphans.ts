/**
 * Sweeping orphaned trees: the records of owners that are gone (dead, or their pid reused by a later process)
 * are claimed one at a time, each tree in them that provably is the recorded one is killed, and the record is
 * deleted. A live owner's record and our own are never touched.
 *
 * The order that keeps two sweepers (or a sweeper and a watchdog) from ever acting on one record, and keeps
 * a sweep from acting on a stale read:
 *   1. judge each record as listed (trusted files only, times bounded by now, owner identity in boot ticks);
 *   2. claim the file by renaming it to a name unique to this claim (only one rename of a file succeeds);
 *   3. read the claimed file again and judge that content: it is what the sweep acts on. A record that turns
 *      out to belong to a live owner (rewritten between 1 and 2, say) goes back under its name as the owner says
 *      now (its `.current` link, see records/claims.ts): nothing, if it removed its record meanwhile. A claimed file
 *      that cannot be read as a record is set aside once, as a corrupt record is;
 *   4. claims whose claimant is gone are taken over the same way (renamed, re-read, re-judged).
 * A record from an earlier boot is only cleaned up (nothing of it can run); a record from another pid
 * namespace or machine, or whose owner cannot be judged (unreadable /proc, an older version's record whose
 * owner pid is in use), is left alone. A claimed extension host's record may also name the processes other
 * extensions started in it (`hostProcesses`): they are ended in the same snapshot, beside its trees, but the
 * kept extensions' (see hostChildren/).
 */
import * as path from 'path';
import { CgroupMode, CgroupProber } from '../cgroup/probe';
import { CgroupControl, cgroupVerified, removeUnnamedEmptyCgroups } from '../cgroup/treeCgroup';
import { pidsV1Base, removeTreePidsCgroup } from '../cgroup/treeLimits';
import { endHostProcesses, recordedHostQuery } from '../hostChildren/ending';
import { OwnerInfo, ownerState, OwnerState, PresenceProbe, sameProcess } from '../identity/ownerIdentity';
import { isRecordedRoot } from '../identity/startTimes';
import { KillOptions, KillReport, KillTarget } from '../kill/killTarget';
import { TreeIdentity } from '../members/membership';
import { resolveTreeMembers } from '../members/treeMembers';
import { HostClock, hostClock } from '../platform/bootClock';
import { localTime, Logger, processCount, silentLogger } from '../platform/log';
import { ProcessInfo, ProcessTable, provesIdentity, Snapshot, WATCHDOG_VARIABLE } from '../platform/processTable';
import { RecordStore } from '../records/claims';
import { judgeRecord, OWNER_GONE, Verdict } from '../records/judge';
import { HostProcessesRecord, OwnerRecord, RecordProblem, TreeRecord } from '../records/schema';

export interface SweptTree {
  ownerPid: number;
  treeId: string;
  label: string;
  rootPid: number;
  /**
   * 'killed': members were ended; 'gone': nothing of it was alive; 'survivors': some could not be ended;
   * 'refused': left alone, its record kept: this platform cannot prove another owner's processes (no start
   * times), or its recorded root runs and is protected (PID 1, the sweeper or its ancestor); `note` says which.
   */
  outcome: 'killed' | 'gone' | 'survivors' | 'refused';
  killed: number;
  survivors: number;
  /** Why part of it was not trusted (a reused group id, say), when that happened. */
  note?: string;
}

/** What a sweep did with the processes other extensions started in a gone extension host (its record's `hostProcesses`). */
export interface SweptHostProcesses {
  ownerPid: number;
  /** Processes of the host's found running (the kept extensions' besides). */
  found: number;
  killed: number;
  survivors: number;
  /** Processes of extensions never ended (`agentTrees.otherExtensions.keep`, Agent Trees' own), left running. */
  kept: number;
  /** Why they were not ended, when they were not. */
  note?: string;
}

export interface SweepResult {
  trees: SweptTree[];
  /** The gone extension hosts whose other extensions' processes were looked at. */
  hostProcesses: SweptHostProcesses[];
  /** Processes ended in all. */
  killed: number;
  /** Records of owners still alive, left alone. */
  liveOwners: number;
  /** Records left alone for another reason (owner cannot be judged, another namespace), and why. */
  skipped: { file: string; reason: string }[];
  /** Record files that could not be read or trusted, and what was done with them. */
  problems: RecordProblem[];
  /** Empty cgroup directories of ours that no record named, removed. */
  cgroupsRemoved: string[];
}

/**
 * What the sweep kills with: a `TreeKiller` in production, a recording fake in unit tests. All the trees a sweep
 * ends go to one call, so one kill resolves them all from one scan of the process table per step.
 */
export interface SweepKiller {
  killTrees(trees: { tree: TreeIdentity; options: KillOptions }[], firstLook?: Snapshot): Promise<KillReport[]>;
  /** Ends member sets that are no tree (a gone extension host's other processes); without it they are left, recorded. */
  killTarget?(target: KillTarget, options: KillOptions): Promise<KillReport>;
}

/** Who may never be a member (ourselves, our ancestors, our group, PID 1): a `SignalGuard`. */
export interface SweepGuard {
  protectedReason(p: ProcessInfo): string | undefined;
  /** The same without our own group (see `SignalGuard.protectedPidReason`); `protectedReason` where absent. */
  protectedPidReason?(p: ProcessInfo): string | undefined;
  /** The uid of `p` when it is not ours: a tag alone never makes another user's process a member. */
  otherUid?(p: ProcessInfo): number | undefined;
}

/** The cgroups a sweep reads and removes, and where ours live. */
export interface SweepCgroups {
  cgroups: Pick<CgroupControl, 'procs' | 'remove'>;
  cgroupProber: Pick<CgroupProber, 'location'>;
}

export interface SweepOptions {
  /** The sweeping process itself: its own record is never swept, and its claims carry this identity. */
  self: OwnerInfo;
  graceMs: number;
  table: ProcessTable & PresenceProbe;
  killer: SweepKiller;
  guard: SweepGuard;
  /** 'off': no cgroup is probed, read or removed (trees are found by group, session, tag and parentage). */
  cgroups: CgroupMode;
  /** The cgroup operations and where our cgroups live (see core.ts). */
  cgroupParts: SweepCgroups;
  /**
   * Sweep only this owner's record (a watchdog that saw its owner die): no other record, claim, temp file
   * or cgroup is looked at, and nothing is set aside.
   */
  onlyOwner?: OwnerInfo;
  /** The boot clock identities are compared in; defaults to this machine's. */
  clock?: HostClock;
  log?: Logger;
}

/** Claim files this process is working on right now (a second sweep in this process leaves them alone). */
const activeClaims = new Set<string>();

/** The owner states in which a record (or a claim) is an orphan's: its owner (or its sweeper) is provably gone. */
const GONE: readonly OwnerState[] = ['dead', 'replaced', 'earlier-boot'];

/** A record this sweep holds a claim on and acts on: its trees are killed, or (`cleanUpOnly`) the record only removed. */
interface Claimed {
  file: string;
  record: OwnerRecord;
  cleanUpOnly: boolean;
}

/** A tree of a claimed record that has live members: what its kill is asked. */
interface TreeKill {
  record: OwnerRecord;
  groupDoubt?: string;
  kill: { tree: TreeRecord; options: KillOptions };
}

/** What was read and judged before a claim, with its verdict (see `Sweep.take`). */
interface Judged {
  record: OwnerRecord;
  verdict: Verdict;
}

/** Sweeps the records folder once. Never throws for a bad record: problems are reported in the result. */
export function sweepOrphans(store: RecordStore, options: SweepOptions): Promise<SweepResult> {
  return new Sweep(store, options).run();
}

/**
 * One sweep of one folder, in the phases of the top of this file: judge what is listed, claim the gone owners'
 * records, take over stale claims, take one snapshot, kill the claimed trees, tidy up. Each phase is a method;
 * what they share is the result so far, the claims held, and the cgroups some record still names.
 */
class Sweep {
  private readonly result: SweepResult = {
    trees: [],
    hostProcesses: [],
    killed: 0,
    liveOwners: 0,
    skipped: [],
    problems: [],
    cgroupsRemoved: [],
  };
  /** Keys (`pid:startTicks`) of every owner a listed record names: Agent Trees' own, never another host's process. */
  private readonly owners = new Set<string>();
  private readonly log: Logger;
  private readonly clock: HostClock | undefined;
  private claimed: Claimed[] = [];
  /** Cgroups some record still names (left, given back, or with survivors): never removed as unnamed. */
  private readonly namedCgroups = new Set<string>();
  /** The look at the processes that tells which watchdogs are still at work (taken when a trace is found). */
  private tidyLook: Snapshot | undefined;

  constructor(
    private readonly store: RecordStore,
    private readonly options: SweepOptions,
  ) {
    this.log = options.log ?? silentLogger;
    this.clock = 'clock' in options ? options.clock : hostClock();
  }

  async run(): Promise<SweepResult> {
    if (this.clock && !this.clock.procIsOurs) {
      this.problem({
        file: '/proc',
        problem: 'the /proc mounted here is not of this pid namespace: no process identity can be proven; nothing swept',
      });
      return this.result;
    }
    this.claimGoneOwners();
    this.takeOverStaleClaims();
    const snap = this.snapshot();
    await this.killClaimed(snap);
    if (!this.options.onlyOwner) this.tidy();
    const swept = this.result.trees.filter((t) => t.killed > 0).length;
    if (this.result.killed > 0) {
      const trees = swept === 1 ? '1 agent tree' : `${swept} agent trees`;
      this.log.info(`sweep: ended ${processCount(this.result.killed)} that ${trees} of stopped owners left running`);
    }
    return this.result;
  }

  // ------------------------------------------------------------------------------------------ judge and claim

  private judge(record: OwnerRecord): Verdict {
    if (this.options.onlyOwner && !sameProcess(record.owner, this.options.onlyOwner))
      return { act: 'leave', why: 'not the owner this sweep is for', live: false };
    return judgeRecord(record, { table: this.options.table, self: this.options.self, clock: this.clock });
  }

  /** Phases 1 and 2: judges every record as listed, and claims those of owners that are gone. */
  private claimGoneOwners(): void {
    const { records, problems } = this.store.list({ setAside: !this.options.onlyOwner });
    for (const p of problems) this.problem(p);
    for (const { file, record } of records) {
      if (record.owner.startTicks !== undefined) this.owners.add(`${record.owner.pid}:${record.owner.startTicks}`);
      const verdict = this.judge(record);
      if (verdict.act === 'leave' || verdict.act === 'refuse') {
        this.leave(file, verdict, record);
        continue;
      }
      const claim = this.store.claim(record.owner.pid, this.options.self);
      if (claim) this.take(claim, { record, verdict }); // else another sweeper claimed it first
    }
  }

  /**
   * Phase 3: claims of sweepers that died mid-sweep are taken over (renamed, re-read, re-judged); our own, left by
   * an earlier sweep here, taken up.
   */
  private takeOverStaleClaims(): void {
    const { self, onlyOwner, table } = this.options;
    for (const c of this.store.claims(this.clock)) {
      if (activeClaims.has(c.file) || (onlyOwner && c.ownerPid !== onlyOwner.pid)) continue;
      if (c.problem) {
        // Not a claim anything could have written: renaming it would only move it on every sweep.
        this.problem({ file: c.file, problem: `under a claim name: ${c.problem}; left in place` });
        continue;
      }
      if (sameProcess(c.claimant, self)) {
        this.take(c.file);
        continue;
      }
      const claimant = ownerState(table, c.claimant, this.clock);
      if (!GONE.includes(claimant)) continue;
      const taken = this.store.takeOverClaim(c.file, c.ownerPid, self);
      if (!taken) continue; // another sweeper took it over first
      this.log.info(`claim ${c.file}: its sweeper ${c.claimant.pid} ${OWNER_GONE[claimant]}; taken over`);
      this.take(taken, undefined, c.file);
    }
  }

  /**
   * Judges a claim we hold by its content now; keeps it to act on, or gives it back. `judged` is what was read and
   * judged before the claim: when the claimed content is that very record, the verdict stands (an owner found gone,
   * or from an earlier boot, never comes back). `foundAs`: the name a claim we took over had, for reports.
   */
  private take(file: string, judged?: Judged, foundAs = file): void {
    if (activeClaims.has(file)) return;
    let record: OwnerRecord;
    try {
      record = this.store.readClaim(file);
    } catch (e) {
      // Set aside like a corrupt record (by a full sweep): left under a claim name, it would be claimed anew by
      // every sweep after this one.
      const p = this.store.unreadable(file, e as Error, !this.options.onlyOwner);
      const now = p.setAsideTo || file === foundAs ? '' : ` (taken over as ${path.basename(file)})`;
      this.problem({ ...p, file: foundAs, problem: `claimed record${now}: ${p.problem}` });
      return;
    }
    const v = judged && JSON.stringify(judged.record) === JSON.stringify(record) ? judged.verdict : this.judge(record);
    if (v.act === 'sweep' || v.act === 'clean-up') {
      activeClaims.add(file);
      this.claimed.push({ file, record, cleanUpOnly: v.act === 'clean-up' });
      this.log.info(foundMessage(record, v));
      return;
    }
    this.leave(this.store.fileOf(record.owner.pid), v, record);
    const back = this.store.restoreClaim(file, record, sameProcess, v.act === 'leave' && v.live);
    this.log.info(`claimed record of owner ${record.owner.pid} not swept (${v.act === 'refuse' ? v.problem : v.why}): ${back}`);
  }

  /** A record left alone: counted or reported, and its cgroups kept. Our own is no other live owner. */
  private leave(file: string, v: Verdict & { act: 'leave' | 'refuse' }, record: OwnerRecord): void {
    this.keep(record.trees);
    if (v.act === 'refuse') this.problem({ file, problem: v.problem });
    else if (v.live && !sameProcess(record.owner, this.options.self)) this.result.liveOwners++;
    else if (v.why !== 'not the owner this sweep is for') this.result.skipped.push({ file, reason: v.why });
  }

  // ------------------------------------------------------------------------------------------ snapshot and kill

  /**
   * Phase 4: one snapshot proves every claimed tree's membership (only trees with live members get a kill, and its
   * snapshots). When it cannot be taken, every claim is given back: nothing is decided without one.
   */
  private snapshot(): Snapshot | undefined {
    if (!this.claimed.some((c) => !c.cleanUpOnly)) return undefined;
    try {
      return this.options.table.snapshot();
    } catch (e) {
      this.problem({ file: '/proc', problem: `cannot take a process snapshot (${(e as Error).message}): claimed records given back` });
      for (const c of this.claimed) {
        this.store.restoreClaim(c.file, c.record, sameProcess, false);
        this.keep(c.record.trees);
        activeClaims.delete(c.file);
      }
      this.claimed = [];
      return undefined;
    }
  }

  /**
   * Phase 5: every claimed record's trees swept, all in one kill (see `SweepKiller`), its other extensions'
   * processes ended beside them, and each claim finished with what survived.
   */
  private async killClaimed(snap: Snapshot | undefined): Promise<void> {
    const plans = this.claimed.map(({ record, cleanUpOnly }) =>
      record.trees.map((tree) => (cleanUpOnly ? recordOnly(record, tree) : this.planTree(record, tree, snap!))),
    );
    const kills = plans.flat().filter((p): p is TreeKill => 'kill' in p);
    try {
      // The kill starts from the snapshot the trees were just judged on.
      const [reports, hostLeft] = await Promise.all([
        kills.length > 0
          ? this.options.killer.killTrees(
              kills.map((k) => k.kill),
              snap,
            )
          : Promise.resolve([]),
        Promise.all(this.claimed.map(({ record, cleanUpOnly }) => (cleanUpOnly ? undefined : this.endHostProcessesOf(record, snap!)))),
      ]);
      const reportOf = new Map(kills.map((k, i) => [k, reports[i]]));
      this.claimed.forEach(({ file, record }, i) => {
        const swept = plans[i].map((p) => ('kill' in p ? this.killed(record, p, reportOf.get(p)!) : p));
        const remaining = record.trees.filter((_, j) => swept[j].outcome === 'survivors' || swept[j].outcome === 'refused');
        swept.forEach((t, j) => {
          // Nothing of it runs: its v1 pids cgroup goes with it, as its cgroup went with the kill.
          if ((t.outcome === 'killed' || t.outcome === 'gone') && this.options.cgroups !== 'off') removeTreePidsCgroup(record.trees[j]);
          this.result.trees.push(t);
          this.result.killed += t.killed;
        });
        this.keep(remaining);
        const { hostProcesses: _, ...rest } = record;
        const left = hostLeft[i];
        this.store.finishClaim(file, left ? { ...rest, hostProcesses: left } : rest, remaining, this.options.self);
      });
    } finally {
      // A kill that failed leaves its claims as they are, for a later sweep to take over.
      for (const { file } of this.claimed) activeClaims.delete(file);
    }
  }

  /** One tree of a claimed record: refused, found gone, or to be killed (each member proven in `snap` first). */
  private planTree(record: OwnerRecord, tree: TreeRecord, snap: Snapshot): SweptTree | TreeKill {
    const { options, log } = this;
    if (!provesIdentity(snap.startPrecision)) {
      const note = `not swept: this platform's process table has no start times, so no process of another owner's tree can be proven`;
      log.warn(`${treeOfStopped(record, tree)}: ${note}`);
      return { ...base(record, tree), outcome: 'refused', killed: 0, survivors: 0, note };
    }
    const rootRefusal = protectedRoot(tree, snap, options.guard);
    if (rootRefusal) {
      const note = `not swept: its recorded root is alive and protected (${rootRefusal}); nothing of it is signalled`;
      log.warn(`${treeOfStopped(record, tree)}: ${note}`);
      return { ...base(record, tree), outcome: 'refused', killed: 0, survivors: 0, note };
    }
    const parts = options.cgroupParts;
    const verified = options.cgroups !== 'off' && cgroupVerified(tree, parts);
    if (tree.cgroup && options.cgroups !== 'off' && !verified)
      log.warn(`tree ${tree.id}: cgroup ${tree.cgroup} is not ours (or was made afresh): not used`);
    const protectedReason = (p: ProcessInfo) => options.guard.protectedReason(p);
    const membership = resolveTreeMembers(
      tree,
      snap,
      { continuouslyOwned: false, cgroupVerified: verified, protectedReason },
      { guard: options.guard, cgroups: parts.cgroups },
    );
    if (membership.groupDoubt) log.warn(`tree ${tree.id}: ${membership.groupDoubt}; not signalled as a group`);
    if (membership.members.length === 0) {
      if (verified && tree.cgroup) parts.cgroups.remove(tree.cgroup);
      log.info(`${treeOfStopped(record, tree)}: nothing of it runs any more`);
      return { ...base(record, tree), outcome: 'gone', killed: 0, survivors: 0, note: membership.groupDoubt };
    }
    return {
      record,
      groupDoubt: membership.groupDoubt,
      kill: { tree, options: { graceMs: options.graceMs, continuouslyOwned: false, cgroupVerified: verified, log } },
    };
  }

  /** What the kill of one tree did, as the sweep reports it. */
  private killed(record: OwnerRecord, planned: TreeKill, report: KillReport): SweptTree {
    const tree = planned.kill.tree;
    this.log.info(
      `${treeOfStopped(record, tree)}: ended ${processCount(report.signalled)} it left running` +
        (report.survivors ? `; ${report.survivors} could not be ended` : ''),
    );
    return {
      ...base(record, tree),
      outcome: report.survivors > 0 ? 'survivors' : 'killed',
      killed: report.signalled,
      survivors: report.survivors,
      note: report.groupDoubt ?? planned.groupDoubt,
    };
  }

  /**
   * Phase 5, beside the trees: the processes other extensions started in a gone extension host, found in the same
   * snapshot by its record (the processes it saw, its mark, their descendants) and ended but the kept extensions'.
   * Returns what the record must still name (survivors, or all of it when this sweep cannot end them), else undefined.
   */
  private async endHostProcessesOf(record: OwnerRecord, snap: Snapshot): Promise<HostProcessesRecord | undefined> {
    const hp = record.hostProcesses;
    if (!hp) return undefined;
    const { options, log } = this;
    const outcome: SweptHostProcesses = { ownerPid: record.owner.pid, found: 0, killed: 0, survivors: 0, kept: 0 };
    this.result.hostProcesses.push(outcome);
    const killer = options.killer;
    if (!killer.killTarget || !provesIdentity(snap.startPrecision)) {
      outcome.note = 'not ended: this sweep cannot prove or end processes that are no tree';
      log.warn(`other extensions' processes of stopped extension host ${record.owner.pid}: ${outcome.note}`);
      return hp;
    }
    const guard = options.guard;
    const deps = {
      guard: {
        protectedPidReason: (p: ProcessInfo) => (guard.protectedPidReason ?? guard.protectedReason).call(guard, p),
        otherUid: guard.otherUid?.bind(guard),
      },
    };
    const target = recordedHostQuery({ owner: record.owner, hostProcesses: hp }, [...this.owners]);
    const ending = await endHostProcesses(snap, target, deps, {
      killer: { killTarget: killer.killTarget.bind(killer) },
      graceMs: options.graceMs,
      log,
    });
    Object.assign(outcome, {
      found: ending.found,
      killed: ending.report.signalled,
      survivors: ending.report.survivors,
      kept: ending.spared,
    });
    this.result.killed += ending.report.signalled;
    if (ending.found > 0)
      log.info(
        `stopped extension host ${record.owner.pid}: ended ${processCount(ending.report.signalled)} other extensions had started in it`,
      );
    if (ending.report.survivors === 0) return undefined;
    const left = new Set(ending.report.survivorPids);
    return { ...hp, seen: hp.seen.filter((s) => left.has(s.pid)) };
  }

  // ------------------------------------------------------------------------------------------ tidy

  /**
   * Phase 6: empty cgroups of ours that no record names, temp files and links whose writer is gone, and what
   * watchdogs that failed left (reported as problems).
   */
  private tidy(): void {
    const { options, log, clock, result } = this;
    const location = options.cgroups === 'off' ? undefined : options.cgroupParts.cgroupProber.location();
    if (location) {
      result.cgroupsRemoved = removeUnnamedEmptyCgroups(location, this.namedCgroups, Date.now(), log);
    }
    // The cgroup v1 pids cgroups of trees with a process limit (cgroup/treeLimits.ts), where there are any.
    const pidsBase = options.cgroups === 'off' ? undefined : pidsV1Base();
    if (pidsBase)
      result.cgroupsRemoved.push(...removeUnnamedEmptyCgroups({ kind: 'directory', base: pidsBase }, this.namedCgroups, Date.now(), log));
    const gone = (writer: OwnerInfo) => GONE.includes(ownerState(options.table, writer, clock));
    for (const file of this.store.removeStaleTempFiles(gone, clock))
      log.info(`removed ${file}: a record left half-written by a process that is gone`);
    for (const w of this.store.takeWatchdogLogs((owner) => this.watchdogAtWork(owner))) {
      const what = w.text ? w.text.split('\n').join('; ') : 'it left no message';
      this.problem({
        file: w.file,
        problem: `the watchdog of process ${w.ownerPid} could not end its trees: ${what} (reported once, removed)`,
      });
    }
  }

  /**
   * Whether the watchdog of `owner` (or the sweep it runs) is still at work: a process carrying its variable
   * (`<pid>:<start key>`, see owner/watchdog.ts) lives. Its trace is not finished until it exits. Read only when a
   * trace is there, from one look at the processes started since that owner (a watchdog is younger than its owner).
   */
  private watchdogAtWork(owner: { pid: number; startKey: number }): boolean {
    try {
      this.tidyLook ??= this.options.table.snapshot();
    } catch {
      return true; // not known to be done: left for a later sweep
    }
    return this.tidyLook.tagged(WATCHDOG_VARIABLE, owner.startKey).has(`${owner.pid}:${owner.startKey}`);
  }

  private keep(trees: TreeRecord[]): void {
    for (const t of trees) for (const dir of [t.cgroup, t.pidsCgroup]) if (dir) this.namedCgroups.add(dir);
  }

  private problem(p: RecordProblem): void {
    this.result.problems.push(p);
    this.log.warn(`record ${p.file}: ${p.problem}${p.setAsideTo ? `; moved to ${p.setAsideTo}` : ''}`);
  }
}

/** "agent tree "demo-agent"", "2 agent trees (demo-agent, demo-mcp)". */
function treesNamed(trees: TreeRecord[]): string {
  if (trees.length === 1) return `agent tree "${trees[0].label}"`;
  return `${trees.length} agent trees${trees.length ? ` (${trees.map((t) => t.label).join(', ')})` : ''}`;
}

/** What a sweep found in a record it is about to act on, and where it came from, in a user's words. */
function foundMessage(record: OwnerRecord, v: Verdict & { act: 'sweep' | 'clean-up' }): string {
  const owner = `process ${record.owner.pid} (started ${localTime(record.owner.startTime)})`;
  if (v.act === 'clean-up') {
    return `found ${treesNamed(record.trees)} recorded by ${owner} before this machine last started: nothing of it can run now; removing the record`;
  }
  const replaced = v.state === 'replaced' ? ' (its pid now belongs to another process)' : '';
  return (
    `found ${treesNamed(record.trees)} started by ${owner}, which was stopped${replaced} before it could end ` +
    `${record.trees.length === 1 ? 'it' : 'them'} (an editor window closed or crashed, or agent-trees run killed): ending what is left`
  );
}

/** How a tree of a stopped owner is named in the sweep's messages. */
const treeOfStopped = (record: OwnerRecord, tree: TreeRecord) => `"${tree.label}" (tree ${tree.id}) of stopped process ${record.owner.pid}`;

/** A tree of a record from before the last boot: nothing of it can run, only the record goes. */
function recordOnly(record: OwnerRecord, tree: TreeRecord): SweptTree {
  return {
    ...base(record, tree),
    outcome: 'gone',
    killed: 0,
    survivors: 0,
    note: 'recorded before the last boot: nothing of it can still run',
  };
}

function base(record: OwnerRecord, tree: TreeRecord) {
  return { ownerPid: record.owner.pid, treeId: tree.id, label: tree.label, rootPid: tree.rootPid };
}

/**
 * Why the tree's recorded root, running now as that very process (pid and start), may never be signalled (PID 1,
 * the sweeper or its ancestor, its group): such a record names something no sweep may end, so none of it is
 * ended on its word, and it is not "gone" either.
 */
function protectedRoot(tree: TreeRecord, snap: Snapshot, guard: SweepGuard): string | undefined {
  const root = snap.processes.get(tree.rootPid);
  if (!root || !isRecordedRoot(root, tree, snap.startPrecision.unit === 'ticks', snap.startPrecision.errorMs)) return undefined;
  return guard.protectedReason(root) ?? (root.pid <= 1 ? `pid ${root.pid}` : undefined);
}
