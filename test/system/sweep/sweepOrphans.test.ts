import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { KillReport, processCore, RecordStore, TreeOwner, TreeRecord } from '../../../src/proc';
import { TreeIdentity } from '../../../src/proc/members/membership';
import { processTag } from '../../../src/proc/records/fileNames';

const processTable = () => processCore().table;
import { REPO, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { runCli } from '../../support/cli';
import { cliOwner, deadPid, identity, nowTicks, sweep } from '../../support/records';

describe('sweeping orphaned trees', () => {
  it('reaps the tree of an owner that was SIGKILLed, from another process, and deletes its record', async () => {
    const records = tmpDir();
    const { run, pids, ownerPid } = await cliOwner(records, 'daemon', ['--no-cgroup']);
    run.child.kill('SIGKILL');
    await run.exited;
    assert.strictEqual(aliveOf(pids.all).length, pids.all.length, 'the tree outlives its owner');
    const swept = await runCli(['sweep', '--records', records, '--json', '--grace', '1']);
    assert.strictEqual(swept.code, 0, swept.stderr);
    const result = JSON.parse(swept.stdout);
    assert.strictEqual(result.trees.length, 1);
    assert.strictEqual(result.trees[0].ownerPid, ownerPid);
    assert.strictEqual(result.trees[0].outcome, 'killed');
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(records), [], 'record deleted');
  });

  it("leaves a live owner's trees alone", async () => {
    const records = tmpDir();
    const { run, pids } = await cliOwner(records);
    const swept = JSON.parse((await runCli(['sweep', '--records', records, '--json'])).stdout);
    assert.strictEqual(swept.liveOwners, 1);
    assert.strictEqual(swept.trees.length, 0);
    assert.strictEqual(aliveOf(pids.all).length, pids.all.length);
    run.child.kill('SIGTERM');
    assert.strictEqual((await run.done).code, 143);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('never treats its own record as orphaned', async () => {
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: 'off' });
    const tree = owner.spawn({ command: 'sleep', args: ['60'], stdio: 'ignore' });
    register(tree.child.pid!);
    const result = await sweep(owner.store, { self: owner.self });
    assert.strictEqual(result.trees.length, 0);
    assert.ok(aliveOf([tree.child.pid!]).length === 1);
    await owner.dispose(500);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  for (const format of ['boot ticks', 'an older version (epoch ms only)'] as const) {
    it(`never signals a recorded group id that now belongs to a newer, unrelated group (record in ${format})`, async () => {
      const records = tmpDir();
      const store = new RecordStore(records);
      const deadOwner = deadPid();
      // An unrelated process that leads its own group, started after the record's tracking.
      const trackedAt = Date.now() - 1_000;
      const trackedAtTicks = nowTicks() - 100;
      const unrelated = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
      register(unrelated.pid!);
      try {
        await waitFor('unrelated', () => processTable().read(unrelated.pid!));
        const record: TreeRecord = {
          id: 'reused-group',
          label: 'old',
          command: ['old'],
          rootPid: unrelated.pid!,
          pgid: unrelated.pid!,
          sid: unrelated.pid!,
          rootStartTime: trackedAt - 10,
          trackedAt,
          envTag: 'AGENT_TREES_TREE_ID=reused-group',
          cgroup: null,
          ...(format === 'boot ticks' ? { rootStartTicks: trackedAtTicks - 1, trackedAtTicks } : {}),
        };
        store.write(format === 'boot ticks' ? identity(deadOwner, trackedAtTicks - 50) : { pid: deadOwner, startTime: trackedAt - 1000 }, [
          record,
        ]);
        const result = await sweep(store);
        assert.strictEqual(result.trees[0].outcome, 'gone');
        assert.match(result.trees[0].note ?? '', format === 'boot ticks' ? /started after the tree was tracked/ : /cannot be compared/);
        assert.strictEqual(aliveOf([unrelated.pid!]).length, 1, 'the unrelated process lives');
        assert.deepStrictEqual(fs.readdirSync(records), []);
      } finally {
        unrelated.kill('SIGKILL');
      }
    });
  }

  it('reports and skips a corrupt record while sweeping the good ones', async () => {
    const records = tmpDir();
    const { run, pids } = await cliOwner(records, 'deep', ['--no-cgroup']);
    run.child.kill('SIGKILL');
    await run.exited;
    fs.writeFileSync(path.join(records, '99999999.json'), '{"version":1,"owner":');
    const swept = await runCli(['sweep', '--records', records, '--grace', '1']);
    assert.match(swept.stdout, /problem\t.*99999999\.json\tnot valid JSON/);
    assert.match(swept.stdout, /killed [1-9]/);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it("sets aside a corrupt file under a dead sweeper's claim name once, says what and where, and never touches it again", async () => {
    const records = tmpDir();
    const deadSweeper = identity(deadPid(), nowTicks() - 500);
    const claim = path.join(records, `${deadPid()}.json.claimed-${processTag(deadSweeper)}-0123456789ab`);
    fs.writeFileSync(claim, '{"version":1,"owner":', { mode: 0o600 });
    // Each sweep in a process of its own, as the CLI and each window run it: a claim left by one of them has a
    // claimant that is gone by the next.
    const first = await runCli(['sweep', '--records', records]);
    assert.strictEqual(first.code, 0, first.stderr);
    const [aside, ...more] = fs.readdirSync(records);
    assert.deepStrictEqual(more, []);
    assert.match(aside, /\.bad-\d+-[0-9a-f]{12}$/);
    const problems = first.stdout.split('\n').filter((l) => l.startsWith('problem\t'));
    assert.strictEqual(problems.length, 1, first.stdout);
    assert.match(problems[0], /^problem\t.*\.json\.claimed-\S+\tclaimed record: not valid JSON \(21 bytes\); moved to .*\.bad-/);
    assert.ok(problems[0].includes(`\t${claim}\t`), 'says where it was found');
    assert.ok(problems[0].includes(path.join(records, aside)), 'says where it went');
    const before = fs.statSync(path.join(records, aside));
    for (let i = 0; i < 2; i++) {
      const again = await runCli(['sweep', '--records', records]);
      assert.doesNotMatch(again.stdout, /problem/, 'reported once');
    }
    assert.deepStrictEqual(fs.readdirSync(records), [aside], 'never moved again');
    assert.strictEqual(fs.statSync(path.join(records, aside)).ino, before.ino);
  });

  it('lets two concurrent sweeps kill each tree once', async () => {
    const records = tmpDir();
    const owners = await Promise.all([
      cliOwner(records, 'deep', ['--no-cgroup']),
      cliOwner(records, 'setsid', ['--no-cgroup']),
      cliOwner(records, 'daemon', ['--no-cgroup']),
    ]);
    for (const o of owners) o.run.child.kill('SIGKILL');
    await Promise.all(owners.map((o) => o.run.exited));
    const [a, b] = await Promise.all([
      runCli(['sweep', '--records', records, '--json', '--grace', '1']),
      runCli(['sweep', '--records', records, '--json', '--grace', '1']),
    ]);
    const handled = [...JSON.parse(a.stdout).trees, ...JSON.parse(b.stdout).trees].map((t: { ownerPid: number }) => t.ownerPid).sort();
    assert.deepStrictEqual(handled, owners.map((o) => o.ownerPid).sort(), 'each owner swept exactly once');
    assert.deepStrictEqual(await waitAllDead(owners.flatMap((o) => o.pids.all)), []);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it('an owner that exits without disposing SIGKILLs its trees on the way out; the sweep then drops the record', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, 'ignore-term', pidfile, 'off'], {
      stdio: 'ignore',
      env: { ...process.env, KILL_TREES_ON_EXIT: '1', EXIT_WHEN_READY: '1' },
    });
    register(owner.pid!);
    // Listened for from the start: it exits as soon as the fixture is ready, which may be before its pids are read.
    const exited = new Promise((resolve) => owner.once('exit', resolve));
    const pids = await fixturePids(pidfile);
    await exited;
    assert.deepStrictEqual(await waitAllDead(pids.all), [], 'SIGKILLed in the exit event, though SIGTERM is ignored');
    assert.ok(fs.existsSync(path.join(records, `${owner.pid}.json`)), 'the exit path does not write: the record stays');
    const result = await sweep(new RecordStore(records), { graceMs: 100 });
    assert.strictEqual(result.trees[0].outcome, 'gone');
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it("refuses a dead owner's tree whose recorded root is PID 1 or an ancestor of the sweeper (exact start tick): reported refused with the reason, record kept", async () => {
    const records = tmpDir();
    const store = new RecordStore(records);
    const t = processTable();
    const roots = [t.read(1)!, t.read(process.ppid)!];
    const ownerPid = deadPid();
    store.write(
      identity(ownerPid, nowTicks() - 1),
      roots.map((root, i) => ({
        id: `protected-${i}`,
        label: `root ${root.pid}`,
        command: ['x'],
        rootPid: root.pid,
        // PID 1 of a container may sit in group and session 0, which no record can name.
        pgid: root.pgid || root.pid,
        sid: root.sid || root.pid,
        rootStartTime: root.startTime,
        rootStartTicks: root.startKey,
        trackedAt: Date.now(),
        trackedAtTicks: nowTicks(),
        envTag: `AGENT_TREES_TREE_ID=protected-${i}`,
        cgroup: null,
      })),
    );
    // Asked to kill, this killer only says so: whatever the sweep decides, nothing is signalled here.
    const asked: string[] = [];
    const killer = {
      killTrees: async (trees: { tree: TreeIdentity }[]): Promise<KillReport[]> =>
        trees.map(({ tree }) => {
          asked.push(tree.id);
          return { treeId: tree.id, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: [] };
        }),
    };
    const result = await sweep(store, { killer });
    assert.deepStrictEqual(asked, [], 'no kill was even attempted');
    assert.deepStrictEqual(
      result.trees.map((tr) => [tr.treeId, tr.outcome, tr.killed]),
      [
        ['protected-0', 'refused', 0],
        ['protected-1', 'refused', 0],
      ],
    );
    assert.match(result.trees[0].note ?? '', /recorded root .*pid 1\b/);
    assert.match(result.trees[1].note ?? '', new RegExp(`recorded root .*pid ${process.ppid} is this process or its ancestor`));
    assert.deepStrictEqual(fs.readdirSync(records), [`${ownerPid}.json`], 'the record is kept');
    assert.deepStrictEqual(
      store.list().records[0].record.trees.map((tr) => tr.id),
      ['protected-0', 'protected-1'],
    );
  });

  it('sweeps an owner whose pid now belongs to a newer process', async () => {
    const records = tmpDir();
    const { run, pids, ownerPid } = await cliOwner(records, 'deep', ['--no-cgroup']);
    run.child.kill('SIGKILL');
    await run.exited;
    // Pretend the pid was reused: the recorded owner started long before the process now holding the pid.
    const file = path.join(records, `${ownerPid}.json`);
    const rec = JSON.parse(fs.readFileSync(file, 'utf8'));
    const living = spawn('sleep', ['60'], { stdio: 'ignore' });
    register(living.pid!);
    try {
      // The recorded owner (its start tick kept) started before the process now holding the pid.
      rec.owner = { ...rec.owner, pid: living.pid };
      fs.rmSync(file);
      fs.writeFileSync(path.join(records, `${living.pid}.json`), JSON.stringify(rec), { mode: 0o600 });
      const result = await sweep(new RecordStore(records));
      assert.strictEqual(result.trees.length, 1);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.strictEqual(aliveOf([living.pid!]).length, 1, 'the new holder of the pid is not touched');
    } finally {
      living.kill('SIGKILL');
    }
  });
});

describe('the cost of a sweep of many trees', function () {
  this.timeout(60_000);

  /** Trees of a dead owner's record, each a SIGTERM-ignoring fixture; the pids of all their processes. */
  async function deadOwnersTrees(count: number) {
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const trees = [];
    const pids: number[] = [];
    for (let i = 0; i < count; i++) {
      const pidfile = path.join(tmpDir(), 'pids');
      const tree = owner.spawn({
        command: path.join(REPO, 'test', 'fixtures', 'tree.sh'),
        args: ['ignore-term', pidfile],
        stdio: 'ignore',
        cgroups: 'off',
      });
      register(tree.child.pid!);
      pids.push(...(await fixturePids(pidfile)).all);
      trees.push(tree.record);
    }
    for (const t of trees) owner.release(t.id);
    const deadOwner = deadPid();
    new RecordStore(records).write(identity(deadOwner, nowTicks() - 500), trees);
    return { store: new RecordStore(records), pids };
  }

  /** Full process-table scans taken while `run` runs, on this process's shared table. */
  async function scansDuring(run: () => Promise<unknown>): Promise<number> {
    const shared = processTable();
    const snapshot = shared.snapshot.bind(shared);
    let scans = 0;
    shared.snapshot = () => (scans++, snapshot());
    try {
      await run();
    } finally {
      shared.snapshot = snapshot;
    }
    return scans;
  }

  it('resolves all its trees from one scan of the process table per step, however many trees there are', async () => {
    const counted: number[] = [];
    for (const count of [1, 6]) {
      const { store, pids } = await deadOwnersTrees(count);
      counted.push(await scansDuring(() => sweep(store, { graceMs: 200 })));
      assert.deepStrictEqual(await waitAllDead(pids), [], `${count} trees ended`);
      assert.deepStrictEqual(fs.readdirSync(store.dir), []);
    }
    // A scan per tree would make it about six times as many. A freeze takes rounds until no tree gains a member, and
    // six trees that fork as they are stopped may take a round or two more than one: that is not a scan per tree.
    const [one, six] = counted;
    assert.ok(six <= 2 * one, `a sweep of 1 tree scanned the process table ${one} times, of 6 trees ${six} times`);
  });
});
