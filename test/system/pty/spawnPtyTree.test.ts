import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, RecordStore, TreeOwner } from '../../../src/proc';
import { FIXTURE, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { register, waitAllDead } from '../../support/started';
import { blockedInWrite, events, probeEvent, PROBE, PYTHON, reportFile } from '../../support/tty';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

describe('trees on a pseudo-terminal (real processes)', () => {
  const owners: TreeOwner[] = [];
  const newOwner = (cgroups: 'auto' | 'off' = 'auto') => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
    owners.push(owner);
    return owner;
  };
  afterEach(async () => {
    await Promise.all(owners.splice(0).map((o) => o.dispose(300)));
  });

  it('the root leads a new session with the terminal as its controlling tty, tagged, recorded, in its cgroup', async () => {
    const owner = newOwner();
    const file = reportFile();
    const tree = owner.spawnTerminal({ command: PYTHON, args: [PROBE, file, 'wait'], cols: 100, rows: 30 });
    register(tree.child.pid);
    const start = await probeEvent(file, (e) => e.event === 'start', 'start');
    assert.deepStrictEqual(start.tty, [true, true, true]);
    assert.strictEqual(start.foreground, true, 'tcgetpgrp(0) == getpgrp()');
    assert.strictEqual(start.pid, tree.record.rootPid);
    assert.strictEqual(start.sid, start.pid, 'session leader');
    assert.strictEqual(start.pgrp, start.pid, 'group leader');
    assert.strictEqual(tree.record.pgid, start.pid);
    assert.strictEqual(tree.record.sid, start.pid);
    assert.deepStrictEqual(start.size, [100, 30]);
    assert.strictEqual(start.tag, tree.record.id);
    const onDisk = new RecordStore(owner.store.dir).read(process.pid)!;
    assert.ok(
      onDisk.trees.some((t) => t.id === tree.record.id),
      'recorded before it returned',
    );
    if (processCore().cgroupTier('auto').tier) {
      assert.strictEqual(tree.tier, 'cgroup');
      const own = /^0::(.*)$/m.exec(fs.readFileSync(`/proc/${tree.child.pid}/cgroup`, 'utf8'))![1];
      assert.ok(tree.record.cgroup!.endsWith(own), 'the root entered its cgroup before running');
    }
    const exit = new Promise<[number | null, string | null]>((r) => tree.child.once('exit', (c, s) => r([c, s])));
    const report = await owner.kill(tree.record.id, 300);
    assert.strictEqual(report.signalled, 1);
    assert.deepStrictEqual(await exit, [null, 'SIGTERM'], 'the exit, as a ChildProcess reports it');
  });

  it('a kill right after the spawn ends the root: the spawn returns only once the root leads its own session', async () => {
    const owner = newOwner('off');
    for (let i = 0; i < 20; i++) {
      const tree = owner.spawnTerminal({ command: 'sleep', args: ['30'] });
      register(tree.child.pid);
      const p = table.read(tree.child.pid);
      if (p) assert.strictEqual(p.sid, tree.child.pid, 'already in a session of its own');
      const report = await owner.kill(tree.record.id, 300);
      assert.strictEqual(report.survivors, 0, `run ${i}`);
      assert.deepStrictEqual(await waitAllDead([tree.child.pid]), [], `run ${i}: the root is dead`);
    }
  });

  it('passes a resize on as SIGWINCH with the new size', async () => {
    const owner = newOwner('off');
    const file = reportFile();
    const tree = owner.spawnTerminal({ command: PYTHON, args: [PROBE, file, 'wait'], cols: 80, rows: 24 });
    register(tree.child.pid);
    await probeEvent(file, (e) => e.event === 'waiting', 'waiting');
    tree.child.resize(132, 43);
    const winch = await probeEvent(file, (e) => e.event === 'winch', 'SIGWINCH');
    assert.deepStrictEqual(winch.size, [132, 43]);
    assert.strictEqual(tree.child.cols, 132);
  });

  it('takes input raw: one key in cbreak mode, Ctrl-C as SIGINT from the tty, Ctrl-D as end of input', async () => {
    const owner = newOwner('off');
    const keys = reportFile();
    const a = owner.spawnTerminal({ command: PYTHON, args: [PROBE, keys, 'cbreak'] });
    register(a.child.pid);
    await probeEvent(keys, (e) => e.event === 'cbreak', 'cbreak');
    a.child.write('k');
    await probeEvent(keys, (e) => e.event === 'key' && e.key === 'k', 'the key');
    a.child.write('\x03');
    await probeEvent(keys, (e) => e.event === 'sigint', 'SIGINT');
    const exited = new Promise<number | null>((r) => a.child.once('exit', (c) => r(c)));
    a.child.write('q');
    assert.strictEqual(await exited, 0);

    const lines = reportFile();
    const b = owner.spawnTerminal({ command: PYTHON, args: [PROBE, lines, 'lines'] });
    register(b.child.pid);
    await probeEvent(lines, (e) => e.event === 'reading', 'reading');
    b.child.write('one line\r');
    await probeEvent(lines, (e) => e.event === 'line' && e.line === 'one line', 'the line (the tty turned \\r into \\n)');
    b.child.write('\x04');
    await probeEvent(lines, (e) => e.event === 'eof', 'end of input');
  });

  it('pausing holds the writer back in write(2); resumed, every line arrives in order', async () => {
    const owner = newOwner('off');
    const file = reportFile();
    const tree = owner.spawnTerminal({ command: PYTHON, args: [PROBE, file, 'flood', '20000'] });
    register(tree.child.pid);
    let got = '';
    tree.child.on('data', (d: string) => (got += d));
    tree.child.pause();
    await blockedInWrite(tree.child.pid);
    assert.ok(!events(file).some((e) => e.event === 'flooded'), 'it cannot finish while nobody reads');
    const exited = new Promise<void>((r) => tree.child.once('exit', () => r()));
    tree.child.resume();
    await exited;
    const expected = Array.from({ length: 20_000 }, (_, i) => `line ${i}\r\n`).join('');
    assert.strictEqual(got.length, expected.length);
    assert.ok(got === expected, 'whole and in order');
  });

  it('delivers every byte before the exit, from a writer that exits at once, even while paused (node-pty #72, #726)', async () => {
    const owner = newOwner('off');
    const writer = (n: number) => `import os\ndata = b"x" * ${n}\nv = memoryview(data)\nwhile v: v = v[os.write(1, v):]`;
    for (let i = 0; i < 12; i++) {
      // Odd runs: paused from the start and never resumed; the output (less than the kernel's buffer) waits
      // there while the writer exits, and must still arrive.
      const size = i % 2 ? 3000 : 200_000;
      const tree = owner.spawnTerminal({ command: PYTHON, args: ['-c', writer(size)] });
      if (i % 2) tree.child.pause();
      let got = 0;
      tree.child.on('data', (d: string) => (got += d.length));
      await new Promise<void>((r) => tree.child.once('exit', () => r()));
      assert.strictEqual(got, size, `run ${i}${i % 2 ? ' (paused)' : ''}`);
    }
  });

  it('reports an exit code and a signal as a ChildProcess does', async () => {
    const owner = newOwner('off');
    const a = owner.spawnTerminal({ command: 'sh', args: ['-c', 'exit 3'] });
    const [code, signal] = await new Promise<[number | null, string | null]>((r) => a.child.once('exit', (c, s) => r([c, s])));
    assert.deepStrictEqual([code, signal, a.child.exitCode], [3, null, 3]);
    await waitFor('tree dropped', () => owner.get(a.record.id) === undefined);
  });

  it('ends with its tree: setsid children and daemons on the terminal die with it', async () => {
    const owner = newOwner();
    for (const mode of ['setsid', 'daemon', 'ignore-term']) {
      const pidfile = path.join(tmpDir(), 'pids');
      const tree = owner.spawnTerminal({ command: FIXTURE, args: [mode, pidfile] });
      register(tree.child.pid);
      const pids = await fixturePids(pidfile);
      const report = await owner.kill(tree.record.id, 300);
      assert.strictEqual(report.survivors, 0, mode);
      assert.deepStrictEqual(await waitAllDead(pids.all), [], mode);
    }
  });
});
