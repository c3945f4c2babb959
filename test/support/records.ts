/**
 * For the record, identity and sweep tests on real processes: identities in this machine's boot clock, dead pids,
 * a sweep with this process's table, killer and guard, and `agent-trees run` owners of fixture trees.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn, spawnSync } from 'child_process';
import { localSweepParts, OwnerInfo, processCore, RecordStore, selfIdentity, sweepOrphans } from '../../src/proc';
import { hostClock, HostClock } from '../../src/proc/platform/bootClock';
import { ProcessTable } from '../../src/proc/platform/processTable';
import { SweepOptions } from '../../src/proc/sweep/sweepOrphans';
import { startCli } from './cli';
import { fixturePids } from './fixtures';
import { FIXTURE, tmpDir } from './repo';
import { aliveOf, register, waitAllDead } from './started';
import { identityOn } from './synthetic';
import { waitFor } from './wait';

export function clock(): HostClock {
  const c = hostClock();
  if (!c) throw new Error('these tests need the Linux boot clock');
  return c;
}

export function nowTicks(): number {
  return clock().nowTicks();
}

/** A full boot-clock identity on this machine, as this version writes it. */
export const identity = (pid: number, startTicks: number, startTime?: number): OwnerInfo => identityOn(clock(), pid, startTicks, startTime);

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

/** A sweep by this process as a front end runs it (cgroups off unless asked). */
export function sweep(store: RecordStore, extra: Partial<SweepOptions> = {}) {
  const parts = localSweepParts(processCore());
  return sweepOrphans(store, { ...parts, self: selfIdentity(parts.table), graceMs: 500, cgroups: 'off', ...extra });
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

type CliOwner = Awaited<ReturnType<typeof cliOwner>>;

/**
 * `agent-trees run` owners for the tests of one `describe` (call it there): `start` starts one on a fixture (see
 * cliOwner), `end` ends it as a user does (SIGTERM: it kills its tree) and checks nothing of it is left; whatever a
 * failing test left of them is ended after it.
 */
export function cliOwners() {
  const started: CliOwner[] = [];
  afterEach(() => {
    for (const o of started.splice(0)) {
      if (o.run.child.exitCode === null && o.run.child.signalCode === null) o.run.child.kill('SIGKILL');
      for (const pid of aliveOf(o.pids.all)) process.kill(pid, 'SIGKILL'); // alive with the start key registered
    }
  });
  return {
    async start(records: string): Promise<CliOwner> {
      const o = await cliOwner(records);
      started.push(o);
      return o;
    },
    async end(o: CliOwner): Promise<void> {
      o.run.child.kill('SIGTERM');
      await o.run.done;
      assert.deepStrictEqual(await waitAllDead(o.pids.all), []);
    },
  };
}

/** A process that leads its own session and group (`setsid`), unrelated to any record. */
export async function unrelatedLeader() {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  register(child.pid!);
  const info = await waitFor('the unrelated process', () => processTable().read(child.pid!));
  return { child, info };
}

/** What `agent-trees sweep --json` printed. */
export function sweepJson(ran: { stdout: string; stderr: string }) {
  try {
    return JSON.parse(ran.stdout);
  } catch {
    throw new Error(`sweep printed no JSON: ${ran.stdout}\n${ran.stderr}`);
  }
}
