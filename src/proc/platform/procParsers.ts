/**
 * Parsers of the Linux `/proc` files a process is read from: `stat` (identity, state, times, memory), the `Uid:`
 * line of `status`, and one variable of `environ`. Pure text in, values out: the reading is procFiles.ts's.
 */
import { TICKS_PER_SECOND } from './bootClock';
import { ProcessInfo } from './processTable';

const TICK_MS = 1000 / TICKS_PER_SECOND;
/** Error bound of a converted start time: one tick of start time, one tick of uptime, and read jitter. */
export const START_PRECISION_MS = 2 * TICK_MS + 30;

/** Parses the text of `/proc/<pid>/stat`. */
export function parseProcStat(text: string, bootTimeMs: number, pageSize: number): ProcessInfo | undefined {
  // comm may contain spaces and parentheses: it ends at the LAST ')'. The fields after it are walked in place
  // (no split): this runs for every process on every snapshot.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = parseInt(text.slice(0, open), 10);
  const fields: number[] = [];
  let state = '';
  let pos = close + 2;
  for (let i = 0; i <= 21 && pos < text.length; i++) {
    let end = text.indexOf(' ', pos);
    if (end < 0) end = text.length;
    if (i === 0) state = text.slice(pos, end);
    else if (i <= 3 || i === 11 || i === 12 || i === 17 || i === 19 || i === 21) fields[i] = parseInt(text.slice(pos, end), 10);
    pos = end + 1;
  }
  if (fields[21] === undefined || !Number.isFinite(pid)) return undefined;
  const startKey = fields[19];
  return {
    pid,
    ppid: fields[1],
    pgid: fields[2],
    sid: fields[3],
    state,
    startKey,
    startTime: Math.round(bootTimeMs + startKey * TICK_MS),
    uid: -1,
    name: text.slice(open + 1, close),
    rssBytes: fields[21] * pageSize,
    cpuMs: (fields[11] + fields[12]) * TICK_MS,
    threads: fields[17],
  };
}

/**
 * The real uid of a process, from the `Uid:` line of `/proc/<pid>/status`. Not the owner of its /proc files:
 * those belong to root for a non-dumpable process (ssh-agent, gpg-agent) whatever user runs it.
 */
export function parseStatusUid(status: string): number | undefined {
  const m = /^Uid:\s+(\d+)/m.exec(status);
  return m ? Number(m[1]) : undefined;
}

/**
 * Value of `name` in a NUL-separated environment block (the first entry, as getenv reads it), or null.
 * Matching is on the whole name: `X_ID=` is never found in `MY_X_ID=`.
 */
export function envValue(env: Buffer, name: string): string | null {
  const prefix = Buffer.from(name + '=');
  let from = 0;
  for (;;) {
    const at = env.indexOf(prefix, from);
    if (at < 0) return null;
    if (at === 0 || env[at - 1] === 0) {
      let end = env.indexOf(0, at);
      if (end < 0) end = env.length;
      return env.toString('utf8', at + prefix.length, end);
    }
    from = at + 1;
  }
}
