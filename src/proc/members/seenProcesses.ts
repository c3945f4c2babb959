/**
 * Processes seen before as members of something (a terminal's tree, an extension host's children), named by their
 * `pid:startKey` keys: each counts again only while it is still that very process, even after it left the parent
 * chain it was found through (a `setsid -f` daemon whose parent exited). A pid alone would not do: pids are reused.
 */
import { parseProcessKey } from '../identity/processIdentity';
import { ProcessInfo, Snapshot } from '../platform/processTable';

/** The processes of `snap` that `keys` name, each still the process seen (same pid and start key); never a `skip` key. */
export function stillSeen(snap: Snapshot, keys: Iterable<string>, skip?: ReadonlySet<string>): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const key of keys) {
    if (skip?.has(key)) continue;
    const k = parseProcessKey(key);
    const p = k && snap.processes.get(k.pid);
    if (p && p.startKey === k.startKey) out.push(p);
  }
  return out;
}

/** The pids `keys` name (where to look for those processes in a snapshot of some processes only). */
export function seenPids(keys: Iterable<string>): number[] {
  const out: number[] = [];
  for (const key of keys) {
    const k = parseProcessKey(key);
    if (k) out.push(k.pid);
  }
  return out;
}
