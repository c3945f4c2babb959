/**
 * The owner's watchdog (src/proc/watchdog.ts), on real processes: an owner killed outright (SIGKILL) has its
 * trees ended and its record removed by the watchdog, with no sweep from anyone else; a clean exit leaves no
 * watchdog; a live owner's trees are never touched; two watchdog sweeps of one record act once; nothing but the
 * owner holds the owner's end of the pipe.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, processKey, RecordStore, TreeOwner } from '../../../src/proc';
import { OWNER_EXIT_WAIT_MS, WATCHDOG_VARIABLE } from '../../../src/proc/owner/watchdog';
import { runBounded, runCli, startCli } from '../../support/cli';
import { fixturePids } from '../../support/fixtures';
import { identity, sweep } from '../../support/records';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { treeRecord } from '../../support/synthetic';
import { waitFor } from '../../support/wait';
import { requireCgroupTier, requireTools } from '../../support/environment';

const tree = (id: string) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100 });

/** This process's table, to read the processes a test started. */
const table = processCore().table;

/** Live processes carrying the watchdog variable of owner `pid` (any start key), zombies excluded. */
function watchdogsOf(ownerPid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (
        fs
          .readFileSync(`/proc/${name}/environ`, 'latin1')
          .split('\0')
          .some((e) => e.startsWith(`${WATCHDOG_VARIABLE}=${ownerPid}:`)) &&
        table.read(Number(name))
      )
        out.push(Number(name));
    } catch {
      /* gone, or not readable */
    }
  }
  return out;
}

/** A command line that builds three fixture trees at once: a setsid child, a SIGTERM-ignoring tree, a daemon. */
function mixedTree(): { command: string[]; pidfiles: string[] } {
  const dir = tmpDir();
  const pidfiles = ['setsid', 'ignore-term', 'daemon'].map((m) => path.join(dir, m));
  const script = `"${FIXTURE}" setsid "${pidfiles[0]}" & "${FIXTURE}" ignore-term "${pidfiles[1]}" & "${FIXTURE}" daemon "${pidfiles[2]}" & wait`;
  return { command: ['sh', '-c', script], pidfiles };
}

async function allPidsOf(pidfiles: string[]): Promise<number[]> {
  const sets = await Promise.all(pidfiles.map((f) => fixturePids(f)));
  return sets.flatMap((s) => s.all);
}

function ms(t0: bigint): string {
  return (Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0);
}

/** The pseudo-terminal module the extension uses (a terminal's shell is started through one too). */
const NODE_PTY = path.join(REPO, 'node_modules', '@lydell', 'node-pty');

describe("the owner's watchdog", () => {
  for (const tier of ['cgroup', 'group'] as const) {
    it(`ends the trees of a SIGKILLed 'agent-trees run' and removes its record, with no other sweep (${tier} tier)`, async function () {
      if (tier === 'cgroup') requireCgroupTier(this);
      const records = tmpDir();
      const { command, pidfiles } = mixedTree();
      const run = startCli(['run', '--records', records, ...(tier === 'group' ? ['--no-cgroup'] : []), '--', ...command]);
      const pids = await allPidsOf(pidfiles);
      const record = path.join(records, `${run.child.pid}.json`);
      await waitFor('the record', () => fs.existsSync(record));
      const [watchdog] = await waitFor('the watchdog', () => {
        const w = watchdogsOf(run.child.pid!);
        return w.length === 1 && w;
      });
      const killed = process.hrtime.bigint();
      run.child.kill('SIGKILL');
      assert.deepStrictEqual(await waitAllDead(pids, 10_000), [], 'every member ended');
      const deadAfter = ms(killed);
      await waitFor("the record (and the sweep's claim of it) to be removed", () => fs.readdirSync(records).length === 0);
      console.log(`      (${pids.length} processes dead ${deadAfter} ms after the SIGKILL, record gone after ${ms(killed)} ms)`);
      await waitFor('the watchdog to exit', () => !table.read(watchdog));
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });
  }

  it("ends the trees of a SIGKILLed TreeOwner even while the owner's pty child lives on", async function () {
    // A child the owner spawned some other way (here through node-pty, as a terminal would be) must not hold a
    // copy of the owner's end of the pipe, or the owner's death would go unnoticed.
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, 'ignore-term', pidfile, 'off'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, WATCHDOG_CLI: CLI, PTY_CHILD: NODE_PTY },
    });
    register(owner.pid!);
    const line = await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d))));
    const [, , watchdogPid, ptyPid] = line.trim().split(' ').map(Number);
    assert.ok(watchdogPid > 0, 'the owner has a watchdog');
    assert.ok(ptyPid > 0, 'the owner has a pty child');
    register(ptyPid);
    const pids = await fixturePids(pidfile);
    // Its shell ignores SIGHUP, then execs sleep: until then the owner's death (its pty master closing) ends it.
    await waitFor('the pty child to ignore SIGHUP', () => path.basename(fs.readlinkSync(`/proc/${ptyPid}/exe`)) === 'sleep');
    owner.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(pids.all, 10_000), [], 'the SIGTERM-ignoring tree ended');
    await waitFor('the record to be removed', () => fs.readdirSync(records).length === 0);
    await waitFor('the watchdog to exit', () => !table.read(watchdogPid));
    assert.strictEqual(aliveOf([ptyPid]).length, 1, 'the pty child (no tree member) lived on, holding no copy of the pipe');
    process.kill(ptyPid, 'SIGKILL');
  });

  it("no process but the owner holds the owner's end of the pipe: not its trees, not a pty child", async function () {
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: 'off', watchdog: { cliPath: CLI } });
    const piped = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'pipe' });
    const inherited = owner.spawn({ command: 'sleep', args: ['60'], stdio: ['ignore', 'inherit', 'inherit'] });
    const children = [piped.child.pid!, inherited.child.pid!];
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the pseudo-terminal module, by path
    const nodePty = require(NODE_PTY) as {
      spawn(file: string, args: string[], options: object): { pid: number; kill(signal?: string): void };
    };
    const pty = nodePty.spawn('sleep', ['60'], {});
    children.push(pty.pid);
    children.forEach(register);
    try {
      // node-pty returns right after its fork, before the child's exec (Node's spawn returns after it): until the
      // exec the child holds a copy of every descriptor, close-on-exec or not.
      await waitFor(
        'the pty child to exec',
        () => fs.readlinkSync(`/proc/${pty.pid}/exe`) === '/usr/bin/sleep' || fs.readlinkSync(`/proc/${pty.pid}/exe`) === '/bin/sleep',
      );
      const watchdog = owner.watchdogPid!;
      assert.ok(watchdog, 'a watchdog runs');
      const fd = (owner as unknown as { watchdog: { child: { stdin: { _handle: { fd: number } } } } }).watchdog.child.stdin._handle.fd;
      const ownerEnd = fs.readlinkSync(`/proc/self/fd/${fd}`);
      assert.match(ownerEnd, /^socket:\[\d+\]$/);
      assert.match(
        fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'),
        /^flags:\s+0*[0-7]*2[0-7]{6}$/m,
        'close-on-exec (O_CLOEXEC = 02000000)',
      );
      const holders: number[] = [];
      for (const name of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue;
        let fds: string[];
        try {
          fds = fs.readdirSync(`/proc/${name}/fd`);
        } catch {
          continue;
        }
        if (
          fds.some((f) => {
            try {
              return fs.readlinkSync(`/proc/${name}/fd/${f}`) === ownerEnd;
            } catch {
              return false;
            }
          })
        )
          holders.push(Number(name));
      }
      assert.deepStrictEqual(holders, [process.pid], `only the owner holds its end (children: ${children.join(', ')})`);
    } finally {
      pty.kill('SIGKILL');
      await owner.dispose(0);
    }
  });

  it('a clean exit leaves no watchdog: the CLI after its command exits, an owner after its last tree ended or on dispose', async () => {
    const records = tmpDir();
    const run = startCli(['run', '--records', records, '--', 'sh', '-c', 'sleep 0.3']);
    await waitFor('the watchdog of the CLI', () => watchdogsOf(run.child.pid!).length === 1);
    assert.strictEqual((await run.done).code, 0);
    await waitFor('no watchdog of the CLI', () => watchdogsOf(run.child.pid!).length === 0);
    assert.deepStrictEqual(fs.readdirSync(records), []);

    const owner = new TreeOwner({
      core: processCore(),
      recordsDir: tmpDir(),
      cgroups: 'off',
      watchdog: { cliPath: CLI },
      watchIntervalMs: 50,
    });
    const one = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    const first = owner.watchdogPid!;
    assert.ok(first > 0);
    await owner.kill(one.record.id, 0);
    await waitFor('the watchdog to quit once the record is gone', () => !table.read(first));
    assert.strictEqual(owner.watchdogPid, undefined);
    const a = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    const second = owner.watchdogPid!;
    assert.ok(second > 0 && second !== first, 'the next tree starts a new one');
    register(a.child.pid!);
    await owner.dispose(0);
    await waitFor('no watchdog after dispose', () => !table.read(second));
    assert.deepStrictEqual(watchdogsOf(process.pid), []);
  });

  it('never acts while its owner lives, even when the pipe closes', async function () {
    this.timeout(OWNER_EXIT_WAIT_MS + 20_000);
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: 'off', watchdog: { cliPath: CLI } });
    const tree = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    register(tree.child.pid!);
    const watchdog = owner.watchdogPid!;
    // Close the owner's end without dying: the watchdog runs its sweep, which must find the owner alive.
    (owner as unknown as { watchdog: { child: { stdin: { destroy(): void } } } }).watchdog.child.stdin.destroy();
    await waitFor('the watchdog to give up', () => !table.read(watchdog), OWNER_EXIT_WAIT_MS + 10_000);
    assert.strictEqual(aliveOf([tree.child.pid!]).length, 1, "the live owner's tree is untouched");
    assert.ok(fs.existsSync(path.join(records, `${process.pid}.json`)), 'its record too');
    await owner.dispose(0);
  });

  it('two watchdog sweeps of one dead owner act once (the claim)', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--no-watchdog', '--no-cgroup', '--', FIXTURE, 'daemon', pidfile]);
    const pids = await fixturePids(pidfile);
    await waitFor('record', () => fs.existsSync(path.join(records, `${run.child.pid}.json`)));
    const spec = processKey({ pid: run.child.pid!, startKey: processCore().table.read(run.child.pid!)!.startKey });
    run.child.kill('SIGKILL');
    const [a, b] = await Promise.all([
      runCli(['sweep', '--owner', spec, '--records', records, '--json', '--grace', '1']),
      runCli(['sweep', '--owner', spec, '--records', records, '--json', '--grace', '1']),
    ]);
    assert.strictEqual(a.code, 0, a.stderr);
    assert.strictEqual(b.code, 0, b.stderr);
    const handled = [...JSON.parse(a.stdout).trees, ...JSON.parse(b.stdout).trees];
    assert.strictEqual(handled.length, 1, 'one sweep handled the tree, the other found it claimed');
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it("sweeps only its owner's record", async () => {
    const records = tmpDir();
    const runs = [
      startCli(['run', '--records', records, '--no-watchdog', '--no-cgroup', '--', 'sleep', '60']),
      startCli(['run', '--records', records, '--no-watchdog', '--no-cgroup', '--', 'sleep', '60']),
    ];
    await waitFor('records', () => runs.every((r) => fs.existsSync(path.join(records, `${r.child.pid}.json`))));
    const specs = runs.map((r) => processKey({ pid: r.child.pid!, startKey: processCore().table.read(r.child.pid!)!.startKey }));
    for (const r of runs) r.child.kill('SIGKILL');
    await Promise.all(runs.map((r) => r.exited));
    const swept = JSON.parse((await runCli(['sweep', '--owner', specs[0], '--records', records, '--json', '--grace', '0'])).stdout);
    assert.deepStrictEqual(
      swept.trees.map((t: { ownerPid: number }) => t.ownerPid),
      [runs[0].child.pid],
    );
    assert.deepStrictEqual(
      fs.readdirSync(records).filter((n) => !n.endsWith('.current')),
      [`${runs[1].child.pid}.json`],
      "the other dead owner's record is left for a full sweep (with its .current link)",
    );
    const rest = await sweep(new RecordStore(records), { graceMs: 0 });
    assert.strictEqual(rest.trees.length, 1);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it('a watchdog that is itself killed leaves the record to the next sweep, and the next tree gets a new one', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--no-cgroup', '--', FIXTURE, 'deep', pidfile]);
    const pids = await fixturePids(pidfile);
    const [watchdog] = await waitFor('the watchdog', () => {
      const w = watchdogsOf(run.child.pid!);
      return w.length === 1 && w;
    });
    process.kill(watchdog, 'SIGKILL');
    await waitFor('the watchdog to be gone', () => !table.read(watchdog));
    run.child.kill('SIGKILL');
    await run.exited;
    assert.strictEqual(aliveOf(pids.all).length, pids.all.length, 'without a watchdog the tree outlives its owner');
    const swept = await runCli(['sweep', '--records', records, '--grace', '0']);
    assert.match(swept.stdout, /killed [1-9]/);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);

    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchdog: { cliPath: CLI } });
    const t1 = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    register(t1.child.pid!);
    const first = owner.watchdogPid!;
    process.kill(first, 'SIGKILL');
    await waitFor('the owner to see its watchdog gone', () => owner.watchdogPid === undefined);
    const t2 = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    register(t2.child.pid!);
    assert.ok(owner.watchdogPid && owner.watchdogPid !== first, 'a new watchdog with the next tree');
    await owner.dispose(0);
  });

  it('ends the tree of a SIGKILLed run whose program files were removed meanwhile (an extension updated or uninstalled)', async () => {
    const install = tmpDir();
    fs.cpSync(path.dirname(CLI), path.join(install, 'dist'), { recursive: true });
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = spawn(
      process.execPath,
      [path.join(install, 'dist', 'cli.js'), 'run', '--records', records, '--', FIXTURE, 'ignore-term', pidfile],
      {
        stdio: 'ignore',
      },
    );
    register(run.pid!);
    const pids = await fixturePids(pidfile);
    await waitFor('the record', () => fs.existsSync(path.join(records, `${run.pid}.json`)));
    await waitFor('the watchdog', () => watchdogsOf(run.pid!).length === 1);
    fs.rmSync(install, { recursive: true, force: true });
    run.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(pids.all, 10_000), [], 'every member ended');
    await waitFor('the record to be removed', () => fs.readdirSync(records).length === 0);
  });

  it('leaves a trace in the records folder when its sweep cannot run, and the next sweep reports it', async () => {
    // The Node the watchdog was to run is gone (an editor updated in place): the sweep cannot start.
    const bin = tmpDir();
    const node = path.join(bin, 'node');
    try {
      fs.linkSync(process.execPath, node);
    } catch {
      fs.copyFileSync(process.execPath, node);
    }
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = spawn(node, [CLI, 'run', '--records', records, '--no-cgroup', '--', FIXTURE, 'deep', pidfile], { stdio: 'ignore' });
    register(run.pid!);
    const pids = await fixturePids(pidfile);
    await waitFor('the record', () => fs.existsSync(path.join(records, `${run.pid}.json`)));
    const [watchdog] = await waitFor('the watchdog', () => {
      const w = watchdogsOf(run.pid!);
      return w.length === 1 && w;
    });
    fs.rmSync(bin, { recursive: true, force: true });
    run.kill('SIGKILL');
    await waitFor('the watchdog to give up', () => !table.read(watchdog));
    const swept = await runCli(['sweep', '--records', records, '--grace', '0']);
    assert.match(
      swept.stdout,
      new RegExp(`watchdog of process ${run.pid} could not end its trees: .*${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      swept.stdout,
    );
    assert.match(swept.stdout, /killed [1-9]/, 'the sweep ended the tree');
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(records), [], 'the trace is removed once reported');
  });

  it('leaves its trace alone to any other sweep while it still works, and removes it once it has succeeded', async () => {
    // The watchdog's Node is held at a gate (a wrapper put where the owner's Node was), so the watchdog is busy with
    // its owner's record for as long as the test likes: its trace file is there, written to, not finished.
    const bin = tmpDir();
    const node = path.join(bin, 'node');
    try {
      fs.linkSync(process.execPath, node);
    } catch {
      fs.copyFileSync(process.execPath, node);
    }
    const records = tmpDir();
    const gate = path.join(tmpDir(), 'go');
    const pidfile = path.join(tmpDir(), 'pids');
    const run = spawn(node, [CLI, 'run', '--records', records, '--no-cgroup', '--', FIXTURE, 'ignore-term', pidfile], { stdio: 'ignore' });
    register(run.pid!);
    const pids = await fixturePids(pidfile);
    await waitFor('the record', () => fs.existsSync(path.join(records, `${run.pid}.json`)));
    const [watchdog] = await waitFor('the watchdog', () => {
      const w = watchdogsOf(run.pid!);
      return w.length === 1 && w;
    });
    register(watchdog);
    const wrapper = path.join(bin, 'node.new');
    fs.writeFileSync(wrapper, `#!/bin/sh\nwhile [ ! -e "${gate}" ]; do sleep 0.05; done\nexec "${process.execPath}" "$@"\n`, {
      mode: 0o755,
    });
    fs.renameSync(wrapper, node);
    run.kill('SIGKILL');
    const trace = await waitFor('the watchdog at work', () => fs.readdirSync(records).find((f) => /^watchdog-.*\.log$/.test(f)));
    try {
      const swept = await runCli(['sweep', '--records', records, '--grace', '0']);
      assert.doesNotMatch(swept.stdout, /watchdog of process/, `a sweep reported a watchdog that was still at work: ${swept.stdout}`);
      assert.ok(fs.existsSync(path.join(records, trace)), 'its trace is left to it');
    } finally {
      fs.writeFileSync(gate, '');
    }
    assert.deepStrictEqual(await waitAllDead(pids.all, 10_000), [], 'the watchdog ended the tree');
    assert.deepStrictEqual(await waitAllDead([watchdog], 10_000), []);
    await waitFor('the record and the trace to be removed', () => fs.readdirSync(records).length === 0);
  });

  it("outlives a kill of its owner's whole cgroup (root cgroup tier): it is in a cgroup of its own", async function () {
    const tier = requireCgroupTier(this, 'directory');
    // The owner runs in a cgroup of the test's, as a service's process would; killing that cgroup is a
    // `systemctl stop`. Its tree (own cgroup) and its watchdog (the watchdogs cgroup) are outside it.
    const ownerCgroup = path.join(tier.base, `test-owner-${process.pid}-${Date.now()}`);
    fs.mkdirSync(ownerCgroup);
    try {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const owner = spawn(
        '/bin/sh',
        [
          '-c',
          'echo $$ > "$0/cgroup.procs" && exec "$@"',
          ownerCgroup,
          process.execPath,
          path.join(REPO, 'test', 'fixtures', 'owner.js'),
          records,
          'ignore-term',
          pidfile,
          'auto',
        ],
        { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, WATCHDOG_CLI: CLI } },
      );
      register(owner.pid!);
      const [, gotTier] = (await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d))))).trim().split(' ');
      assert.strictEqual(gotTier, 'cgroup');
      const pids = await fixturePids(pidfile);
      fs.writeFileSync(path.join(ownerCgroup, 'cgroup.kill'), '1');
      assert.deepStrictEqual(await waitAllDead(pids.all, 10_000), []);
      await waitFor('the record to be removed', () => fs.readdirSync(records).length === 0);
    } finally {
      fs.writeFileSync(path.join(ownerCgroup, 'cgroup.kill'), '1');
      await waitFor('the owner cgroup to empty', () => fs.readFileSync(path.join(ownerCgroup, 'cgroup.procs'), 'utf8').trim() === '');
      fs.rmdirSync(ownerCgroup);
    }
  });

  it('a bad --owner: exit 2 with a one-line error', async () => {
    const r = await runCli(['sweep', '--owner', 'nonsense', '--records', tmpDir()]);
    assert.strictEqual(r.code, 2);
    assert.match(r.stderr, /^agent-trees: --owner takes PID:START_KEY .*"nonsense"\n/);
  });
});

describe("the watchdog's wait for its owner to finish exiting, across a wall-clock step", () => {
  // The watchdog waits for its owner (whose end of the pipe closes a moment before it is gone) to be gone. On the
  // wall clock, a clock running fast (faketime x1000, as a step forward would) would end that wait at once with
  // "owner still running: nothing swept", and the dead owner's trees would run on until some later sweep.
  it('waits on a monotonic clock: an owner that ends within the wait is proven gone', async function () {
    requireTools(this, 'faketime');
    const owner = spawn('sleep', ['1.5'], { stdio: 'ignore' });
    register(owner.pid!);
    const startKey = (await waitFor('the owner', () => table.read(owner.pid!))).startKey;
    const ran = await runBounded(
      'faketime',
      ['-f', '+0 x1000', process.execPath, CLI, 'sweep', '--owner', `${owner.pid}:${startKey}`, '--records', tmpDir()],
      20_000,
      { env: { ...process.env, FAKETIME_DONT_FAKE_MONOTONIC: '1' } },
    );
    assert.strictEqual(ran.timedOut, false);
    assert.doesNotMatch(ran.stderr, /still running: nothing swept/, ran.stderr);
    assert.strictEqual(ran.code, 0, ran.stderr);
  });
});

describe('a watchdog sweep for an owner whose pid a new owner now holds', () => {
  it("proves the old owner gone and leaves the new owner's record (and its .current link) alone", async () => {
    const dir = tmpDir();
    const store = new RecordStore(dir);
    const newOwner = spawn('sleep', ['30'], { stdio: 'ignore' });
    register(newOwner.pid!);
    const startKey = (await waitFor('the new owner', () => table.read(newOwner.pid!))).startKey;
    const live = identity(newOwner.pid!, startKey);
    store.write(live, [tree('new-owners')]);
    const before = fs.readdirSync(dir).sort();
    try {
      const ran = await runBounded(process.execPath, [
        CLI,
        'sweep',
        '--owner',
        `${newOwner.pid}:${startKey - 1}`,
        '--records',
        dir,
        '--json',
      ]);
      assert.strictEqual(ran.code, 0, ran.stderr);
      assert.deepStrictEqual(JSON.parse(ran.stdout).trees, [], 'nothing swept');
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), before, 'the folder is as it was');
      assert.strictEqual(store.read(newOwner.pid!)!.trees[0].id, 'new-owners');
    } finally {
      newOwner.kill('SIGKILL');
    }
  });
});
