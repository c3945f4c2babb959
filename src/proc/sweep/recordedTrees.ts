/**
 * Queries on the recorded trees of every owner (live or gone) in a records folder: what `agent-trees ps` lists
 * and what `agent-trees kill TREE_ID` ends. A front end that does not own the trees uses these and nothing
 * below. What may be done with a record is the sweep's own verdict (`judgeRecord`), so the rules are one.
 */
import { BudgetUse } from '../budget/limits';
import { MemoryGauge } from '../budget/memoryUse';
import { CgroupMode, CgroupProber } from '../cgroup/probe';
import { cgroupVerified } from '../cgroup/treeCgroup';
import { OwnerInfo, OwnerState, ownerState, sameProcess, selfIdentity } from '../identity/ownerIdentity';
import { KillReport } from '../kill/killTarget';
import { killRecordedTree, TreeKiller } from '../kill/treeKiller';
import { MemberDeps } from '../members/membership';
import { resolveTreeMembers } from '../members/treeMembers';
import { hostClock } from '../platform/bootClock';
import { freshProcessTable } from '../platform/createProcessTable';
import { Logger } from '../platform/log';
import { readPssBytes } from '../platform/procFiles';
import { ProcessInfo, ProcessTable } from '../platform/processTable';
import { RecordStore } from '../records/claims';
import { recordStanding } from '../records/judge';
import { OwnerRecord, RecordProblem, TreeRecord } from '../records/schema';

/** What the queries read and kill through: the table, the guard and cgroups, where ours live, the killer (see core.ts). */
export type RecordedTreesParts = MemberDeps & {
  table: ProcessTable;
  cgroupProber: Pick<CgroupProber, 'location'>;
  killer: Pick<TreeKiller, 'kill'>;
};

export interface ListedMember extends Pick<ProcessInfo, 'pid' | 'ppid' | 'pgid' | 'state' | 'rssBytes' | 'cpuMs'> {
  command: string;
}

export interface ListedTree extends TreeRecord {
  tier: 'cgroup' | 'group';
  members: ListedMember[];
  /** Where a tree with limits stands against them now: its members' PSS (RSS where unreadable), count. */
  use?: BudgetUse;
}

export interface ListedOwner {
  file: string;
  owner: OwnerInfo & { alive: boolean; state: OwnerState };
  /** Why its trees are not resolved, or what else is to know about it. */
  note?: string;
  trees: ListedTree[];
  /** An extension host's record of its other extensions' processes (ended once it is gone), if it keeps one. */
  hostProcesses?: OwnerRecord['hostProcesses'];
}

/** A claim in the folder: a sweep at work on an owner's record, or one its sweeper left when it died. */
export interface ListedClaim {
  file: string;
  ownerPid: number;
  /** Its sweeper: 'alive' means the sweep is in progress; gone, the next sweep takes the claim over. */
  claimant: OwnerInfo & { state: OwnerState };
  /** Why it is no claim a sweep can take over (a FIFO, a folder, another user's file): it is left in place. */
  problem?: string;
}

/**
 * Every recorded tree with its live members, and the claims in progress, read-only: nothing is claimed,
 * renamed, deleted or signalled.
 */
export async function listOwnedTrees(
  store: RecordStore,
  core: RecordedTreesParts,
  cgroups: CgroupMode = 'auto',
): Promise<{ owners: ListedOwner[]; problems: RecordProblem[]; claims: ListedClaim[] }> {
  const table = await freshProcessTable(core.table);
  const snap = table.snapshot();
  const { records, problems } = store.list();
  const claims = store
    .claims(hostClock())
    .map((c): ListedClaim => ({ ...c, claimant: { ...c.claimant, state: ownerState(table, c.claimant) } }));
  const owners = records.map(({ file, record }): ListedOwner => {
    const standing = recordStanding(table, record);
    const alive = standing.state === 'alive';
    return {
      file,
      owner: { ...record.owner, alive, state: standing.state },
      note: standing.note,
      ...(record.hostProcesses ? { hostProcesses: record.hostProcesses } : {}),
      trees: record.trees.map((t): ListedTree => {
        const verified = cgroups !== 'off' && cgroupVerified(t, core);
        const members = standing.resolvable
          ? resolveTreeMembers(t, snap, { continuouslyOwned: alive, cgroupVerified: verified }, core).members
          : [];
        return {
          ...t,
          tier: t.cgroup ? 'cgroup' : 'group',
          use: t.limits ? { processes: members.length, memory: new MemoryGauge(readPssBytes).measure(members, 0, true) } : undefined,
          members: members.map((p) => ({
            pid: p.pid,
            ppid: p.ppid,
            pgid: p.pgid,
            state: p.state,
            rssBytes: p.rssBytes,
            cpuMs: p.cpuMs,
            command: snap.commandLine(p.pid),
          })),
        };
      }),
    };
  });
  return { owners, problems, claims };
}

export type KillByIdResult =
  { outcome: 'killed'; report: KillReport } | { outcome: 'not-found'; problems: RecordProblem[] } | { outcome: 'refused'; why: string };

/**
 * Kills one recorded tree by its id, whoever owns it (its owner, alive or not, is not the caller: every proof
 * is made afresh). When the owner is gone and nothing of the tree is left, the tree is taken out of its record,
 * since nobody else will.
 */
export async function killTreeById(
  store: RecordStore,
  treeId: string,
  options: { graceMs: number; log?: Logger },
  core: RecordedTreesParts,
): Promise<KillByIdResult> {
  const table = core.table;
  const { records, problems } = store.list();
  const found = records.find(({ record }) => record.trees.some((t) => t.id === treeId));
  if (!found) return { outcome: 'not-found', problems };
  const tree = found.record.trees.find((t) => t.id === treeId)!;
  const standing = recordStanding(table, found.record);
  if (!standing.resolvable) return { outcome: 'refused', why: standing.note ?? 'its record cannot be acted on' };
  const report = await killRecordedTree(core, tree, options.graceMs, options.log);
  if ((standing.state === 'dead' || standing.state === 'replaced') && report.survivors === 0 && report.refused.length === 0) {
    dropFromDeadOwnersRecord(store, table, found.record, tree.id);
  }
  return { outcome: 'killed', report };
}

/**
 * Nobody else will update a dead owner's record: take the killed tree out of it. Claimed first, and the claimed
 * content judged again, so a record its owner rewrote meanwhile (or a new owner with that pid) is given back.
 */
function dropFromDeadOwnersRecord(store: RecordStore, table: ProcessTable, record: OwnerRecord, treeId: string): void {
  const self = selfIdentity(table);
  const file = store.claim(record.owner.pid, self);
  if (!file) return;
  let claimed: OwnerRecord;
  try {
    claimed = store.readClaim(file);
  } catch {
    return; // left in place: a sweep reports it
  }
  const state = ownerState(table, claimed.owner);
  if (!sameProcess(claimed.owner, record.owner) || (state !== 'dead' && state !== 'replaced')) {
    store.restoreClaim(file, claimed, sameProcess, state === 'alive');
    return;
  }
  store.finishClaim(
    file,
    claimed,
    claimed.trees.filter((t) => t.id !== treeId),
    self,
  );
}
