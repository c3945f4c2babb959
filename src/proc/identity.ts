/**
 * Process identity: a pid names a process only together with its start time, since pids are reused.
 */
import * as fs from 'fs';
import { ProcessInfo, ProcessTable, START_PRECISION_MS } from './processTable';

/** Clock slack when comparing start times taken at different moments (wall-clock adjustments, rounding). */
export const OWNER_CLOCK_SLACK_MS = 2000;

/** True when `pid` is alive (not a zombie) and is the very process whose exact start key is `startKey`. */
export function isSameProcess(table: ProcessTable, pid: number, startKey: number): boolean {
  const p = table.read(pid);
  return p !== undefined && p.startKey === startKey;
}

export type OwnerState = 'alive' | 'dead' | 'replaced';

/**
 * Whether the owner recorded as (pid, startTime ms) still runs. A pid that is gone, or now belongs to a process
 * started later than the recorded one (beyond the clock slack), means the owner is gone. When the start time
 * cannot be read the owner counts as alive: a missed reap can be retried, a wrong kill cannot be undone.
 */
export function ownerState(table: ProcessTable, pid: number, startTime: number): OwnerState {
  let p: ProcessInfo | undefined;
  try {
    p = table.read(pid);
  } catch {
    return 'alive';
  }
  if (!p) return pidExists(pid) ? 'alive' : 'dead';
  if (!(p.startTime > 0)) return 'alive'; // platform without start times
  return p.startTime > startTime + OWNER_CLOCK_SLACK_MS ? 'replaced' : 'alive';
}

/** kill(pid, 0): true if the pid exists (zombies included) or exists but belongs to someone we may not signal. */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !isZombieOrGone(pid);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isZombieOrGone(pid: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return true;
  }
}

/**
 * Latest moment a process may have started, given its converted start time. Used wherever "started no later
 * than T" must hold: a conversion error may never make a fresh process look older than it is.
 */
export function latestStart(p: ProcessInfo): number {
  return p.startTime + START_PRECISION_MS;
}

/** Earliest moment a process may have started. */
export function earliestStart(p: ProcessInfo): number {
  return p.startTime - START_PRECISION_MS;
}
