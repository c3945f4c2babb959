import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { AgentRuns } from '../../../src/agents/runs';
import { processCore, PtyRoot, RecordStore, TreeOwner } from '../../../src/proc';
import { loadPtyWith } from '../../../src/proc/pty/spawnPtyTree';
import { aliveOf, FIXTURE, fixturePids, register, table, tmpDir, waitAllDead, waitFor } from '../../support/started';
import { blockedInWrite, events, probeEvent, PROBE, PYTHON, reportFile } from '../../support/tty';

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

describe('the pseudo-terminal module', () => {
  it('says why it cannot load, and for which platform', () => {
    const missing = loadPtyWith(() => {
      throw new Error("Cannot find module '@lydell/node-pty'\nRequire stack:\n- /x/dist/extension.js");
    }, 'linux');
    assert.strictEqual(missing.module, undefined);
    assert.strictEqual(missing.problem, `cannot load @lydell/node-pty (linux-${process.arch}): Cannot find module '@lydell/node-pty'`);
    assert.match(loadPtyWith(() => ({}), 'darwin').problem!, /has no spawn\(\)/);
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the real module, loaded as pty.ts loads it
    const real = () => require('@lydell/node-pty');
    assert.match(loadPtyWith(real, 'win32').problem!, /on Windows agents run on pipes/);
    assert.strictEqual(typeof loadPtyWith(real, 'linux').module?.spawn, 'function');
  });
});

describe('agent runs on a terminal (real processes)', () => {
  const settings = { defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true };
  const all: AgentRuns[] = [];
  const newRuns = () => {
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' }), () => settings);
    all.push(runs);
    return runs;
  };
  afterEach(async () => {
    for (const runs of all.splice(0)) {
      runs.dispose();
      await runs.owner.dispose(300);
    }
  });

  it('puts agents on a terminal by default, MCP servers on pipes, and follows "terminal"', async () => {
    const runs = newRuns();
    const agent = runs.launch({ name: 'a', command: 'sleep', args: ['30'] }, { size: { cols: 90, rows: 20 } });
    const mcp = runs.launch({ name: 'm', command: 'sleep', args: ['30'], kind: 'mcp' });
    const piped = runs.launch({ name: 'p', command: 'sleep', args: ['30'], terminal: 'pipe' });
    const ptyMcp = runs.launch({ name: 'q', command: 'sleep', args: ['30'], kind: 'mcp', terminal: 'pty' });
    for (const r of [agent, mcp, piped, ptyMcp]) register(r.tree.record.rootPid);
    assert.deepStrictEqual([agent.io, mcp.io, piped.io, ptyMcp.io], ['pty', 'pipe', 'pipe', 'pty']);
    assert.ok(agent.pty instanceof PtyRoot);
    assert.deepStrictEqual([agent.pty!.cols, agent.pty!.rows], [90, 20]);
    assert.strictEqual(mcp.pty, undefined);
  });

  it('sets TERM and COLORTERM as VS Code does, unless the definition says otherwise', async () => {
    const runs = newRuns();
    const file = reportFile();
    const run = runs.launch({ name: 't', command: PYTHON, args: [PROBE, file, 'wait'], env: { COLORTERM: 'no' } });
    register(run.tree.record.rootPid);
    const start = await probeEvent(file, (e) => e.event === 'start', 'start');
    assert.deepStrictEqual([start.term, start.colorterm], ['xterm-256color', 'no']);
  });

  it('tells the ending once, after the kill reported, with the count the kill reported', async () => {
    const runs = newRuns();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = runs.launch({ name: 'k', command: FIXTURE, args: ['setsid', pidfile] });
    register(run.tree.record.rootPid);
    const pids = await fixturePids(pidfile);
    const told: string[] = [];
    runs.on('finished', (r) => r === run && told.push(r.endingText()));
    // A kill and the leftover kill that the root's exit starts join: one report, counted once.
    const report = await runs.kill(run.id);
    await waitFor('told', () => told.length > 0);
    assert.ok(report.signalled >= 2);
    assert.deepStrictEqual(told, [`killed: ended ${report.signalled} processes`]);
    assert.strictEqual(run.processesEnded, report.signalled);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('says how an agent that exited ended, with what it left running, once', async () => {
    const runs = newRuns();
    const flag = path.join(tmpDir(), 'left');
    // The child is in a session of its own before the root exits (else the root's exit hangs it up, as in any terminal).
    const script = `setsid sh -c 'echo $$ > "$0"; exec sleep 30' "${flag}" & while [ ! -s "${flag}" ]; do :; done; echo hello; exit 3`;
    const run = runs.launch({ name: 'leaver', command: 'sh', args: ['-c', script] });
    register(run.tree.record.rootPid);
    const told: string[] = [];
    runs.on('finished', (r) => r === run && told.push(r.endingText()));
    await waitFor('finished', () => run.finished && told.length > 0, 8000);
    register(Number(fs.readFileSync(flag, 'utf8')));
    assert.deepStrictEqual(told, ['exited with code 3; ended 1 process it left running']);
    assert.match(run.output.text(), /^hello\r\n/, "output unchanged but for the tty's own \\r\\n");
  });

  it('interrupts a terminal run through its tty, and forgets only finished runs when pruning', async () => {
    const runs = newRuns();
    const file = reportFile();
    const run = runs.launch({ name: 'i', command: PYTHON, args: [PROBE, file, 'wait'] });
    register(run.tree.record.rootPid);
    await probeEvent(file, (e) => e.event === 'waiting', 'waiting');
    assert.strictEqual(runs.interrupt(run.id), true);
    await probeEvent(file, (e) => e.event === 'sigint', 'SIGINT');
    const pruned: string[] = [];
    runs.on('pruned', (r) => pruned.push(r.id));
    runs.prune(0);
    assert.deepStrictEqual(pruned, [], 'a live run stays');
    run.write('q\r');
    await waitFor('finished', () => run.finished, 8000);
    runs.prune(0);
    assert.deepStrictEqual(pruned, [run.id]);
    assert.strictEqual(runs.get(run.id), undefined);
    assert.deepStrictEqual(aliveOf([run.tree.record.rootPid]), []);
  });

  it('keeps a pty tree recorded until its last member is gone, and leaves no record after', async () => {
    const runs = newRuns();
    const run = runs.launch({ name: 'r', command: 'sleep', args: ['30'] });
    register(run.tree.record.rootPid);
    const store = new RecordStore(runs.owner.store.dir);
    assert.ok(store.read(process.pid)!.trees.some((t) => t.id === run.id));
    await runs.kill(run.id);
    await waitFor('record gone', () => !fs.existsSync(store.fileOf(process.pid)));
    assert.strictEqual(table.read(run.tree.record.rootPid), undefined);
  });
});
