/**
 * A tree's cgroup at a glance, for a watch that looks once a second: the processes directly in it (`cgroup.procs`)
 * and the CPU time everything in it and below it has used (`cpu.stat`'s `usage_usec`, which cgroup v2 keeps for
 * every cgroup, whether or not the cpu controller is enabled). Two reads through files kept open, however many
 * processes the tree has: where neither moved since the last look, no process in the cgroup ran, so none forked,
 * exited or exec'd (its memory can still grow: khugepaged, or another process writing into it; see
 * budget/budgetWatch.ts).
 */
import * as path from 'path';
import { OpenProcFiles } from '../platform/procFiles';

export interface CgroupActivity {
  /** The processes directly in the cgroup (not in cgroups below it), in the kernel's order. */
  pids: number[];
  /** CPU time used in the cgroup and below it since it was made, µs. */
  cpuUsec: number;
}

/** Reads cgroups' activity; `close()` releases the files it keeps open. */
export interface CgroupActivitySource {
  /** Undefined when the cgroup is gone or a file cannot be read (or lists more than fits one read). */
  read(cgroupDir: string): CgroupActivity | undefined;
  /**
   * Closes what it keeps open of one cgroup, no longer to be read: an open file of a removed cgroup keeps it
   * among the dying (`nr_dying_descendants`) until it is closed.
   */
  forget(cgroupDir: string): void;
  close(): void;
}

/** Parses `cpu.stat`: its `usage_usec` line, or undefined. */
export function parseCpuUsage(text: string): number | undefined {
  const m = /^usage_usec (\d+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Parses `cgroup.procs`: one pid per line; undefined on anything else. */
export function parseProcsList(text: string): number[] | undefined {
  const pids: number[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const pid = Number(line);
    if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
    pids.push(pid);
  }
  return pids;
}

export class KeptCgroupActivity implements CgroupActivitySource {
  private readonly open = new OpenProcFiles();
  /** Per cgroup: its two files' paths, and its list as last read (the same array again while its text is). */
  private readonly seen = new Map<string, { cpuStat: string; procs: string; text?: string; pids?: number[] }>();
  private reads = 0;

  read(cgroupDir: string): CgroupActivity | undefined {
    // A cgroup removed and made again under the same name is a new directory: its kept files fail (ENODEV) and are
    // opened again by their path.
    if (++this.reads % 64 === 0) this.tidy();
    let seen = this.seen.get(cgroupDir);
    if (!seen) {
      seen = { cpuStat: path.join(cgroupDir, 'cpu.stat'), procs: path.join(cgroupDir, 'cgroup.procs') };
      this.seen.set(cgroupDir, seen);
    }
    // The CPU time first: whatever runs after it is read (a fork between the two reads, say) shows as CPU time
    // used at the next read.
    const usage = this.open.read(seen.cpuStat);
    const procs = this.open.read(seen.procs);
    const cpuUsec = usage === undefined ? undefined : parseCpuUsage(usage);
    if (procs !== seen.text) {
      seen.text = procs;
      seen.pids = procs === undefined ? undefined : parseProcsList(procs);
    }
    return cpuUsec === undefined || seen.pids === undefined ? undefined : { pids: seen.pids, cpuUsec };
  }

  forget(cgroupDir: string): void {
    const seen = this.seen.get(cgroupDir);
    if (!seen) return;
    this.seen.delete(cgroupDir);
    this.open.closeFile(seen.cpuStat);
    this.open.closeFile(seen.procs);
  }

  close(): void {
    this.open.closeAll();
    this.seen.clear();
  }

  private tidy(): void {
    this.open.closeUnused();
    if (this.seen.size > 64) this.seen.clear();
  }
}
