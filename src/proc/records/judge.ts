/**
 * Whose record is whose: one look at a records folder sorts every owner's record into our own, a live other
 * owner's, or a gone owner's (an orphan's). The sweep, `ps`, `kill` and the view all ask here (`judgeRecord`),
 * so all apply the same self check (pid and start tick) and the same liveness, origin and trust rules.
 */
import { OwnerInfo, OwnerState, ownerState, PresenceProbe, recordOrigin, sameProcess, selfIdentity } from '../identity/ownerIdentity';
import { recordTimeProblem } from '../identity/startTimes';
import { HostClock, hostClock } from '../platform/bootClock';
import { ProcessTable } from '../platform/processTable';
import { RecordStore } from './claims';
import { OwnerRecord, RecordFile, RecordProblem } from './schema';

export interface OwnerRecords {
  /** Our own record (pid and start tick are ours). */
  own: RecordFile[];
  /** Records of other owners that are alive. */
  live: RecordFile[];
  /** Records of owners that are gone: dead, their pid now a later process's, or of an earlier boot. */
  gone: (RecordFile & { state: 'dead' | 'replaced' | 'earlier-boot' })[];
  /** Records left alone: their owner cannot be judged from here (EMFILE, another pid namespace), and why. */
  undecided: (RecordFile & { why: string })[];
  /** Files that could not be read or trusted, or whose times cannot be true, and what was done with them. */
  problems: RecordProblem[];
}

/** Whether a record's owner is `self`: the same process (pid and start tick, on this boot, in this namespace). */
function isOwnRecord(owner: OwnerInfo, self: OwnerInfo): boolean {
  return sameProcess(owner, self);
}

/** Reads the folder once (changing nothing) and sorts its records by owner. Never throws for a bad record. */
export function classifyRecords(store: RecordStore, self: OwnerInfo, table: ProcessTable): OwnerRecords {
  const out: OwnerRecords = { own: [], live: [], gone: [], undecided: [], problems: [] };
  const { records, problems } = store.list();
  out.problems = problems;
  for (const r of records) {
    if (isOwnRecord(r.record.owner, self)) {
      out.own.push(r);
      continue;
    }
    const v = judgeRecord(r.record, { table, self });
    if (v.act === 'refuse') out.problems.push({ file: r.file, problem: v.problem });
    else if (v.act === 'sweep' || v.act === 'clean-up') out.gone.push({ ...r, state: v.state as 'dead' | 'replaced' | 'earlier-boot' });
    else if (v.live) out.live.push(r);
    else out.undecided.push({ ...r, why: v.why });
  }
  return out;
}

/**
 * What may be done with a record, judged once, for every front end alike (the sweep, `ps`, `kill`, the view):
 *  - 'sweep': its owner is gone; its trees may be killed (each still proven member by member);
 *  - 'clean-up': its owner ran before the last boot; the record may only be removed;
 *  - 'leave': its owner is alive (`live`), or cannot be judged from here;
 *  - 'refuse': its times cannot be true; it is reported and never acted on.
 * `resolvable` says whether its trees may be resolved against this machine's processes at all.
 */
export type Verdict =
  | { act: 'sweep'; why: string; state: OwnerState; resolvable: true }
  | { act: 'clean-up'; why: string; state: OwnerState; resolvable: false }
  | { act: 'leave'; why: string; live: boolean; state?: OwnerState; resolvable?: boolean }
  | { act: 'refuse'; problem: string; resolvable: false };

export const OWNER_GONE: Record<OwnerState, string> = {
  dead: 'is gone',
  replaced: 'is gone (its pid now belongs to a later process)',
  'earlier-boot': 'ran before the last boot',
  alive: 'is alive',
  unknown: 'cannot be judged',
};

export function judgeRecord(
  record: OwnerRecord,
  here: { table: ProcessTable & PresenceProbe; self: OwnerInfo; clock?: HostClock },
): Verdict {
  const { table, self } = here;
  const clock = 'clock' in here ? here.clock : hostClock();
  const owner = record.owner;
  if (sameProcess(owner, self)) return { act: 'leave', why: 'our own record', live: true, state: 'alive', resolvable: true };
  const bad = recordTimeProblem(record, clock);
  if (bad?.unreadable) return { act: 'leave', why: `its times cannot be checked: ${bad.message}`, live: false, resolvable: false };
  if (bad) return { act: 'refuse', problem: `impossible times (${bad.message}): not trusted, left in place`, resolvable: false };
  const state = ownerState(table, owner, clock);
  if (state === 'dead' || state === 'replaced')
    return { act: 'sweep', why: `owner ${owner.pid} ${OWNER_GONE[state]}`, state, resolvable: true };
  if (state === 'earlier-boot') return { act: 'clean-up', why: `owner ${owner.pid} ${OWNER_GONE[state]}`, state, resolvable: false };
  if (state === 'alive') return { act: 'leave', why: 'its owner is alive', live: true, state, resolvable: true };
  const origin = recordOrigin(owner, clock);
  const why =
    origin === 'elsewhere'
      ? 'recorded in another pid namespace or on another machine: not ours to judge'
      : origin === 'no-boot-identity'
        ? `an older version's record (no boot-clock identity) whose owner pid ${owner.pid} is in use or cannot be read`
        : `whether owner ${owner.pid} still runs cannot be read`;
  return { act: 'leave', why, live: false, state, resolvable: origin !== 'elsewhere' };
}

/** What a front end may do with a record's trees: the sweep's own verdict, so the rules are one. */
export function recordStanding(table: ProcessTable, record: OwnerRecord): { state: OwnerState; note?: string; resolvable: boolean } {
  const v = judgeRecord(record, { table, self: selfIdentity(table) });
  const state = v.act === 'refuse' ? 'unknown' : (v.state ?? 'unknown');
  if (v.act === 'refuse') return { state, note: v.problem, resolvable: false };
  if (v.act === 'clean-up') return { state, note: 'recorded before the last boot: nothing of it runs', resolvable: false };
  return { state, note: v.resolvable ? undefined : v.why, resolvable: v.resolvable === true };
}
