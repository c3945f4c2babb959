/**
 * Whose each of an extension host's processes is, by lineage: a child of the host is attributed by what it runs
 * (attribution.ts), and everything beneath it is that extension's too. Once known, a process keeps its owner even
 * after its parent exited and it left the chain ("left by an exited process"). And which of them the host's record
 * names: the long-lived ones (a `git status` a second old would only churn the record).
 */
import { processKey } from '../identity/processIdentity';
import { ProcessInfo } from '../platform/processTable';
import { SeenHostProcess } from '../records/schema';

/** A process younger than this is not recorded (and a host child this young not shown): most are gone by then. */
export const LONG_LIVED_MS = 2000;

/** Whose one process is, and how it hangs from the host. */
export interface HostProcessPlace {
  extensionId: string;
  /** The key of the topmost process of its chain among the host's processes (the host's child, while attached). */
  topKey: string;
  /** Its chain no longer reaches the host: the process it descends from exited ("left by an exited process"). */
  left: boolean;
}

/**
 * Places every member: the top of its chain (walking up parent links among `members`), whether that top is still
 * the host's child, and whose it is: what `remembered` says of it, else what its top is, else `attribute(top)`.
 * Returns the places by key; `remembered` is what the caller keeps from one look to the next.
 */
export function placeHostProcesses<P extends ProcessInfo>(
  members: P[],
  hostPid: number,
  remembered: ReadonlyMap<string, string>,
  attribute: (top: P) => string,
): Map<string, HostProcessPlace> {
  const byPid = new Map(members.map((p) => [p.pid, p]));
  const topOf = (p: P): P => {
    const visited = new Set<number>();
    let q = p;
    for (let parent = byPid.get(q.ppid); parent && !visited.has(parent.pid); parent = byPid.get(q.ppid)) {
      visited.add(q.pid);
      q = parent;
    }
    return q;
  };
  const places = new Map<string, HostProcessPlace>();
  const whoseTop = new Map<string, string>();
  for (const p of members) {
    const top = topOf(p);
    const topKey = processKey(top);
    let topId = whoseTop.get(topKey);
    if (topId === undefined) {
      topId = remembered.get(topKey) ?? attribute(top);
      whoseTop.set(topKey, topId);
    }
    places.set(processKey(p), { extensionId: remembered.get(processKey(p)) ?? topId, topKey, left: top.ppid !== hostPid });
  }
  return places;
}

/**
 * What the host's record names of `members`: those that have run for LONG_LIVED_MS at `takenAt`, whoever's but
 * `skip` (Agent Trees' own), in pid order so that an unchanged set compares equal.
 */
export function recordedHostProcesses(
  members: ProcessInfo[],
  places: ReadonlyMap<string, HostProcessPlace>,
  at: { takenAt: number; skip: string },
): SeenHostProcess[] {
  const out: SeenHostProcess[] = [];
  for (const p of members) {
    const place = places.get(processKey(p));
    if (!place || place.extensionId === at.skip || at.takenAt - p.startTime < LONG_LIVED_MS) continue;
    out.push({ pid: p.pid, startTicks: p.startKey, extensionId: place.extensionId });
  }
  return out.sort((a, b) => a.pid - b.pid);
}
