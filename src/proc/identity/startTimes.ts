/**
 * The start-time proofs a tree's members and a record's times are judged by: whether a group's leader started
 * no later than its tree was tracked, whether a process is a tree's recorded root, and what in a record cannot be
 * true now. In boot ticks where there is a boot clock (Linux, see bootClock.ts), else in epoch ms with the
 * table's error bound.
 */
import { HostClock, hostClock, START_KEYS_ARE_BOOT_TICKS } from '../platform/bootClock';
import { ProcessInfo, provesIdentity, StartPrecision } from '../platform/processTable';
import { START_PRECISION_MS } from '../platform/procParsers';
import { OWNER_CLOCK_SLACK_MS, OwnerInfo, recordOrigin } from './ownerIdentity';

/** The start times a tree is judged by: its root's, and when tracking began (a record's trees carry them). */
export interface TreeTimes {
  rootPid: number;
  /** Root's start time, ms since the epoch (display; the identity is `rootStartTicks`). */
  rootStartTime: number;
  /** When tracking began, ms since the epoch (display; the identity is `trackedAtTicks`). */
  trackedAt: number;
  /** Root's start time in clock ticks since boot (its `/proc/<pid>/stat` start time), where known. */
  rootStartTicks?: number;
  /** Ticks since boot when tracking began; the root started no later. */
  trackedAtTicks?: number;
}

/** What a record says of its owner and its trees' times: what `recordTimeProblem` checks. */
export interface RecordTimes {
  owner: OwnerInfo;
  trees: readonly TreeTimes[];
}

/**
 * Whether `p` (the leader of the tree's process group or session) provably started no later than the tree was
 * tracked, so that the group is the recorded one. In ticks: the recorded root must be exactly itself (same
 * start tick); any other leader must have started no later than the tracking tick. A tree recorded without
 * ticks proves nothing this way on Linux. The caller passes only trees of records from here (`recordOrigin`).
 */
export function startedNoLaterThanTracking(
  p: ProcessInfo,
  tree: TreeTimes,
  bootTicks = START_KEYS_ARE_BOOT_TICKS,
  errorMs = START_PRECISION_MS,
): boolean {
  if (bootTicks) {
    if (p.pid === tree.rootPid && tree.rootStartTicks !== undefined) return p.startKey === tree.rootStartTicks;
    return tree.trackedAtTicks !== undefined && p.startKey <= tree.trackedAtTicks;
  }
  return latestStart(p, errorMs) <= tree.trackedAt;
}

/**
 * The same, by the precision of the table `p` was read from (`StartPrecision`): boot ticks where start keys
 * are ticks (Linux), else epoch times with the table's own error bound counted against `p` (macOS: whole
 * seconds). A table without start times (Windows) proves nothing this way.
 */
export function startedNoLaterThanTrackingBy(precision: StartPrecision, p: ProcessInfo, tree: TreeTimes): boolean {
  if (!provesIdentity(precision)) return false;
  return startedNoLaterThanTracking(p, tree, precision.unit === 'ticks', precision.errorMs);
}

/** Whether `p` is the tree's recorded root: its exact start tick, or (no boot clock) within the rounding. */
export function isRecordedRoot(
  p: ProcessInfo,
  tree: TreeTimes,
  bootTicks = START_KEYS_ARE_BOOT_TICKS,
  errorMs = START_PRECISION_MS,
): boolean {
  if (p.pid !== tree.rootPid) return false;
  if (bootTicks) return tree.rootStartTicks !== undefined && p.startKey === tree.rootStartTicks;
  return Math.abs(p.startTime - tree.rootStartTime) <= 2 * errorMs;
}

/**
 * What in a record cannot be true now: a start or tracking time after "now", a root that started after it
 * was tracked. Such a record was planted or is damaged, and nothing is done on its word. Boot-clock records
 * are checked in ticks (only when from this boot); older ones in epoch ms, against a clock that may itself
 * have stepped back (so a true record can be refused: never the other way round).
 */
export function recordTimeProblem(
  record: RecordTimes,
  clock: HostClock | undefined = hostClock(),
  nowMs = Date.now(),
): TimeProblem | undefined {
  const origin = recordOrigin(record.owner, clock);
  if (origin === 'here') {
    let now: number;
    try {
      now = clock!.nowTicks();
    } catch (e) {
      return {
        unreadable: true,
        message: `the boot clock cannot be read to check its times (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      };
    }
    const impossible = tickProblem(record, now);
    return impossible === undefined ? undefined : { unreadable: false, message: impossible };
  }
  if (origin !== 'no-boot-identity') return undefined; // not compared with anything here
  const impossible = epochProblem(record, nowMs);
  return impossible === undefined ? undefined : { unreadable: false, message: impossible };
}

/**
 * What is wrong with a record's times: impossible ones (`unreadable` false: the record is refused), or the
 * clock to check them could not be read (`unreadable`: nothing is decided, as for an unreadable owner).
 */
export interface TimeProblem {
  unreadable: boolean;
  message: string;
}

function tickProblem(record: RecordTimes, now: number): string | undefined {
  const o = record.owner;
  if (o.startTicks! > now) return `owner.startTicks ${o.startTicks} is after now (${now})`;
  for (const [i, t] of record.trees.entries()) {
    if (t.trackedAtTicks !== undefined) {
      if (t.trackedAtTicks > now) return `trees[${i}].trackedAtTicks ${t.trackedAtTicks} is after now (${now})`;
      if (t.trackedAtTicks < o.startTicks!) return `trees[${i}].trackedAtTicks ${t.trackedAtTicks} is before its owner started`;
      if (t.rootStartTicks !== undefined && t.rootStartTicks > t.trackedAtTicks)
        return `trees[${i}].rootStartTicks is after its trackedAtTicks`;
    } else if (t.rootStartTicks !== undefined && t.rootStartTicks > now) {
      return `trees[${i}].rootStartTicks ${t.rootStartTicks} is after now (${now})`;
    }
  }
  return undefined;
}

function epochProblem(record: RecordTimes, nowMs: number): string | undefined {
  const latest = nowMs + OWNER_CLOCK_SLACK_MS;
  if (record.owner.startTime > latest) return `owner.startTime is in the future`;
  for (const [i, t] of record.trees.entries()) {
    if (t.trackedAt > latest) return `trees[${i}].trackedAt is in the future`;
    if (t.rootStartTime > t.trackedAt + 2 * START_PRECISION_MS) return `trees[${i}].rootStartTime is after its trackedAt`;
  }
  return undefined;
}

/**
 * Latest moment a process may have started, given its converted start time: epoch ms for display and for the
 * epoch fields of a record, where a conversion error may never make a fresh process look older than it is.
 */
export function latestStart(p: ProcessInfo, errorMs = START_PRECISION_MS): number {
  return p.startTime + errorMs;
}
