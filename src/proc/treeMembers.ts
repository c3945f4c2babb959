/**
 * Members of several trees in one snapshot, as plain data (what the tree view shows). The same function runs
 * on the caller's thread or in a worker (snapshotWorker.ts) when the process table is large.
 */
import { resolveMembers, TreeIdentity } from './members';
import { ProcessInfo, ProcessTable } from './processTable';

export interface MemberInfo extends ProcessInfo {
  command: string;
}

export interface TreesMembers {
  takenAt: number;
  /** Processes on the machine: decides whether the next snapshot runs in a worker. */
  processCount: number;
  trees: { id: string; members: MemberInfo[] }[];
}

export interface TreeQuery extends TreeIdentity {
  /** Trees the asker spawned and has owned ever since (see ResolveOptions.continuouslyOwned). */
  continuouslyOwned: boolean;
  cgroupVerified: boolean;
}

export function membersOfTrees(table: ProcessTable, trees: TreeQuery[]): TreesMembers {
  const snap = table.snapshot();
  return {
    takenAt: snap.takenAt,
    processCount: snap.processes.size,
    trees: trees.map((t) => ({
      id: t.id,
      members: resolveMembers(t, snap, t).members.map((p) => ({ ...p, command: snap.commandLine(p.pid) })),
    })),
  };
}
