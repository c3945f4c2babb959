/**
 * The macOS process table: one `ps` call per snapshot (and per single read). `ps lstart` gives start times to
 * the second, so a start key is whole seconds: a pid reused within the same second cannot be told apart.
 */
import { execFileSync } from 'child_process';
import { listedSnapshot, ProcessInfo, ProcessTable, Snapshot, StartPrecision } from './processTable';

const MAC_PS_ARGS = ['-axww', '-o', 'pid=,ppid=,pgid=,sess=,state=,uid=,rss=,time=,lstart=,command='];

/**
 * Parses `ps -axww -o pid=,ppid=,pgid=,sess=,state=,uid=,rss=,time=,lstart=,command=` (macOS).
 * `lstart` is like `Mon Nov 30 10:00:01 2026` (1 s resolution); the command runs to the end of the line.
 * Exported so it can be tested on recorded output.
 */
export function parseMacPs(output: string): Map<number, ProcessInfo> {
  const processes = new Map<number, ProcessInfo>();
  const re = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\w{3} \w{3}\s+\d+ [\d:]{8} \d{4})\s(.*)$/;
  for (const line of output.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const state = m[5][0];
    if (state === 'Z' || state === 'X') continue;
    const start = Date.parse(m[9].replace(/\s+/g, ' '));
    const pid = Number(m[1]);
    const command = m[10].trim();
    processes.set(pid, {
      pid,
      ppid: Number(m[2]),
      pgid: Number(m[3]),
      sid: Number(m[4]),
      state,
      startKey: start / 1000,
      startTime: start,
      uid: Number(m[6]),
      name: command.split(' ')[0].split('/').pop() ?? '',
      rssBytes: Number(m[7]) * 1024,
      cpuMs: parseCpuTime(m[8]),
      command,
    });
  }
  return processes;
}

/** `ps` TIME: `[[dd-]hh:]mm:ss[.cc]`. */
export function parseCpuTime(text: string): number {
  const [days, rest] = text.includes('-') ? text.split('-') : ['0', text];
  const parts = rest.split(':').map(Number);
  let seconds = 0;
  for (const part of parts) seconds = seconds * 60 + part;
  return (Number(days) * 86400 + seconds) * 1000;
}

export type ExecFileSync = (file: string, args: string[]) => string;
const defaultExec: ExecFileSync = (file, args) =>
  execFileSync(file, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 10_000, windowsHide: true });

/** `lstart` is truncated to the second: the true start lies up to 1 s after it, plus read jitter. */
export const MAC_START_PRECISION: StartPrecision = { unit: 'seconds', errorMs: 1000 + 30 };

export class MacProcessTable implements ProcessTable {
  readonly startPrecision = MAC_START_PRECISION;

  constructor(private readonly exec: ExecFileSync = defaultExec) {}

  snapshot(): Snapshot {
    const takenAt = Date.now();
    const processes = parseMacPs(this.exec('/bin/ps', MAC_PS_ARGS));
    // macOS shows another process's environment only through `ps -E`, and only partly: no tag tier there.
    return listedSnapshot(processes, this.startPrecision, takenAt);
  }

  read(pid: number): ProcessInfo | undefined {
    let out: string;
    try {
      out = this.exec('/bin/ps', ['-p', String(pid), ...MAC_PS_ARGS.slice(1)]);
    } catch {
      return undefined; // ps exits 1 when the pid is gone
    }
    return parseMacPs(out).get(pid);
  }
}
