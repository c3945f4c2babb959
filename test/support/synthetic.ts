/**
 * Synthetic parts for the core's rules: a process table held in memory, a signaller that records every call and
 * acts on that table as the kernel would, and cgroups kept in a map. With them the membership, proof, guard and
 * escalation rules run on any platform's terms without touching a real process. The real-process tests stay
 * the final word; these make each rule's cases cheap to list.
 */
import { CgroupProber } from '../../src/proc/cgroup/probe';
import { CgroupControl } from '../../src/proc/cgroup/treeCgroup';
import { Core, createCore } from '../../src/proc/core';
import { GuardSelf, SignalGuard } from '../../src/proc/identity/guard';
import { ExecAsync } from '../../src/proc/platform/execAsync';
import { childrenOf, ProcessInfo, ProcessTable, Snapshot, StartPrecision } from '../../src/proc/platform/processTable';
import { Signaller, SignalResult } from '../../src/proc/platform/signaller';

export const LINUX_PRECISION: StartPrecision = { unit: 'ticks', errorMs: 50 };

export interface FakeProcess extends ProcessInfo {
  /** Value of AGENT_TREES_TREE_ID in its environment, if any. */
  tag?: string;
  /** SIGTERM does not end it. */
  ignoresTerm?: boolean;
  /** We may not signal it (EPERM). */
  denied?: boolean;
}

/** The process `pid`, with defaults for what a case does not care about. */
export function proc(pid: number, fields: Partial<FakeProcess> = {}): FakeProcess {
  return {
    pid,
    ppid: 1,
    pgid: pid,
    sid: pid,
    state: 'S',
    startKey: 1000 + pid,
    startTime: 1_000_000,
    uid: 1000,
    name: `p${pid}`,
    rssBytes: 0,
    cpuMs: 0,
    ...fields,
  };
}

export class FakeTable implements ProcessTable {
  readonly processes = new Map<number, FakeProcess>();

  constructor(
    list: FakeProcess[],
    readonly startPrecision: StartPrecision = LINUX_PRECISION,
  ) {
    for (const p of list) this.processes.set(p.pid, p);
  }

  read(pid: number): ProcessInfo | undefined {
    const p = this.processes.get(pid);
    return p && { ...p };
  }

  snapshot(): Snapshot {
    const processes = new Map<number, ProcessInfo>([...this.processes].map(([pid, p]) => [pid, { ...p, uid: -1 }]));
    const tagged = new Map<string, ProcessInfo[]>();
    for (const p of this.processes.values()) if (p.tag) tagged.set(p.tag, [...(tagged.get(p.tag) ?? []), processes.get(p.pid)!]);
    return {
      takenAt: Date.now(),
      processes,
      startPrecision: this.startPrecision,
      commandLine: (pid) => processes.get(pid)?.name ?? '',
      tagged: () => tagged,
      children: () => childrenOf(processes),
    };
  }
}

export interface SignalCall {
  to: 'pid' | 'group';
  target: number;
  signal: NodeJS.Signals;
}

/** Records every signal and applies it to the table: SIGKILL ends, SIGTERM ends unless ignored, SIGSTOP/SIGCONT. */
export class RecordingSignaller implements Signaller {
  readonly calls: SignalCall[] = [];

  constructor(private readonly table: FakeTable) {}

  signalProcess(pid: number, signal: NodeJS.Signals): SignalResult {
    this.calls.push({ to: 'pid', target: pid, signal });
    const p = this.table.processes.get(pid);
    if (!p) return 'gone';
    if (p.denied) return 'denied';
    this.apply(p, signal);
    return 'sent';
  }

  signalGroup(pgid: number, signal: NodeJS.Signals): SignalResult {
    this.calls.push({ to: 'group', target: pgid, signal });
    const members = [...this.table.processes.values()].filter((p) => p.pgid === pgid);
    if (members.length === 0) return 'gone';
    const reachable = members.filter((p) => !p.denied);
    for (const p of reachable) this.apply(p, signal);
    return reachable.length > 0 ? 'sent' : 'denied';
  }

  /** Calls that reached `pid`, one by one or through its group. */
  reached(pid: number, group: number | undefined = undefined): NodeJS.Signals[] {
    return this.calls.filter((c) => (c.to === 'pid' ? c.target === pid : c.target === group)).map((c) => c.signal);
  }

  private apply(p: FakeProcess, signal: NodeJS.Signals): void {
    if (signal === 'SIGKILL' || (signal === 'SIGTERM' && !p.ignoresTerm)) this.table.processes.delete(p.pid);
    else if (signal === 'SIGSTOP') p.state = 'T';
    else if (signal === 'SIGCONT') p.state = 'S';
  }
}

/** Cgroups as a map of folder to pids; `cgroup.kill` ends every pid in it (and in folders below it). */
export class FakeCgroups implements CgroupControl {
  readonly killed: string[] = [];

  constructor(
    private readonly table: FakeTable,
    readonly dirs = new Map<string, number[]>(),
  ) {}

  procs(dir: string): number[] {
    return [...this.dirs]
      .filter(([d]) => d === dir || d.startsWith(dir + '/'))
      .flatMap(([, pids]) => pids.filter((pid) => this.table.processes.has(pid)));
  }

  kill(dir: string): number[] {
    const pids = this.procs(dir);
    if (pids.length > 0) this.killed.push(dir);
    for (const pid of pids) this.table.processes.delete(pid);
    return pids;
  }

  remove(dir: string): boolean {
    return this.procs(dir).length === 0;
  }
}

/** Who "we" are in the synthetic machine: pid 100 (group 100), child of 50, child of 1; uid 1000. */
export const SELF: GuardSelf = { pid: 100, ppid: 50, uid: 1000 };
export const ANCESTRY = [proc(1, { ppid: 0 }), proc(50, { ppid: 1, uid: 1000 }), proc(100, { ppid: 50, pgid: 100, sid: 50, uid: 1000 })];

export interface Machine {
  table: FakeTable;
  signaller: RecordingSignaller;
  cgroups: FakeCgroups;
  core: Core;
}

/** A synthetic machine holding our own ancestry plus `list`. */
export function machine(
  list: FakeProcess[],
  options: {
    precision?: StartPrecision;
    platform?: NodeJS.Platform;
    self?: GuardSelf;
    ancestry?: FakeProcess[];
    /** The table the core reads, built on the fake one (a MacProcessTable over a fake `ps`, say). */
    coreTable?: (fake: FakeTable) => ProcessTable;
    /** Windows: taskkill. */
    exec?: ExecAsync;
  } = {},
): Machine {
  const table = new FakeTable([...(options.ancestry ?? ANCESTRY), ...list], options.precision);
  const signaller = new RecordingSignaller(table);
  const cgroups = new FakeCgroups(table);
  const core = createCore({
    platform: options.platform ?? 'linux',
    table: options.coreTable?.(table) ?? table,
    signaller,
    cgroups,
    cgroupProber: new CgroupProber({ platform: 'linux', uid: 0, readMountinfo: () => '', fs: {} as never, execAsync: async () => {} }),
    makeGuard: (t) => new SignalGuard(t, options.self ?? SELF),
    exec:
      options.exec ??
      (async () => {
        throw new Error('no taskkill on this machine');
      }),
  });
  return { table, signaller, cgroups, core };
}
