// The Linux process table's command lines: an exec keeps a process's pid and start time but changes its command
// line, so a cached one is read again when the process may have exec'd since (its `comm` changed, or it was read
// while the process was young), and only then.
import * as assert from 'assert';
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ownerState } from '../../../src/proc/identity/ownerIdentity';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { TREE_ID_VARIABLE } from '../../../src/proc/platform/processTable';
import { tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { register, waitAllDead } from '../../support/started';
import { requireRoot, skipBecause } from '../../support/environment';

/**
 * `sh` (in a group of its own, with `env` added to ours) that waits for `<dir>/go`, then execs `then` (a shell
 * command line): pid and start time stay.
 */
function execOnGo(then: string, env: NodeJS.ProcessEnv = {}): { child: ChildProcess; go: () => void; dir: string } {
  const dir = tmpDir();
  const go = path.join(dir, 'go');
  const child = spawn('/bin/sh', ['-c', `while [ ! -e "$0" ]; do sleep 0.02; done; exec ${then}`, go], {
    stdio: 'ignore',
    detached: true,
    env: { ...process.env, ...env },
  });
  register(child.pid!);
  return { child, go: () => fs.writeFileSync(go, ''), dir };
}

async function end({ child, dir }: { child: ChildProcess; dir: string }): Promise<void> {
  process.kill(-child.pid!, 'SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
  assert.deepStrictEqual(await waitAllDead([child.pid!]), []);
}

/** The command line as /proc holds it now, spaces for NULs. */
function procCmdline(pid: number): string {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').split('\0').join(' ');
}

describe('LinuxProcessTable command lines', () => {
  it('shows the program a process exec’d, not the one it started as (comm changed)', async () => {
    const table = new LinuxProcessTable();
    const started = execOnGo('sleep 60');
    const { child, go } = started;
    try {
      const pid = child.pid!;
      const before = table.snapshotOf([pid]);
      assert.match(before.commandLine(pid), /^\/bin\/sh -c /);
      go();
      await waitFor('the exec', () => procCmdline(pid) === 'sleep 60');
      const after = table.snapshotOf([pid]);
      assert.strictEqual(after.processes.get(pid)?.startKey, before.processes.get(pid)?.startKey, 'the same process');
      assert.strictEqual(after.commandLine(pid), 'sleep 60');
    } finally {
      await end(started);
    }
  });

  it('reads a young process’s command line again although its comm stayed (sh exec’d sh)', async () => {
    const table = new LinuxProcessTable();
    const started = execOnGo(`/bin/sh -c 'sleep 60; exit 0'`);
    const { child, go } = started;
    try {
      const pid = child.pid!;
      const before = table.snapshotOf([pid]);
      assert.match(before.commandLine(pid), /while/);
      go();
      await waitFor('the exec', () => procCmdline(pid) === '/bin/sh -c sleep 60; exit 0');
      const after = table.snapshotOf([pid]);
      assert.strictEqual(after.processes.get(pid)?.name, before.processes.get(pid)?.name, 'the same comm');
      assert.strictEqual(after.commandLine(pid), '/bin/sh -c sleep 60; exit 0');
    } finally {
      await end(started);
    }
  });

  it('reads a settled process’s command line once: a repeat snapshot reads its stat only', () => {
    const table = new LinuxProcessTable();
    // PID 1 started long before this test: its command line is settled.
    table.snapshotOf([1]).commandLine(1);
    const reads = table.reads;
    const again = table.snapshotOf([1]);
    assert.ok(again.commandLine(1).length > 0);
    assert.strictEqual(table.reads - reads, 1, 'one read: /proc/1/stat');
  });
});

describe('LinuxProcessTable censuses: what started since the last one', function () {
  this.timeout(60_000);

  it('reads every process the first time, then only the newcomers: 300 new processes cost about 300 reads', async () => {
    const table = new LinuxProcessTable();
    const first = table.reads;
    const all = table.snapshotOfNewcomers([], []);
    const firstReads = table.reads - first;
    assert.ok(firstReads >= all.processes.size, 'the first census reads every process');
    let crowd: ReturnType<typeof spawn> | undefined;
    try {
      crowd = spawn('sh', ['-c', 'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; echo up; wait'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        detached: true,
      });
      register(crowd.pid!);
      await new Promise((r) => crowd!.stdout!.once('data', r));
      const before = table.reads;
      const census = table.snapshotOfNewcomers([], []);
      const reads = table.reads - before;
      const crowdPids = fs.readFileSync(`/proc/${crowd.pid}/task/${crowd.pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
      assert.strictEqual(crowdPids.length, 300);
      for (const pid of crowdPids) assert.ok(census.processes.has(pid), `newcomer ${pid} is in the census`);
      assert.ok(census.processes.has(crowd.pid!));
      // The crowd, whatever else started meanwhile on this shared machine, the listing and its counters: not every process.
      const everything = table.snapshot().processes.size;
      assert.ok(reads < everything - 200 || everything < 600, `${reads} reads with ${everything} processes on the machine`);
      assert.ok(reads >= 301);
    } finally {
      if (crowd) process.kill(-crowd.pid!, 'SIGKILL');
    }
  });

  // Pid allocation moved by hand (ns_last_pid, root only) so that a new process gets a pid the census saw before.
  for (const { title, lastPidAtCensus } of [
    { title: 'within one turn of pid allocation', lastPidAtCensus: (pid: number) => pid - 10 },
    {
      title: 'after pid allocation wrapped around',
      lastPidAtCensus: (pid: number, max: number) => pid + Math.min(5000, Math.floor((max - pid) / 2)),
    },
  ]) {
    it(`reads a pid again when allocation came round to it (${title}): a new process at a pid seen before is a newcomer`, async function () {
      const maxPid = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
      requireRoot(this, 'to move ns_last_pid');
      const table = new LinuxProcessTable();
      const first = spawn('sleep', ['60'], { stdio: 'ignore' });
      register(first.pid!);
      const pid = first.pid!;
      const started = [first];
      try {
        const lastPid = lastPidAtCensus(pid, maxPid);
        if (lastPid === pid || lastPid >= maxPid || pid < 400) skipBecause(this, `no room for the census on this side of pid ${pid}`);
        fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(lastPid));
        table.snapshotOfNewcomers([], []);
        first.kill('SIGKILL');
        await waitFor('the first holder to be reaped', () => !fs.existsSync(`/proc/${pid}`));
        let second: ReturnType<typeof spawn> | undefined;
        for (let attempt = 0; attempt < 20 && second?.pid !== pid; attempt++) {
          fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
          second = spawn('sleep', ['60'], { stdio: 'ignore' });
          started.push(second);
          if (second.pid) register(second.pid);
        }
        if (second?.pid !== pid) skipBecause(this, 'another process of the machine took the pid each of 20 times');
        const census = table.snapshotOfNewcomers([], []);
        const now = table.read(pid);
        assert.ok(now, 'the new holder runs');
        assert.strictEqual(census.processes.get(pid)?.startKey, now.startKey, 'the new holder is read, not taken for the old one');
      } finally {
        for (const c of started) c.kill('SIGKILL');
      }
    });
  }
});

describe('LinuxProcessTable processes', () => {
  it('counts a zombie as dead', async () => {
    const table = new LinuxProcessTable();
    // The exec'd parent never reaps its child, which stays a zombie until the parent ends.
    const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 3'], { stdio: ['ignore', 'pipe', 'ignore'] });
    register(parent.pid!);
    const zombie = Number(await new Promise<string>((r) => parent.stdout!.once('data', (d) => r(String(d)))));
    await waitFor('zombie state', () => fs.readFileSync(`/proc/${zombie}/stat`, 'latin1').includes(') Z '));
    assert.strictEqual(table.read(zombie), undefined);
    assert.ok(!table.snapshot().processes.has(zombie));
    assert.strictEqual(ownerState(table, { pid: zombie, startTime: Date.now() }), 'dead');
    parent.kill('SIGKILL');
  });
});

// A tag read before an exec that dropped it (`env -i`) would keep a process a member for one table and not for
// another that read it later: membership would depend on which table read it first.
describe('LinuxProcessTable start times on the wall clock', () => {
  // Ages are wall-clock differences (an extension host records the processes that have run 2 s): after a step
  // back, start times on the old clock would make every new process look an hour young, and none recorded.
  it('follow a wall-clock step back within 10 s: a new process is no younger than it is', async () => {
    const realNow = Date.now;
    const table = new LinuxProcessTable();
    table.read(process.pid);
    let step = -3_600_000;
    Date.now = () => realNow() + step;
    try {
      step += 11_000; // 11 s pass on the stepped clock
      const child = spawn('/bin/sleep', ['30'], { stdio: 'ignore' });
      register(child.pid!);
      const p = await waitFor('the child to be read', () => table.read(child.pid!));
      const age = Date.now() - p.startTime;
      child.kill('SIGKILL');
      assert.deepStrictEqual(await waitAllDead([child.pid!]), []);
      assert.ok(age > -1000 && age < 11_000, `a process started just now is ${age} ms old on the stepped clock`);
    } finally {
      Date.now = realNow;
    }
  });
});

describe('LinuxProcessTable tags', () => {
  for (const [title, then] of [
    ["after it exec'd another program (comm changed)", 'env -i sleep 60'],
    ["after a young process exec'd the same program with a scrubbed environment", "env -i /bin/sh -c 'sleep 60; exit 0'"],
  ] as const) {
    it(`reads a process's tags again ${title}: what it carries now, whichever table read it first`, async () => {
      const early = new LinuxProcessTable();
      const started = execOnGo(then, { [TREE_ID_VARIABLE]: 'tags-after-exec' });
      const { child, go } = started;
      const pid = child.pid!;
      try {
        const taggedNow = (t: LinuxProcessTable) => (t.snapshotOf([pid]).tagged().get('tags-after-exec') ?? []).map((p) => p.pid);
        await waitFor('the tagged shell', () => taggedNow(early).includes(pid));
        go();
        await waitFor('the exec', () => procCmdline(pid).startsWith(then.startsWith('env -i sleep') ? 'sleep' : '/bin/sh -c sleep'));
        assert.deepStrictEqual(taggedNow(new LinuxProcessTable()), [], 'a table reading it now: no tag');
        assert.deepStrictEqual(taggedNow(early), [], 'the table that read it before the exec: no tag either');
      } finally {
        await end(started);
      }
    });
  }
});

describe('LinuxProcessTable: the files of tracked members, kept open', () => {
  /** This process's open files under /proc/<pid>/ (their targets). */
  const openFilesOf = (pid: number) =>
    fs
      .readdirSync('/proc/self/fd')
      .map((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      })
      .filter((target) => target.startsWith(`/proc/${pid}/`));

  it('reads a member again through its kept files, sees what changed, and never reads a gone process through them', async () => {
    const table = new LinuxProcessTable();
    const root = spawn('sh', ['-c', 'sleep 30 & read line; exit 0'], { stdio: ['pipe', 'ignore', 'ignore'] });
    register(root.pid!);
    const sleeper = await waitFor(
      'the sleep',
      () =>
        table.snapshotOf([], [root.pid!]).processes.size === 2 &&
        [...table.snapshotOf([], [root.pid!]).processes.keys()].find((p) => p !== root.pid),
    );
    register(sleeper);
    assert.deepStrictEqual(openFilesOf(root.pid!).sort(), [`/proc/${root.pid}/stat`, `/proc/${root.pid}/task/${root.pid}/children`]);
    process.kill(sleeper, 'SIGKILL');
    await waitAllDead([sleeper]);
    assert.deepStrictEqual([...table.snapshotOf([], [root.pid!]).processes.keys()], [root.pid], 'the kept children list changed with it');
    const exited = new Promise((resolve) => root.once('exit', resolve));
    root.stdin!.end('go\n');
    await exited;
    assert.strictEqual(table.snapshotOf([root.pid!]).processes.size, 0, 'gone: its kept stat fails and its pid is read afresh');
    assert.deepStrictEqual(
      openFilesOf(root.pid!).filter((f) => f.endsWith('/stat')),
      [],
      'and that file is closed',
    );
  });

  it('parses a kept stat again only when it reads otherwise: what did not run is the same, what ran is new', async () => {
    const table = new LinuxProcessTable();
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    // A loop in Node's own process: it runs all the time, so its stat's CPU times move between reads.
    const busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    register(sleeper.pid!);
    register(busy.pid!);
    try {
      const read = (pid: number) => table.snapshotOf([pid]).processes.get(pid);
      // Once it sleeps: while it still execs, each read differs.
      const first = await waitFor('the sleep to sleep', () => {
        const p = read(sleeper.pid!);
        return p?.name === 'sleep' && p.state === 'S' && p;
      });
      assert.strictEqual(read(sleeper.pid!), first, 'a process that did not run is not parsed again');
      const before = await waitFor('the loop to have used CPU time', () => {
        const p = read(busy.pid!);
        return p && p.cpuMs > 0 && p;
      });
      const after = await waitFor('the loop to use more', () => {
        const p = read(busy.pid!);
        return p && p.cpuMs > before.cpuMs && p;
      });
      // Had the first reading been handed out again, or changed in place, the wait above would never end.
      assert.notStrictEqual(after, before, 'a process that ran is read anew');
    } finally {
      sleeper.kill('SIGKILL');
      busy.kill('SIGKILL');
      await waitAllDead([sleeper.pid!, busy.pid!]);
    }
  });
});
