/**
 * Sweeping orphaned trees: the records of owners that are gone (dead, or their pid reused by a newer process)
 * are claimed one at a time, each tree in them that provably is the recorded one is killed, and the record is
 * deleted. A live owner's record and our own are never touched.
 */
import { cgroupTier, removeCgroup, removeUnnamedEmptyCgroups } from './cgroup';
import { ownerState } from './identity';
import { KillReport, treeKiller } from './kill';
import { Logger, silentLogger } from './log';
import { resolveMembers } from './members';
import { cgroupVerified } from './owner';
import { processTable, Snapshot } from './processTable';
import { classifyRecords } from './recordOwners';
import { OwnerInfo, OwnerRecord, RecordProblem, RecordStore, TreeRecord } from './records';

export interface SweptTree {
  ownerPid: number;
  treeId: string;
  label: string;
  rootPid: number;
  /** 'killed': members were ended; 'gone': nothing of it was alive; 'survivors': some could not be ended. */
  outcome: 'killed' | 'gone' | 'survivors';
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
  /** Record files that could not be read, and what was done with them. */
  problems: RecordProblem[];
  /** Empty cgroup directories of ours that no record named, removed. */
  cgroupsRemoved: string[];
}

export interface SweepOptions {
  /** The sweeping process itself: its own record is never swept. */
  self: OwnerInfo;
  graceMs: number;
  log?: Logger;
}

/** Claim files this process is working on right now (a second sweep in this process leaves them alone). */
const activeClaims = new Set<string>();

/** Sweeps the records folder once. Never throws for a bad record: problems are reported in the result. */
export async function sweepOrphans(store: RecordStore, options: SweepOptions): Promise<SweepResult> {
  const log = options.log ?? silentLogger;
  const table = processTable();
  const result: SweepResult = { trees: [], killed: 0, liveOwners: 0, problems: [], cgroupsRemoved: [] };
  const { own, live, gone, problems } = classifyRecords(store, options.self, table);
  result.problems.push(...problems);
  for (const p of problems) log.warn(`record ${p.file}: ${p.problem}${p.setAsideTo ? `; moved to ${p.setAsideTo}` : ''}`);

  const claimed: { file: string; record: OwnerRecord }[] = [];
  const take = (file: string | undefined, fallback?: OwnerRecord) => {
    if (!file || activeClaims.has(file)) return;
    const record = safeReadClaim(store, file) ?? fallback;
    if (!record) {
      result.problems.push({ file, problem: 'claimed record could not be read; left in place' });
      return;
    }
    activeClaims.add(file);
    claimed.push({ file, record });
  };
  const namedCgroups = new Set<string>();
  for (const { record } of [...own, ...live]) for (const t of record.trees) if (t.cgroup) namedCgroups.add(t.cgroup);
  result.liveOwners = live.length;
  for (const { record, state } of gone) {
    const owner = record.owner;
    const file = store.claim(owner.pid, options.self);
    if (!file) continue; // another sweeper claimed it first
    log.info(`owner ${owner.pid} is ${state === 'dead' ? 'gone' : 'gone (its pid now belongs to a newer process)'}: sweeping its ${record.trees.length} tree(s)`);
    take(file, record);
  }
  // Claims of sweepers that died mid-sweep are taken over; our own (set aside at start-up) are taken up.
  for (const c of store.claims()) {
    const ours = c.claimant.pid === options.self.pid && c.claimant.startTime === Math.round(options.self.startTime);
    if (ours) take(c.file);
    else if (ownerState(table, c.claimant.pid, c.claimant.startTime) !== 'alive') take(store.reclaim(c.file, c.ownerPid, options.self));
  }

  // One snapshot proves every tree's membership; only trees with live members get a kill (and its snapshots).
  const snap = claimed.length > 0 ? table.snapshot() : undefined;
  await Promise.all(claimed.map(async ({ file, record }) => {
    const remaining: TreeRecord[] = [];
    const swept = await Promise.all(record.trees.map((tree) => sweepTree(record, tree, snap!, options, log)));
    swept.forEach((s, i) => {
      result.trees.push(s);
      result.killed += s.killed;
      if (s.outcome === 'survivors') remaining.push(record.trees[i]);
    });
    try {
      store.release(file, record, remaining);
    } finally {
      activeClaims.delete(file);
    }
  }));

  const tier = cgroupTier('auto').tier;
  if (tier) {
    result.cgroupsRemoved = removeUnnamedEmptyCgroups(tier, namedCgroups);
    for (const dir of result.cgroupsRemoved) log.info(`removed empty cgroup ${dir} left by a killed owner`);
  }
  store.removeStaleTempFiles();
  if (result.killed > 0) log.info(`sweep: ended ${result.killed} orphaned processes in ${result.trees.filter((t) => t.killed > 0).length} tree(s)`);
  return result;
}

async function sweepTree(record: OwnerRecord, tree: TreeRecord, snap: Snapshot, options: SweepOptions, log: Logger): Promise<SweptTree> {
  const base = { ownerPid: record.owner.pid, treeId: tree.id, label: tree.label, rootPid: tree.rootPid };
  const verified = cgroupVerified(tree);
  if (tree.cgroup && !verified) log.warn(`tree ${tree.id}: cgroup ${tree.cgroup} is not ours (or was made afresh): not used`);
  const membership = resolveMembers(tree, snap, { continuouslyOwned: false, cgroupVerified: verified });
  if (membership.groupDoubt) log.warn(`tree ${tree.id}: ${membership.groupDoubt}; not signalled as a group`);
  if (membership.members.length === 0) {
    if (verified && tree.cgroup) removeCgroup(tree.cgroup);
    return { ...base, outcome: 'gone', killed: 0, survivors: 0, note: membership.groupDoubt };
  }
  const report: KillReport = await treeKiller.kill(tree, {
    graceMs: options.graceMs,
    continuouslyOwned: false,
    cgroupVerified: verified,
    log,
  });
  log.info(`tree ${tree.id} (${tree.label}) of dead owner ${record.owner.pid}: ended ${report.signalled} processes` +
    (report.survivors ? `, ${report.survivors} survived` : ''));
  return {
    ...base,
    outcome: report.survivors > 0 ? 'survivors' : 'killed',
    killed: report.signalled,
    survivors: report.survivors,
    note: report.groupDoubt,
  };
}

function safeReadClaim(store: RecordStore, file: string): OwnerRecord | undefined {
  try {
    return store.readClaim(file);
  } catch {
    return undefined;
  }
}
