/**
 * Which live processes are a process's subtree: the process itself (only while it still is the one that started
 * at its start key) and every descendant of it, never a group. For "Kill Process and Its Children" and for what a
 * closed terminal left running.
 */
import { SignalGuard } from '../identity/guard';
import { ProcessIdentity } from '../identity/processIdentity';
import { ProcessInfo, Snapshot } from '../platform/processTable';
import { Membership, watchdogsIn, withDescendants } from './membership';

/**
 * These processes (each only while it still is the one that started at its start key) and all their
 * descendants, never a `spared` pid (nor anything reached only through it), never a protected process and never
 * an owner's watchdog (see `watchdogsIn`).
 * Never a group: each member is proven by its own identity or its parent link.
 */
export function resolveSubtreeMembers(
  snap: Snapshot,
  roots: ProcessIdentity[],
  deps: { guard: Pick<SignalGuard, 'protectedReason'> },
  spared: number[] = [],
): Membership {
  const sparedPids = new Set(spared);
  const watchdogs = watchdogsIn(snap, snap.startPrecision.unit === 'ticks' ? Math.min(...roots.map((r) => r.startKey)) : 0);
  const excluded: string[] = [];
  const isProtected = (p: ProcessInfo) => {
    if (sparedPids.has(p.pid)) return true;
    const why = p.pid <= 1 ? `pid ${p.pid}` : (watchdogs.get(p.pid)?.why ?? deps.guard.protectedReason(p));
    if (why) excluded.push(why);
    return why !== undefined;
  };
  const seeds = new Map<number, ProcessInfo>();
  for (const r of roots) {
    const p = snap.processes.get(r.pid);
    if (p && p.startKey === r.startKey && !isProtected(p)) seeds.set(p.pid, p);
  }
  return { members: [...withDescendants(seeds, snap, isProtected).values()], groupProven: false, inCgroup: 0, excluded };
}
