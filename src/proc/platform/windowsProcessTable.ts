/**
 * The Windows process table, through ps-list (its `fastlist` helper): pid, parent pid, name, command line and
 * memory. It has no start times, so a pid proves nothing on its own here (see `StartPrecision`); and no groups
 * or sessions: each pid is its own.
 */
import { listedSnapshot, ProcessInfo, ProcessTable, Snapshot, StartPrecision } from './processTable';

export interface PsListEntry {
  pid: number;
  ppid: number;
  name: string;
  cmd?: string;
  memory?: number;
}

/** Turns ps-list output into process entries. Windows has no groups or sessions: each pid is its own. */
export function fromPsList(list: PsListEntry[]): Map<number, ProcessInfo> {
  const processes = new Map<number, ProcessInfo>();
  for (const e of list) {
    processes.set(e.pid, {
      pid: e.pid,
      ppid: e.ppid,
      pgid: e.pid,
      sid: e.pid,
      state: 'R',
      startKey: 0,
      startTime: 0,
      uid: -1,
      name: e.name,
      rssBytes: e.memory ?? 0,
      cpuMs: 0,
      command: e.cmd || e.name,
    });
  }
  return processes;
}

/** Windows table: refreshed asynchronously through ps-list (fastlist), served from the last listing. */
export class WindowsProcessTable implements ProcessTable {
  readonly startPrecision: StartPrecision = { unit: 'none', errorMs: Infinity };
  private last = new Map<number, ProcessInfo>();

  constructor(private readonly list: () => Promise<PsListEntry[]> = loadPsList) {}

  async refresh(): Promise<void> {
    const entries = await this.list();
    this.last = fromPsList(entries);
  }

  snapshot(): Snapshot {
    return listedSnapshot(new Map(this.last), this.startPrecision, Date.now());
  }

  read(pid: number): ProcessInfo | undefined {
    return this.last.get(pid);
  }
}

async function loadPsList(): Promise<PsListEntry[]> {
  const { default: psList } = await import('ps-list');
  return psList({ all: true });
}
