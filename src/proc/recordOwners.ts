/**
 * Whose record is whose: one look at a records folder sorts every owner's record into our own, a live other
 * owner's, or a gone owner's (an orphan's). The sweep and the view both ask here, so both apply the same self
 * check (pid and start time) and the same liveness rule.
 */
import { OwnerState, ownerState, sameProcess } from './identity';
import { KillReport, treeKiller, TreeKiller } from './kill';
import { Logger } from './log';
import { cgroupVerified } from './owner';
import { processTable, ProcessTable } from './processTable';
import { OwnerInfo, RecordFile, RecordProblem, RecordStore, TreeRecord } from './records';

export interface OwnerRecords {
  /** Our own record (pid and start time are ours). */
  own: RecordFile[];
  /** Records of other owners that are alive. */
  live: RecordFile[];
  /** Records of owners that are gone: dead, or their pid now belongs to a newer process. */
  gone: (RecordFile & { state: Exclude<OwnerState, 'alive' | 'unknown'> })[];
  /** Files that could not be read, and what was done with them. */
  problems: RecordProblem[];
}

/** Whether a record's owner is `self`: the same process (pid and start tick, on this boot, in this namespace). */
export function isOwnRecord(owner: OwnerInfo, self: OwnerInfo): boolean {
  return sameProcess(owner, self);
}

/** Reads the folder once and sorts its records by owner. Never throws for a bad record (see RecordStore.list). */
export function classifyRecords(store: RecordStore, self: OwnerInfo, table: ProcessTable = processTable()): OwnerRecords {
  const out: OwnerRecords = { own: [], live: [], gone: [], problems: [] };
  const { records, problems } = store.list();
  out.problems = problems;
  for (const r of records) {
    if (isOwnRecord(r.record.owner, self)) {
      out.own.push(r);
      continue;
    }
    const state = ownerState(table, r.record.owner);
    if (state === 'alive' || state === 'unknown') out.live.push(r); // unknown is never gone
    else out.gone.push({ ...r, state });
  }
  return out;
}

/**
 * Kills a tree another owner records (alive or not): as that owner's kill would, but without its continuous
 * ownership, so the group counts only while provably the recorded one and the cgroup only once checked ours.
 */
export function killRecordedTree(tree: TreeRecord, graceMs: number, log?: Logger, killer: TreeKiller = treeKiller): Promise<KillReport> {
  return killer.kill(tree, { graceMs, continuouslyOwned: false, cgroupVerified: cgroupVerified(tree), log });
}
