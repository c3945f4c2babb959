/**
 * Members of several trees in one snapshot, as plain data (what the tree view shows). The same function runs
 * on the caller's thread or in a worker (snapshotWorker.ts) when the process table is large.
 */
import { cgroupProcs } from './cgroup';
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

/**
 * When every tree has its own verified cgroup, its members are exactly the cgroup's processes (no member can
 * leave it), so only those are read: no scan of the whole table. Otherwise one full snapshot serves all trees.
 */
export function membersOfTrees(table: ProcessTable, trees: TreeQuery[]): TreesMembers {
  if (table.snapshotOf && trees.length > 0 && trees.every((t) => t.cgroup && t.cgroupVerified)) {
    const perTree = trees.map((t) => ({ id: t.id, pids: new Set(cgroupProcs(t.cgroup!)) }));
    const snap = table.snapshotOf(perTree.flatMap((t) => [...t.pids]));
    return {
      takenAt: snap.takenAt,
      processCount: snap.processes.size,
      trees: perTree.map((t) => ({
        id: t.id,
        members: [...snap.processes.values()].filter((p) => t.pids.has(p.pid)).map((p) => ({ ...p, command: snap.commandLine(p.pid) })),
      })),
    };
  }
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
