/**
 * Process identity: a pid names a process only together with its start time, on one boot, in one pid
 * namespace, since pids are reused.
 *
 * On Linux every comparison is in clock ticks since boot (see bootClock.ts): exact, and blind to wall-clock
 * steps. A record written by an older version has only epoch milliseconds; those are never compared with the
 * clock (a step of a few seconds made a live owner look replaced, a step back made a fresh process look
 * older than a record), so such a record's owner counts as dead only once its pid is gone, and its trees are
 * reached only through their tag and cgroup, never through a pid or group id on the strength of a time.
 * macOS and Windows have no boot clock here and keep the epoch rules with their slack.
 */
import * as fs from 'fs';
import { HostClock, hostClock, START_KEYS_ARE_BOOT_TICKS } from './platform/bootClock';
import { ProcessInfo, ProcessTable, provesIdentity, StartPrecision } from './platform/processTable';
import { parseProcStat, START_PRECISION_MS } from './platform/procParsers';
import type { OwnerInfo, OwnerRecord, TreeRecord } from './records';

/** Clock slack when comparing epoch start times taken at different moments (platforms without a boot clock). */
export const OWNER_CLOCK_SLACK_MS = 2000;

/** Our own identity, as records and claim names carry it. */
export function selfIdentity(table: ProcessTable, clock: HostClock | undefined = hostClock()): OwnerInfo {
  const me = safeRead(table, process.pid);
  const self: OwnerInfo = { pid: process.pid, startTime: me?.startTime ?? Date.now() };
  if (clock && clock.procIsOurs && me && START_KEYS_ARE_BOOT_TICKS) {
    self.startTicks = me.startKey;
    self.bootId = clock.bootId;
    self.pidNs = clock.pidNs;
    self.machineId = clock.machineId;
  }
  return self;
}

/** Whether a record's owner carries a full boot-clock identity (written by this version on Linux). */
export function hasBootIdentity(o: OwnerInfo): o is OwnerInfo & Required<Pick<OwnerInfo, 'startTicks' | 'bootId' | 'pidNs' | 'machineId'>> {
  return o.startTicks !== undefined && o.bootId !== undefined && o.pidNs !== undefined && o.machineId !== undefined;
}

/** Whether two identities are provably one process: same boot, namespace, pid and start tick. */
export function sameProcess(a: OwnerInfo, b: OwnerInfo): boolean {
  if (hasBootIdentity(a) && hasBootIdentity(b)) {
    return a.pid === b.pid && a.startTicks === b.startTicks && a.bootId === b.bootId && a.pidNs === b.pidNs && a.machineId === b.machineId;
  }
  if (START_KEYS_ARE_BOOT_TICKS) return false; // one of them lacks a boot identity: not provably the same
  return a.pid === b.pid && Math.abs(a.startTime - b.startTime) <= OWNER_CLOCK_SLACK_MS;
}

/**
 * Where a record comes from, as far as its identities can be compared here:
 *  - 'here': this machine, this boot, this pid namespace (ticks comparable);
 *  - 'earlier-boot': this machine, another boot: none of its processes runs any more;
 *  - 'elsewhere': another machine (a shared home folder) or another pid namespace: not ours to judge;
 *  - 'no-boot-identity': an older writer's record (epoch times only), or we have no boot clock.
 */
export type RecordOrigin = 'here' | 'earlier-boot' | 'elsewhere' | 'no-boot-identity';

export function recordOrigin(owner: OwnerInfo, clock: HostClock | undefined = hostClock()): RecordOrigin {
  if (!clock || !hasBootIdentity(owner)) return 'no-boot-identity';
  // One boot id is one kernel, so one machine; another boot id is an earlier boot only on the same machine.
  if (owner.bootId === clock.bootId) return owner.pidNs === clock.pidNs ? 'here' : 'elsewhere';
  return owner.machineId === clock.machineId ? 'earlier-boot' : 'elsewhere';
}

/**
 * 'alive', 'dead' (pid gone, or only a zombie left), 'replaced' (the pid now belongs to a later process),
 * 'unknown' (cannot tell: unreadable /proc, EMFILE, an older writer's record whose pid is held by someone, a
 * record from elsewhere), or 'earlier-boot'. Only 'dead', 'replaced' and 'earlier-boot' let a sweep act: a
 * missed reap can be retried, a wrong kill cannot be undone.
 */
export type OwnerState = 'alive' | 'dead' | 'replaced' | 'unknown' | 'earlier-boot';

/**
 * A table that can tell "gone" from "could not look" for one pid. Optional: without it, a pid the table does
 * not answer for is asked of the kernel directly (kill(pid, 0), then `/proc/<pid>/stat`). Test tables give it.
 */
export interface PresenceProbe {
  probe?(pid: number): ProcessInfo | 'gone' | 'unreadable';
}

export function ownerState(table: ProcessTable & PresenceProbe, owner: OwnerInfo, clock: HostClock | undefined = hostClock()): OwnerState {
  const origin = recordOrigin(owner, clock);
  if (origin === 'earlier-boot') return 'earlier-boot';
  if (origin === 'elsewhere') return 'unknown';
  if (clock && !clock.procIsOurs) return 'unknown'; // every pid read from this /proc is someone else's
  const seen = lookUp(table, owner.pid);
  if (seen === 'unreadable') return 'unknown';
  if (seen === 'gone') return 'dead';
  if (origin === 'here') {
    if (seen.startKey === owner.startTicks) return 'alive';
    // A process cannot have taken the pid before the owner, which held it from its start to its end.
    return seen.startKey > owner.startTicks! ? 'replaced' : 'unknown';
  }
  if (START_KEYS_ARE_BOOT_TICKS || !(seen.startTime > 0)) return 'unknown'; // held by someone: who, cannot be told
  return seen.startTime > owner.startTime + OWNER_CLOCK_SLACK_MS ? 'replaced' : 'alive';
}

/**
 * One process as the table sees it, telling "gone" (or a zombie) from "could not look": a table's `read`
 * answers undefined for both, and under EMFILE a live process must not pass for a dead one.
 */
function lookUp(table: ProcessTable & PresenceProbe, pid: number): ProcessInfo | 'gone' | 'unreadable' {
  try {
    if (table.probe) return table.probe(pid);
    return table.read(pid) ?? pidPresence(pid);
  } catch {
    return 'unreadable';
  }
}

/**
 * Asks the kernel directly whether `pid` exists and what it is; used when the table had no answer. The one
 * stat parser reads it; only its start key and state are used (its epoch start time is not set).
 */
function pidPresence(pid: number): ProcessInfo | 'gone' | 'unreadable' {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return 'unreadable';
  }
  if (process.platform !== 'linux') return 'unreadable'; // exists (perhaps a zombie): cannot tell which
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH' ? 'gone' : 'unreadable';
  }
  const p = parseProcStat(text, 0, 0);
  if (!p) return 'unreadable';
  return p.state === 'Z' || p.state === 'X' ? 'gone' : p;
}

function safeRead(table: ProcessTable, pid: number): ProcessInfo | undefined {
  try {
    return table.read(pid);
  } catch {
    return undefined;
  }
}

/** The start times a tree is judged by. */
export type TreeTimes = Pick<TreeRecord, 'rootPid' | 'rootStartTime' | 'trackedAt' | 'rootStartTicks' | 'trackedAtTicks'>;

/**
 * Whether `p` (the leader of the tree's process group or session) provably started no later than the tree was
 * tracked, so that the group is the recorded one. In ticks: the recorded root must be exactly itself (same
 * start tick); any other leader must have started no later than the tracking tick. A tree recorded without
 * ticks proves nothing this way on Linux. The caller passes only trees of records from here (`recordOrigin`).
 */
export function startedNoLaterThanTracking(p: ProcessInfo, tree: TreeTimes, bootTicks = START_KEYS_ARE_BOOT_TICKS, errorMs = START_PRECISION_MS): boolean {
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
export function isRecordedRoot(p: ProcessInfo, tree: TreeTimes, bootTicks = START_KEYS_ARE_BOOT_TICKS, errorMs = START_PRECISION_MS): boolean {
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
  record: OwnerRecord,
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

function tickProblem(record: OwnerRecord, now: number): string | undefined {
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

function epochProblem(record: OwnerRecord, nowMs: number): string | undefined {
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
