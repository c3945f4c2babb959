/**
 * Helpers for the record, identity and sweep tests: identities in this machine's boot clock, dead pids,
 * synthetic process tables, and a sweep with this process's table, killer and guard.
 */
import * as fs from 'fs';
import * as path from 'path';
import { spawn, SpawnOptions, spawnSync } from 'child_process';
import { localSweepParts, OwnerInfo, processCore, RecordStore, selfIdentity, sweepOrphans, TreeRecord } from '../../src/proc';
import { PresenceProbe } from '../../src/proc/identity/ownerIdentity';
import { hostClock, HostClock } from '../../src/proc/platform/bootClock';
import { childrenOf, ProcessInfo, ProcessTable, Snapshot } from '../../src/proc/platform/processTable';
import { START_PRECISION_MS } from '../../src/proc/platform/procParsers';
import { SweepOptions } from '../../src/proc/sweep/sweepOrphans';
import { FIXTURE, fixturePids, register, tmpDir, waitFor } from './started';
import { startCli } from './cli';

export function clock(): HostClock {
  const c = hostClock();
  if (!c) throw new Error('these tests need the Linux boot clock');
  return c;
}

export function nowTicks(): number {
  return clock().nowTicks();
}

/** A full boot-clock identity on this machine, as this version writes it. */
export function identity(pid: number, startTicks: number, startTime = Date.now()): OwnerInfo {
  const c = clock();
  return { pid, startTime, startTicks, bootId: c.bootId, pidNs: c.pidNs, machineId: c.machineId };
}

/** The pid of a process that has exited and been reaped, checked to be free right now. */
export function deadPid(): number {
  for (;;) {
    const pid = spawnSync('true').pid!;
    try {
      process.kill(pid, 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') return pid;
    }
  }
}

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

/** A sweep by this process as a front end runs it (cgroups off unless asked). */
export function sweep(store: RecordStore, extra: Partial<SweepOptions> = {}) {
  const parts = localSweepParts(processCore());
  return sweepOrphans(store, { ...parts, self: selfIdentity(parts.table), graceMs: 500, cgroups: 'off', ...extra });
}

/** A process of a synthetic table. */
export function proc(pid: number, startKey: number, extra: Partial<ProcessInfo> = {}): ProcessInfo {
  return {
    pid,
    ppid: 1,
    pgid: pid,
    sid: pid,
    state: 'S',
    startKey,
    startTime: startKey * 10,
    uid: 0,
    name: 'p',
    rssBytes: 0,
    cpuMs: 0,
    ...extra,
  };
}

/**
 * A synthetic process table: exactly these processes, the rest gone; `unreadable` pids answer as a table
 * under EMFILE does. Snapshots have no tags unless given.
 */
export function syntheticTable(
  processes: ProcessInfo[],
  options: { unreadable?: number[]; tags?: Record<string, number[]> } = {},
): ProcessTable & PresenceProbe {
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const unreadable = new Set(options.unreadable ?? []);
  const startPrecision = { unit: 'ticks', errorMs: START_PRECISION_MS } as const;
  const snapshot = (): Snapshot => ({
    takenAt: Date.now(),
    processes: new Map(byPid),
    startPrecision,
    commandLine: (pid) => (byPid.has(pid) ? `cmd ${pid}` : ''),
    tagged: () => new Map(Object.entries(options.tags ?? {}).map(([id, pids]) => [id, pids.map((pid) => byPid.get(pid)!).filter(Boolean)])),
    children: () => childrenOf(byPid),
  });
  return {
    startPrecision,
    snapshot,
    read: (pid) => {
      if (unreadable.has(pid)) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
      return byPid.get(pid);
    },
    probe: (pid) => (unreadable.has(pid) ? 'unreadable' : (byPid.get(pid) ?? 'gone')),
  };
}

/** This process's table (see core.ts). */
export const processTable = (): ProcessTable => processCore().table;

/** Starts `agent-trees run` on a fixture as an owner process of its own; resolves once the tree is recorded. */
export async function cliOwner(records: string, mode = 'deep', extra: string[] = ['--no-cgroup']) {
  const pidfile = path.join(tmpDir(), 'pids');
  // Without its watchdog: these tests look at what the sweep does with a dead owner's record (watchdog.test.ts
  // looks at the watchdog's).
  const run = startCli(['run', '--records', records, '--no-watchdog', ...extra, '--', FIXTURE, mode, pidfile]);
  const pids = await fixturePids(pidfile);
  const file = path.join(records, `${run.child.pid}.json`);
  await waitFor('record', () => fs.existsSync(file));
  return { run, pids, ownerPid: run.child.pid!, file };
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** It had to be SIGKILLed at the time limit. */
  timedOut: boolean;
}

/** Runs a command to its end, or SIGKILLs it after `timeoutMs` (a hang fails the caller, not the suite). */
export function runBounded(file: string, args: string[], timeoutMs = 20_000, options: SpawnOptions = {}): Promise<Ran> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  register(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    }),
  );
}

/** Whether a program is on PATH (the Debian test tools: faketime, unshare, setpriv). */
export function hasTool(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
}
