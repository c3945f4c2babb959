// The Linux process table's command lines: an exec keeps a process's pid and start time but changes its command
// line, so a cached one is read again when the process may have exec'd since (its `comm` changed, or it was read
// while the process was young), and only then.
import * as assert from 'assert';
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { register, tmpDir, waitAllDead, waitFor } from '../../support/started';

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
