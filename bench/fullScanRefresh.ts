/**
 * The baseline the view's tracked refresh is measured against: the refresh as the view ran it before member
 * tracking. When every tree has its own verified cgroup and nothing else is asked, only the cgroups' processes are
 * read; otherwise one full snapshot serves everything, resolved by the core's own rules (`listMembers`). It lives
 * here, not in the product: nothing but the benchmark refreshes this way.
 */
import { ProcessTable } from '../src/proc/platform/processTable';
import { ListingDeps, listMembers, MemberListing, TreeQuery, ViewExtras } from '../src/proc/tracking/listing';

export function fullScanRefresh(table: ProcessTable, trees: TreeQuery[], deps: ListingDeps, extras: ViewExtras = {}): MemberListing {
  const needsAll = (extras.terminals?.shells.length ?? 0) > 0 || (extras.liveRecords?.length ?? 0) > 0;
  if (trees.length === 0 && !needsAll) return { takenAt: Date.now(), processCount: 0, trees: [], terminals: [], windowRecords: [] };
  if (!needsAll && table.snapshotOf && trees.length > 0 && trees.every((t) => t.cgroup && t.cgroupVerified)) {
    const perTree = trees.map((t) => ({ id: t.id, pids: new Set(deps.cgroups.procs(t.cgroup!)) }));
    const snap = table.snapshotOf(perTree.flatMap((t) => [...t.pids]));
    return {
      takenAt: snap.takenAt,
      processCount: snap.processes.size,
      trees: perTree.map((t) => ({
        id: t.id,
        members: [...snap.processes.values()].filter((p) => t.pids.has(p.pid)).map((p) => ({ ...p, command: snap.commandLine(p.pid) })),
      })),
      terminals: [],
      windowRecords: [],
    };
  }
  return { ...listMembers(table.snapshot(), trees, deps, { extras }), fullScan: true };
}
