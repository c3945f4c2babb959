// The Linux process table's command lines: an exec keeps a process's pid and start time but changes its command
// line, so a cached one is read again when the process may have exec'd since (its `comm` changed, or it was read
// while the process was young), and only then.
import * as assert from 'assert';
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { LinuxProcessTable } from '../../src/proc/platform/linuxProcessTable';
import { register, tmpDir, waitAllDead, waitFor } from './helpers';

/** `sh` (in a group of its own) that waits for `<dir>/go`, then execs `then` (a shell command line): pid and start time stay. */
function execOnGo(then: string): { child: ChildProcess; go: () => void; dir: string } {
  const dir = tmpDir();
  const go = path.join(dir, 'go');
  const child = spawn('/bin/sh', ['-c', `while [ ! -e "$0" ]; do sleep 0.02; done; exec ${then}`, go], { stdio: 'ignore', detached: true });
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
});
