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
import { OwnerInfo, PresenceProbe } from '../../src/proc/identity/ownerIdentity';
import { KillOptions } from '../../src/proc/kill/killTarget';
import { TreeIdentity } from '../../src/proc/members/membership';
import { HostClock } from '../../src/proc/platform/bootClock';
import { ExecAsync } from '../../src/proc/platform/execAsync';
import {
  childrenOf,
  HOST_MARK_VARIABLE,
  ProcessInfo,
  ProcessTable,
  Snapshot,
  StartPrecision,
  TREE_ID_VARIABLE,
  WATCHDOG_VARIABLE,
  WINDOW_TAG_VARIABLE,
} from '../../src/proc/platform/processTable';
import { TreeRecord } from '../../src/proc/records/schema';
import { Signaller, SignalResult } from '../../src/proc/platform/signaller';
import { WindowsProcessTable } from '../../src/proc/platform/windowsProcessTable';

export const LINUX_PRECISION: StartPrecision = { unit: 'ticks', errorMs: 50 };

export interface FakeProcess extends ProcessInfo {
  /** Value of AGENT_TREES_TREE_ID in its environment, if any. */
  tag?: string;
  /** Value of AGENT_TREES_HOST (an extension host's mark) in its environment, if any. */
  mark?: string;
  /** Value of AGENT_TREES_WINDOW (a window's terminal tag) in its environment, if any. */
  window?: string;
  /** Value of AGENT_TREES_WATCHDOG (an owner's watchdog) in its environment, if any. */
  watchdog?: string;
  /** The file it runs. */
  exe?: string;
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

/**
 * A process table held in memory: exactly these processes, the rest gone. Snapshots show no uid (as a Linux one
 * reads none); `unreadable` pids answer as a table does under EMFILE.
 */
export class FakeTable implements ProcessTable, PresenceProbe {
  readonly processes = new Map<number, FakeProcess>();
  private readonly unreadable: Set<number>;

  constructor(
    list: FakeProcess[],
    readonly startPrecision: StartPrecision = LINUX_PRECISION,
    options: { unreadable?: number[] } = {},
  ) {
    for (const p of list) this.processes.set(p.pid, p);
    this.unreadable = new Set(options.unreadable ?? []);
  }

  read(pid: number): ProcessInfo | undefined {
    if (this.unreadable.has(pid)) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    const p = this.processes.get(pid);
    return p && { ...p };
  }

  probe(pid: number): ProcessInfo | 'gone' | 'unreadable' {
    if (this.unreadable.has(pid)) return 'unreadable';
    return this.read(pid) ?? 'gone';
  }

  snapshot(): Snapshot {
    const processes = new Map<number, ProcessInfo>([...this.processes].map(([pid, p]) => [pid, { ...p, uid: -1 }]));
    const byVariable = (value: (p: FakeProcess) => string | undefined) => {
      const tagged = new Map<string, ProcessInfo[]>();
      for (const p of this.processes.values()) {
        const v = value(p);
        if (v) tagged.set(v, [...(tagged.get(v) ?? []), processes.get(p.pid)!]);
      }
      return tagged;
    };
    const trees = byVariable((p) => p.tag);
    const marks = byVariable((p) => p.mark);
    const windows = byVariable((p) => p.window);
    const watchdogs = byVariable((p) => p.watchdog);
    return {
      takenAt: Date.now(),
      processes,
      startPrecision: this.startPrecision,
      commandLine: (pid) => this.processes.get(pid)?.command ?? processes.get(pid)?.name ?? '',
      executable: (pid) => this.processes.get(pid)?.exe,
      tagged: (variable = TREE_ID_VARIABLE) =>
        variable === HOST_MARK_VARIABLE
          ? marks
          : variable === WINDOW_TAG_VARIABLE
            ? windows
            : variable === WATCHDOG_VARIABLE
              ? watchdogs
              : trees,
      children: () => childrenOf(processes),
    };
  }
}

/** A table of exactly `list` with Linux's start times (ticks); `unreadable` pids answer as under EMFILE. */
export const syntheticTable = (list: FakeProcess[], options: { unreadable?: number[] } = {}) =>
  new FakeTable(list, LINUX_PRECISION, options);

/** The boot clock of the synthetic machine: its ids, and now at tick NOW_TICKS (ten hours after boot). */
export const NOW_TICKS = 3_600_000;
export const CLOCK: HostClock = {
  machineId: 'synthetic-machine',
  bootId: '5e5e5e5e-0000-4000-8000-000000000001',
  pidNs: 4026531836,
  procIsOurs: true,
  nowTicks: () => NOW_TICKS,
};

/** A full boot-clock identity of `pid`, started at tick `startTicks` on `clock`'s machine, as this version writes it. */
export function identityOn(clock: HostClock, pid: number, startTicks: number, startTime = Date.now()): OwnerInfo {
  return { pid, startTime, startTicks, bootId: clock.bootId, pidNs: clock.pidNs, machineId: clock.machineId };
}

/** An identity on the synthetic machine (see identityOn). */
export const identity = (pid: number, startTicks: number, startTime?: number) => identityOn(CLOCK, pid, startTicks, startTime);

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

  /** Moves every pid of `dir` (and below) out, into the folder `released`. */
  release(dir: string): { moved: number; left: number[] } {
    const pids = this.procs(dir);
    for (const d of [...this.dirs.keys()]) if (d === dir || d.startsWith(dir + '/')) this.dirs.delete(d);
    this.dirs.set('released', [...(this.dirs.get('released') ?? []), ...pids]);
    return { moved: pids.length, left: [] };
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

/** When the synthetic tree was tracked, in ms since the epoch. */
export const TRACKED = 1_000_100;
/**
 * Where start keys are boot ticks (Linux) the tree is judged by its ticks: the root's exact start tick (the
 * synthetic root 200 starts at tick 1200, see `proc`) and the tick tracking began at; elsewhere by its epoch times.
 */
export const TRACKED_TICKS = 5000;
/** The tree of the synthetic machines: root 200, leading its group and session. */
export const TREE: TreeIdentity = {
  id: 't1',
  rootPid: 200,
  pgid: 200,
  sid: 200,
  rootStartTime: 1_000_000,
  trackedAt: TRACKED,
  cgroup: null,
  rootStartTicks: 1200,
  trackedAtTicks: TRACKED_TICKS,
};
/** A member of the tree's group and session. */
export const inTree = (pid: number, fields: Partial<FakeProcess> = {}) => proc(pid, { ppid: 200, pgid: 200, sid: 200, ...fields });
/** A kill by someone who did not spawn the tree (a sweeper), and by its continuous owner. */
export const OUTSIDER: KillOptions = { graceMs: 0, continuouslyOwned: false, cgroupVerified: false };
export const OWNED: KillOptions = { graceMs: 0, continuouslyOwned: true, cgroupVerified: false };

/**
 * A Windows machine: ps-list lists node.exe 4000 > cmd.exe 4001 > python.exe 4002 and conhost.exe 4003, and
 * taskkill answers as `exec` says (a success ends 4001 and its children).
 */
export function windowsMachine(exec: (args: string[]) => { code: number; stdout: string }) {
  let alive = [
    { pid: 4000, ppid: 100, name: 'node.exe' },
    { pid: 4001, ppid: 4000, name: 'cmd.exe' },
    { pid: 4002, ppid: 4001, name: 'python.exe' },
    { pid: 4003, ppid: 4001, name: 'conhost.exe' },
  ];
  const calls: string[][] = [];
  const table = new WindowsProcessTable(async () => alive);
  const m = machine([], {
    platform: 'win32',
    precision: { unit: 'none', errorMs: Infinity },
    coreTable: () => table,
    exec: async (_file, args) => {
      calls.push(args);
      const r = exec(args);
      if (r.code === 0) alive = alive.filter((p) => p.pid !== 4001 && p.ppid !== 4001);
      return r;
    },
  });
  return { m, calls, table };
}

/** A tree record with defaults for what a case does not care about (root 4242, tracked a minute ago). */
export function treeRecord(id: string, extra: Partial<TreeRecord> = {}): TreeRecord {
  return {
    id,
    label: 'demo',
    command: ['sleep', '60'],
    rootPid: 4242,
    pgid: 4242,
    sid: 4242,
    rootStartTime: Date.now() - 60_000,
    trackedAt: Date.now() - 59_900,
    envTag: `AGENT_TREES_TREE_ID=${id}`,
    cgroup: null,
    ...extra,
  };
}
