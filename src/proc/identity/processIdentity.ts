/**
 * A process named by its pid and its exact start key: a pid alone names a process only while it runs (pids are
 * reused), with its start key for as long as it runs. Its text form, `pid:startKey`, names it in keys (a
 * terminal's shell, the processes seen as a terminal's) and in the watchdog's `--owner` argument.
 */

/** A process named by pid and its exact, boot-relative start key (clock ticks since boot on Linux). */
export interface ProcessIdentity {
  pid: number;
  startKey: number;
}

/** `pid:startKey`: a process's name for as long as it runs (pids are reused, start keys are not). */
export function processKey(p: ProcessIdentity): string {
  return `${p.pid}:${p.startKey}`;
}

/** Parses a `pid:startKey` key this program wrote. */
export function parseProcessKey(key: string): ProcessIdentity | undefined {
  const m = /^(\d+):(\d+(?:\.\d+)?)$/.exec(key);
  return m ? { pid: Number(m[1]), startKey: Number(m[2]) } : undefined;
}

/** Parses `PID:START_KEY` given on a command line; undefined when it is not two non-negative integers (the pid positive). */
export function parseOwnerSpec(text: string): ProcessIdentity | undefined {
  const m = /^(\d{1,10}):(\d{1,20})$/.exec(text);
  if (!m) return undefined;
  const pid = Number(m[1]);
  const startKey = Number(m[2]);
  if (!(pid > 0) || !Number.isSafeInteger(pid) || !Number.isSafeInteger(startKey)) return undefined;
  return { pid, startKey };
}
