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
 *      now (its `.current` link, see records.ts): nothing, if it removed its record meanwhile. A claimed file
 *      that cannot be read as a record is set aside once, as a corrupt record is;
 *   4. claims whose claimant is gone are taken over the same way (renamed, re-read, re-judged).
 * A record from an earlier boot is only cleaned up (nothing of it can run); a record from another pid
 * namespace or machine, or whose owner cannot be judged (unreadable /proc, an older version's record whose
 * owner pid is in use), is left alone.
 */
import * as path from 'path';
import { HostClock, hostClock } from './platform/bootClock';
import { CgroupMode } from './cgroup/probe';
import { removeUnnamedEmptyCgroups } from './cgroup/treeCgroup';
import { Core, processCore } from './core';
import { ownerState, PresenceProbe, sameProcess } from './identity/ownerIdentity';
import { isRecordedRoot } from './identity/startTimes';
import { judgeRecord, OWNER_GONE, Verdict } from './records/judge';
import { KillOptions, KillReport } from './kill/killTarget';
import { Logger, silentLogger } from './platform/log';
import { TreeIdentity } from './members/membership';
import { resolveTreeMembers } from './members/treeMembers';
import { cgroupVerified } from './cgroup/treeCgroup';
import { ProcessInfo, ProcessTable, provesIdentity, Snapshot } from './platform/processTable';
import { OwnerInfo } from './identity/ownerIdentity';
import { RecordStore } from './records/claims';
import { OwnerRecord, RecordProblem, TreeRecord } from './records/schema';

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

export interface SweepResult {
  trees: SweptTree[];
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

/** What the sweep kills with: a `TreeKiller` in production, a recording fake in unit tests. */
export interface SweepKiller {
  kill(tree: TreeIdentity, options: KillOptions): Promise<KillReport>;
}

/** Who may never be a member (ourselves, our ancestors, our group, PID 1): a `SignalGuard`. */
export interface SweepGuard {
  protectedReason(p: ProcessInfo): string | undefined;
  /** The uid of `p` when it is not ours: a tag alone never makes another user's process a member. */
  otherUid?(p: ProcessInfo): number | undefined;
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
  /** The cgroup operations and where our cgroups live; by default this process's (see core.ts). */
  cgroupParts?: Pick<Core, 'cgroups' | 'cgroupProber'>;
  /**
   * Sweep only this owner's record (a watchdog that saw its owner die): no other record, claim, temp file
   * or cgroup is looked at, and nothing is set aside.
   */
  onlyOwner?: OwnerInfo;
  /** The boot clock identities are compared in; defaults to this machine's. */
  clock?: HostClock;
  log?: Logger;
}

/**
 * This process's table, killer and guard, for front ends: `sweepOrphans` itself takes them as parameters
 * (unit tests pass synthetic ones).
 */
export function localSweepParts(core: Core = processCore()): Pick<SweepOptions, 'table' | 'killer' | 'guard' | 'cgroupParts'> {
  return { table: core.table, killer: core.killer, guard: core.guard, cgroupParts: core };
}

/** Claim files this process is working on right now (a second sweep in this process leaves them alone). */
const activeClaims = new Set<string>();

/** Sweeps the records folder once. Never throws for a bad record: problems are reported in the result. */
export async function sweepOrphans(store: RecordStore, options: SweepOptions): Promise<SweepResult> {
  const log = options.log ?? silentLogger;
  const { table, self } = options;
  const clock = 'clock' in options ? options.clock : hostClock();
  const result: SweepResult = { trees: [], killed: 0, liveOwners: 0, skipped: [], problems: [], cgroupsRemoved: [] };
  const problem = (p: RecordProblem) => {
    result.problems.push(p);
    log.warn(`record ${p.file}: ${p.problem}${p.setAsideTo ? `; moved to ${p.setAsideTo}` : ''}`);
  };
  if (clock && !clock.procIsOurs) {
    problem({
      file: '/proc',
      problem: 'the /proc mounted here is not of this pid namespace: no process identity can be proven; nothing swept',
    });
    return result;
  }

  const judge = (record: OwnerRecord): Verdict => {
    if (options.onlyOwner && !sameProcess(record.owner, options.onlyOwner))
      return { act: 'leave', why: 'not the owner this sweep is for', live: false };
    return judgeRecord(record, { table, self, clock });
  };

  const namedCgroups = new Set<string>();
  const keep = (trees: TreeRecord[]) => {
    for (const t of trees) if (t.cgroup) namedCgroups.add(t.cgroup);
  };
  const leave = (file: string, v: Verdict & { act: 'leave' | 'refuse' }, record: OwnerRecord) => {
    keep(record.trees);
    if (v.act === 'refuse') problem({ file, problem: v.problem });
    else if (v.live) result.liveOwners++;
    else if (v.why !== 'not the owner this sweep is for') result.skipped.push({ file, reason: v.why });
  };

  const claimed: { file: string; record: OwnerRecord; cleanUpOnly: boolean }[] = [];
  /**
   * Judges a claim we hold by its content now; keeps it to act on, or gives it back. `judged` is what was
   * read and judged before the claim, with its verdict: when the claimed content is that very record, the
   * verdict stands (an owner found gone, or from an earlier boot, never comes back). `foundAs`: the name a claim
   * we took over had, for reports.
   */
  const takeClaim = (file: string, judged?: { record: OwnerRecord; verdict: Verdict }, foundAs = file) => {
    if (activeClaims.has(file)) return;
    let record: OwnerRecord;
    try {
      record = store.readClaim(file);
    } catch (e) {
      // Set aside like a corrupt record (by a full sweep): left under a claim name, it would be claimed anew by
      // every sweep after this one.
      const p = store.unreadable(file, e as Error, !options.onlyOwner);
      const now = p.setAsideTo || file === foundAs ? '' : ` (taken over as ${path.basename(file)})`;
      problem({ ...p, file: foundAs, problem: `claimed record${now}: ${p.problem}` });
      return;
    }
    const v = judged && JSON.stringify(judged.record) === JSON.stringify(record) ? judged.verdict : judge(record);
    if (v.act === 'sweep' || v.act === 'clean-up') {
      activeClaims.add(file);
      claimed.push({ file, record, cleanUpOnly: v.act === 'clean-up' });
      log.info(`${v.why}: sweeping its ${record.trees.length} tree(s)${v.act === 'clean-up' ? ' (record only)' : ''}`);
      return;
    }
    leave(store.fileOf(record.owner.pid), v, record);
    const back = store.restoreClaim(file, record, sameProcess, v.act === 'leave' && v.live);
    log.info(`claimed record of owner ${record.owner.pid} not swept (${v.act === 'refuse' ? v.problem : v.why}): ${back}`);
  };

  const { records, problems } = store.list({ setAside: !options.onlyOwner });
  for (const p of problems) problem(p);
  for (const { file, record } of records) {
    const v = judge(record);
    if (v.act === 'leave' || v.act === 'refuse') {
      leave(file, v, record);
      continue;
    }
    const claim = store.claim(record.owner.pid, self);
    if (claim) takeClaim(claim, { record, verdict: v }); // else another sweeper claimed it first
  }
  // Claims of sweepers that died mid-sweep are taken over; our own (left by an earlier sweep here) taken up.
  for (const c of store.claims(clock)) {
    if (activeClaims.has(c.file) || (options.onlyOwner && c.ownerPid !== options.onlyOwner.pid)) continue;
    if (c.problem) {
      // Not a claim anything could have written: renaming it would only move it on every sweep.
      problem({ file: c.file, problem: `under a claim name: ${c.problem}; left in place` });
      continue;
    }
    if (sameProcess(c.claimant, self)) {
      takeClaim(c.file);
      continue;
    }
    const claimant = ownerState(table, c.claimant, clock);
    if (claimant !== 'dead' && claimant !== 'replaced' && claimant !== 'earlier-boot') continue;
    const taken = store.takeOverClaim(c.file, c.ownerPid, self);
    if (!taken) continue; // another sweeper took it over first
    log.info(`claim ${c.file}: its sweeper ${c.claimant.pid} ${OWNER_GONE[claimant]}; taken over`);
    takeClaim(taken, undefined, c.file);
  }

  // One snapshot proves every tree's membership; only trees with live members get a kill (and its snapshots).
  let snap: Snapshot | undefined;
  try {
    if (claimed.some((c) => !c.cleanUpOnly)) snap = table.snapshot();
  } catch (e) {
    problem({ file: '/proc', problem: `cannot take a process snapshot (${(e as Error).message}): claimed records given back` });
    for (const c of claimed) {
      store.restoreClaim(c.file, c.record, sameProcess, false);
      keep(c.record.trees);
      activeClaims.delete(c.file);
    }
    claimed.length = 0;
  }
  await Promise.all(
    claimed.map(async ({ file, record, cleanUpOnly }) => {
      try {
        const remaining: TreeRecord[] = [];
        const swept = cleanUpOnly
          ? record.trees.map((tree): SweptTree => ({
              ...base(record, tree),
              outcome: 'gone',
              killed: 0,
              survivors: 0,
              note: 'recorded before the last boot: nothing of it can still run',
            }))
          : await Promise.all(record.trees.map((tree) => sweepTree(record, tree, snap!, options, log)));
        swept.forEach((s, i) => {
          result.trees.push(s);
          result.killed += s.killed;
          if (s.outcome === 'survivors' || s.outcome === 'refused') remaining.push(record.trees[i]);
        });
        keep(remaining);
        store.finishClaim(file, record, remaining, self);
      } finally {
        activeClaims.delete(file);
      }
    }),
  );

  if (!options.onlyOwner) {
    const location = options.cgroups === 'off' ? undefined : (options.cgroupParts ?? processCore()).cgroupProber.location();
    if (location) {
      result.cgroupsRemoved = removeUnnamedEmptyCgroups(location, namedCgroups);
      for (const dir of result.cgroupsRemoved) log.info(`removed empty cgroup ${dir} left by a killed owner`);
    }
    const gone = (writer: OwnerInfo) => ['dead', 'replaced', 'earlier-boot'].includes(ownerState(table, writer, clock));
    for (const file of store.removeStaleTempFiles(gone, clock)) log.info(`removed ${file}, left by a writer that is gone`);
  }
  if (result.killed > 0)
    log.info(`sweep: ended ${result.killed} orphaned processes in ${result.trees.filter((t) => t.killed > 0).length} tree(s)`);
  return result;
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

async function sweepTree(record: OwnerRecord, tree: TreeRecord, snap: Snapshot, options: SweepOptions, log: Logger): Promise<SweptTree> {
  if (!provesIdentity(snap.startPrecision)) {
    const note = `not swept: this platform's process table has no start times, so no process of another owner's tree can be proven`;
    log.warn(`tree ${tree.id} (${tree.label}) of dead owner ${record.owner.pid}: ${note}`);
    return { ...base(record, tree), outcome: 'refused', killed: 0, survivors: 0, note };
  }
  const rootRefusal = protectedRoot(tree, snap, options.guard);
  if (rootRefusal) {
    const note = `not swept: its recorded root is alive and protected (${rootRefusal}); nothing of it is signalled`;
    log.warn(`tree ${tree.id} (${tree.label}) of dead owner ${record.owner.pid}: ${note}`);
    return { ...base(record, tree), outcome: 'refused', killed: 0, survivors: 0, note };
  }
  const parts = options.cgroupParts ?? processCore();
  const verified = options.cgroups !== 'off' && cgroupVerified(tree, parts);
  if (tree.cgroup && options.cgroups !== 'off' && !verified)
    log.warn(`tree ${tree.id}: cgroup ${tree.cgroup} is not ours (or was made afresh): not used`);
  const protectedReason = (p: ProcessInfo) => options.guard.protectedReason(p);
  const membership = resolveTreeMembers(tree, snap, { continuouslyOwned: false, cgroupVerified: verified, protectedReason }, { guard: options.guard, cgroups: parts.cgroups });
  if (membership.groupDoubt) log.warn(`tree ${tree.id}: ${membership.groupDoubt}; not signalled as a group`);
  if (membership.members.length === 0) {
    if (verified && tree.cgroup) parts.cgroups.remove(tree.cgroup);
    return { ...base(record, tree), outcome: 'gone', killed: 0, survivors: 0, note: membership.groupDoubt };
  }
  const report = await options.killer.kill(tree, {
    graceMs: options.graceMs,
    continuouslyOwned: false,
    cgroupVerified: verified,
    log,
  });
  log.info(
    `tree ${tree.id} (${tree.label}) of dead owner ${record.owner.pid}: ended ${report.signalled} processes` +
      (report.survivors ? `, ${report.survivors} survived` : ''),
  );
  return {
    ...base(record, tree),
    outcome: report.survivors > 0 ? 'survivors' : 'killed',
    killed: report.signalled,
    survivors: report.survivors,
    note: report.groupDoubt ?? membership.groupDoubt,
  };
}
