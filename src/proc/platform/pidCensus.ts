/**
 * The pid-wrap census: which pids a census of `/proc` must read again because pid allocation may have come round
 * to them since the previous one (see `LinuxProcessTable.snapshotOfNewcomers`). The kernel hands out pids in
 * turn: ns_last_pid says where it is, the fork count in /proc/stat how far it went.
 */
import * as fs from 'fs';

export interface PidCounters {
  /** Last pid handed out in our pid namespace (/proc/sys/kernel/ns_last_pid). */
  lastPid: number;
  /** Tasks forked since boot, threads included (`processes` in /proc/stat): how many pids were handed out since. */
  forks: number;
  /** Tasks (threads included) holding a pid now (/proc/loadavg): pids that allocation skips. */
  tasks: number;
  pidMax: number;
}

export function readPidCounters(procRoot: string): PidCounters | undefined {
  try {
    const lastPid = Number(fs.readFileSync(`${procRoot}/sys/kernel/ns_last_pid`, 'latin1'));
    const pidMax = Number(fs.readFileSync(`${procRoot}/sys/kernel/pid_max`, 'latin1'));
    const forks = /^processes (\d+)$/m.exec(fs.readFileSync(`${procRoot}/stat`, 'latin1'));
    const load = parseLoadavg(fs.readFileSync(`${procRoot}/loadavg`, 'latin1'));
    if (!forks || !load || !(lastPid >= 0) || !(pidMax > 0)) return undefined;
    return { lastPid, forks: Number(forks[1]), tasks: load.tasks, pidMax };
  } catch {
    return undefined;
  }
}

/**
 * From the text of /proc/loadavg (`0.00 0.45 0.78 1/78 18978`): the tasks (threads included) holding a pid now,
 * and the pid handed out last in the reader's pid namespace, which a process or thread born in it or in a
 * namespace below it moves.
 */
export function parseLoadavg(text: string): { tasks: number; newestPid: number } | undefined {
  const m = /\d+\/(\d+) (\d+)\s*$/.exec(text);
  return m ? { tasks: Number(m[1]), newestPid: Number(m[2]) } : undefined;
}

/** Lowest pid the kernel hands out after wrapping around (RESERVED_PIDS). */
const FIRST_PID_AFTER_WRAP = 300;

/**
 * Which listed pids a census must read again: those pid allocation may have reached since `before`. Pids go out
 * in turn upwards from ns_last_pid, skipping those in use and wrapping at pid_max: unless the forks since, plus
 * the pids it may have skipped, could have taken it all the way round, it reached (from, to] only.
 */
export function censusFilter(before: PidCounters | undefined, now: PidCounters | undefined, everything: boolean): (pid: number) => boolean {
  if (everything || !before || !now || now.pidMax !== before.pidMax) return () => true;
  const handedOut = now.forks - before.forks;
  if (handedOut === 0) return () => false;
  // It skips only pids in use, each held by a task alive before or forked since: it went at most
  // 2 * handedOut + before.tasks pids further.
  if (handedOut < 0 || 2 * handedOut + before.tasks >= now.pidMax - FIRST_PID_AFTER_WRAP) return () => true;
  const from = before.lastPid;
  const to = now.lastPid;
  if (to > from) return (pid) => pid > from && pid <= to;
  if (to < from) return (pid) => pid > from || pid <= to;
  return () => true; // back where it was, with forks in between: all the way round
}
