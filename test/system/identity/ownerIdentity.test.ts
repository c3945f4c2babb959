/**
 * The adversarial probes of issue 10 (items 1–7), each on real processes and, where it is the CLI that was
 * attacked, through the real CLI: clock steps, pid namespaces, EMFILE, another user's records, FIFOs,
 * claim collisions and stale reads, and a `ps` that must change nothing.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync, spawn } from 'child_process';
import { processCore, RecordStore, selfIdentity, TreeRecord } from '../../../src/proc';
import { processTag } from '../../../src/proc/records/fileNames';
import { OwnerRecord } from '../../../src/proc/records/schema';

const processTable = () => processCore().table;
import { aliveOf, CLI, register, REPO, tmpDir, waitAllDead, waitFor } from '../../support/started';
import { cliOwner, deadPid, hasTool, identity, runBounded, sweep, syntheticTable } from '../../support/records';

const node = process.execPath;
const isRoot = process.getuid?.() === 0;

/** Owners started by the running test: whatever a failing test left of them is ended after it. */
const started: Awaited<ReturnType<typeof cliOwner>>[] = [];
async function startOwner(records: string) {
  const o = await cliOwner(records);
  started.push(o);
  return o;
}

/** Ends a CLI owner the way a user does (SIGTERM: it kills its tree) and checks nothing of it is left. */
async function endOwner(o: Awaited<ReturnType<typeof cliOwner>>): Promise<void> {
  o.run.child.kill('SIGTERM');
  await o.run.done;
  assert.deepStrictEqual(await waitAllDead(o.pids.all), []);
}

/** A process that leads its own session and group (`setsid`), unrelated to any record. */
async function unrelatedLeader() {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  register(child.pid!);
  const info = await waitFor('the unrelated process', () => processTable().read(child.pid!));
  return { child, info };
}

const sweepJson = (ran: { stdout: string; stderr: string }) => {
  try {
    return JSON.parse(ran.stdout);
  } catch {
    throw new Error(`sweep printed no JSON: ${ran.stdout}\n${ran.stderr}`);
  }
};

describe('issue 10 probes on real processes', () => {
  afterEach(async () => {
    for (const o of started.splice(0)) {
      if (o.run.child.exitCode === null && o.run.child.signalCode === null) o.run.child.kill('SIGKILL');
      for (const pid of aliveOf(o.pids.all)) process.kill(pid, 'SIGKILL'); // alive with the start key registered
    }
  });

  describe('identity across clock steps (issue 10, item 1)', () => {
    before(function () {
      if (!hasTool('faketime')) this.skip(); // scripts/test-tools.sh installs it before the suite
    });

    it("a sweeper whose clock is 3 s ahead, or 1 h behind, leaves a live owner's tree alone", async () => {
      const records = tmpDir();
      const owner = await startOwner(records);
      for (const step of ['+3s', '-1h']) {
        const ran = await runBounded('faketime', ['-f', step, node, CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        const result = sweepJson(ran);
        assert.strictEqual(result.liveOwners, 1, `clock ${step}: ${ran.stdout}`);
        assert.deepStrictEqual(result.trees, [], `clock ${step}`);
        assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, `clock ${step}: the live tree is untouched`);
        assert.ok(fs.existsSync(owner.file), `clock ${step}: the record stays`);
      }
      await endOwner(owner);
    });

    for (const format of ['boot ticks', 'an older version (epoch ms only)'] as const) {
      it(`a sweeper whose clock is 1 h behind never takes a fresh setsid process for a dead record's group leader (record in ${format})`, async () => {
        const records = tmpDir();
        const { child: fresh, info } = await unrelatedLeader();
        // Tracked half a second before the fresh process started, by an owner now dead; its group id is the
        // fresh process's pid (a pid collision, as after wraparound).
        const trackedAtTicks = info.startKey - 50;
        const tree: TreeRecord = {
          id: 'collided',
          label: 'old',
          command: ['old'],
          rootPid: fresh.pid!,
          pgid: fresh.pid!,
          sid: fresh.pid!,
          rootStartTime: info.startTime - 600,
          trackedAt: info.startTime - 500,
          envTag: 'AGENT_TREES_TREE_ID=collided',
          cgroup: null,
          ...(format === 'boot ticks' ? { rootStartTicks: trackedAtTicks - 1, trackedAtTicks } : {}),
        };
        const dead = deadPid();
        new RecordStore(records).write(
          format === 'boot ticks'
            ? identity(dead, trackedAtTicks - 10, info.startTime - 700)
            : { pid: dead, startTime: info.startTime - 700 },
          [tree],
        );
        try {
          const ran = await runBounded('faketime', ['-f', '-1h', node, CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
          const result = sweepJson(ran);
          assert.strictEqual(result.killed, 0, ran.stdout);
          assert.deepStrictEqual(aliveOf([fresh.pid!]), [fresh.pid!], 'the fresh process lives');
        } finally {
          fresh.kill('SIGKILL');
        }
      });
    }
  });

  describe('identity across pid namespaces (issue 10, item 2)', () => {
    before(function () {
      if (!isRoot || !hasTool('unshare')) this.skip();
    });

    /** Host pids of every process under `pid` (a namespace's processes, seen from the host). */
    function descendants(pid: number): number[] {
      const children = processTable().snapshot().children();
      const out: number[] = [];
      const walk = (p: number) => {
        for (const c of children.get(p) ?? []) {
          out.push(c.pid);
          walk(c.pid);
        }
      };
      walk(pid);
      return out;
    }

    /** How many pids node takes (its threads) before `agent-trees run` spawns the root, in a fresh namespace. */
    async function pidsBeforeRoot(): Promise<number> {
      const ran = await runBounded('unshare', [
        '-pf',
        '--mount-proc',
        'sh',
        '-c',
        `echo 999 > /proc/sys/kernel/ns_last_pid; "${node}" "${CLI}" run --records "${tmpDir()}" --no-cgroup -- sh -c 'echo $$'; exit $?`,
      ]);
      return Number(ran.stdout.trim()) - 1000;
    }

    /**
     * Places an unrelated `setsid sleep` on the host at pid D+k, where D is free on the host: the namespaced
     * owner then gets pid D (dead, seen from the host) and its root pid D+k (the unrelated process's).
     */
    async function hostLeaderAt(k: number): Promise<{ dead: number; leader: ReturnType<typeof spawn> }> {
      for (let attempt = 0; attempt < 20; attempt++) {
        const dead = deadPid();
        try {
          process.kill(dead + k, 0);
          continue; // taken on the host
        } catch {
          /* free */
        }
        fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(dead + k - 1));
        const leader = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
        register(leader.pid!);
        if (leader.pid === dead + k) return { dead, leader };
        leader.kill('SIGKILL'); // another fork on the machine came first: try again
      }
      throw new Error('could not place a host process at a chosen pid (the machine forks too fast)');
    }

    it("a host sweep leaves a namespaced owner's live tree, and the host process holding its root pid, alone", async () => {
      const records = tmpDir();
      const k = await pidsBeforeRoot();
      assert.ok(k > 0 && k < 100, `node took ${k} pids before the root`);
      const { dead, leader } = await hostLeaderAt(k);
      const ns = spawn(
        'unshare',
        [
          '-pf',
          '--mount-proc',
          'sh',
          '-c',
          `echo ${dead - 1} > /proc/sys/kernel/ns_last_pid; "${node}" "${CLI}" run --records "${records}" --no-cgroup -- sleep 60; exit $?`,
        ],
        { stdio: 'ignore' },
      );
      register(ns.pid!);
      try {
        const file = path.join(records, `${dead}.json`);
        await waitFor('the namespaced owner to record its tree', () => fs.existsSync(file));
        const record = JSON.parse(fs.readFileSync(file, 'utf8')) as OwnerRecord;
        assert.strictEqual(record.trees[0].rootPid, leader.pid, 'the namespaced root has the host process pid');
        const inNamespace = descendants(ns.pid!);
        inNamespace.forEach(register);
        const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        const result = sweepJson(ran);
        assert.strictEqual(result.killed, 0, ran.stdout);
        assert.match(result.skipped[0]?.reason ?? '', /another pid namespace/);
        assert.deepStrictEqual(aliveOf([leader.pid!]), [leader.pid!], 'the unrelated host process lives');
        assert.deepStrictEqual(aliveOf(inNamespace), inNamespace, "the namespaced owner's tree lives");
        assert.ok(fs.existsSync(file), 'its record stays');
      } finally {
        leader.kill('SIGKILL');
        // The owner (node, a child of the namespace's init): SIGTERM ends its tree, then it and the namespace
        // exit. Should it not, SIGKILL to the namespace's init ends everything in the namespace.
        const [init] = descendants(ns.pid!);
        const owner = descendants(ns.pid!).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === node);
        if (owner) process.kill(owner, 'SIGTERM');
        const exited = new Promise((resolve) => (ns.exitCode !== null ? resolve(null) : ns.once('exit', resolve)));
        const timer = setTimeout(() => init && process.kill(init, 'SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    });
  });

  describe('an unreadable /proc is not a dead owner (issue 10, item 3)', () => {
    it('a sweep under EMFILE leaves a live owner and its tree alone', async () => {
      const records = tmpDir();
      const owner = await startOwner(records);
      const fixture = path.join(REPO, 'test', 'fixtures', 'emfileSweep.js');
      const ran = await runBounded('sh', ['-c', `ulimit -n 256 && exec "${node}" "${fixture}" "${records}"`]);
      const result = sweepJson(ran);
      assert.ok(result.descriptorsTaken > 0, 'the judging ran under EMFILE');
      assert.deepStrictEqual(result.ownerStates, ['unknown'], 'a read error is unknown, never dead');
      assert.strictEqual(result.killed, 0);
      assert.deepStrictEqual(result.trees, []);
      assert.match(result.skipped[0]?.reason ?? '', /cannot be (read|checked)/);
      assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all);
      assert.ok(fs.existsSync(owner.file), 'the record is not claimed');
      await endOwner(owner);
    });
  });

  describe('records nobody else can plant (issue 10, item 4)', () => {
    before(function () {
      if (!isRoot || !hasTool('setpriv')) this.skip();
    });

    it("refuses a record uid 12345 planted in a 1777 folder naming a root process's group, tracked in the future", async () => {
      const records = tmpDir();
      fs.chmodSync(records, 0o1777);
      const { child: victim } = await unrelatedLeader();
      const dead = deadPid();
      const planted = path.join(records, `${dead}.json`);
      const future = Date.now() + 86_400_000;
      const record = {
        version: 1,
        owner: { pid: dead, startTime: Date.now() - 5000 },
        trees: [
          {
            id: 'planted',
            label: 'x',
            command: ['x'],
            rootPid: victim.pid,
            pgid: victim.pid,
            sid: victim.pid,
            rootStartTime: future - 500,
            trackedAt: future,
            envTag: 'AGENT_TREES_TREE_ID=planted',
            cgroup: null,
          },
        ],
      };
      execFileSync('setpriv', [
        '--reuid=12345',
        '--regid=12345',
        '--clear-groups',
        node,
        '-e',
        `require('fs').writeFileSync(${JSON.stringify(planted)}, ${JSON.stringify(JSON.stringify(record))})`,
      ]);
      try {
        assert.strictEqual(fs.statSync(planted).uid, 12345);
        // As planted: a folder anyone can write.
        let ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        assert.match(JSON.stringify(sweepJson(ran).problems), /writable by other users \(mode 1777\)/);
        // The folder closed again, the file still another user's.
        fs.chmodSync(records, 0o700);
        ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        assert.match(JSON.stringify(sweepJson(ran).problems), /owned by uid 12345, not by this user/);
        // Even as our own file: tracked in the future is impossible, so it is not trusted.
        fs.chownSync(planted, 0, 0);
        fs.chmodSync(planted, 0o600);
        ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        assert.match(JSON.stringify(sweepJson(ran).problems), /trackedAt is in the future/);
        const killed = await runBounded(node, [CLI, 'kill', 'planted', '--records', records, '--grace', '1']);
        assert.match(killed.stderr, /impossible times .*not killed/);
        assert.deepStrictEqual(aliveOf([victim.pid!]), [victim.pid!], 'the root process lives');
        assert.ok(fs.existsSync(planted), 'the refused record is left where it is');
      } finally {
        victim.kill('SIGKILL');
      }
    });

    it('refuses a record of ours whose boot-tick times are after now', async () => {
      const records = tmpDir();
      const { child: victim, info } = await unrelatedLeader();
      const dead = deadPid();
      const later = info.startKey + 360_000; // an hour after the victim started: in the future
      new RecordStore(records).write(identity(dead, later - 10), [
        {
          id: 'ahead',
          label: 'x',
          command: ['x'],
          rootPid: victim.pid!,
          pgid: victim.pid!,
          sid: victim.pid!,
          rootStartTime: Date.now(),
          trackedAt: Date.now(),
          envTag: 'AGENT_TREES_TREE_ID=ahead',
          cgroup: null,
          rootStartTicks: later - 1,
          trackedAtTicks: later,
        },
      ]);
      try {
        const result = await sweep(new RecordStore(records));
        assert.match(result.problems[0]?.problem ?? '', /is after now/);
        assert.strictEqual(result.killed, 0);
        assert.deepStrictEqual(aliveOf([victim.pid!]), [victim.pid!]);
      } finally {
        victim.kill('SIGKILL');
      }
    });
  });

  describe('a FIFO where a record is expected (issue 10, item 5)', () => {
    it('sweep, ps and kill report it and go on; none of them blocks', async () => {
      const records = tmpDir();
      const owner = await startOwner(records);
      owner.run.child.kill('SIGKILL'); // a dead owner's tree next to the FIFO must still be swept
      await owner.run.exited;
      const fifo = path.join(records, '4242.json');
      execFileSync('mkfifo', [fifo]);
      for (const args of [['ps'], ['kill', 'no-such-tree'], ['sweep', '--grace', '1']]) {
        const ran = await runBounded(node, [CLI, ...args, '--records', records], 15_000);
        assert.ok(!ran.timedOut, `${args[0]} hung on the FIFO`);
        assert.match(ran.stdout + ran.stderr, /4242\.json: a FIFO, not a regular file|4242\.json\ta FIFO, not a regular file/, args[0]);
      }
      assert.ok(fs.statSync(fifo).isFIFO(), 'left in place');
      assert.deepStrictEqual(await waitAllDead(owner.pids.all), [], 'the good record was swept');
    });
  });

  describe('claims (issue 10, item 6)', () => {
    /** Rewrites a real record as one of owner pid `pid` (keeping its start tick: a dead earlier process). */
    const asOwner = (file: string, pid: number): OwnerRecord => {
      const rec = JSON.parse(fs.readFileSync(file, 'utf8')) as OwnerRecord;
      return { ...rec, owner: { ...rec.owner, pid } };
    };

    it('a fresh claim and a taken-over claim of one owner pid never replace each other: both trees are swept', async () => {
      const records = tmpDir();
      const [a, b] = [await startOwner(records), await startOwner(records)];
      for (const o of [a, b]) o.run.child.kill('SIGKILL');
      await Promise.all([a.run.exited, b.run.exited]);
      const shared = deadPid();
      const recA = asOwner(a.file, shared);
      const recB = asOwner(b.file, shared);
      fs.rmSync(a.file);
      fs.rmSync(b.file);
      // A: claimed by a sweeper that died mid-sweep (an older version's claim name); B: the record as it is now.
      const staleClaimant = deadPid();
      fs.writeFileSync(path.join(records, `${shared}.json.claimed-${staleClaimant}-${Date.now() - 5000}`), JSON.stringify(recA), {
        mode: 0o600,
      });
      fs.writeFileSync(path.join(records, `${shared}.json`), JSON.stringify(recB), { mode: 0o600 });
      const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      const result = sweepJson(ran);
      assert.deepStrictEqual(result.trees.map((t: { treeId: string }) => t.treeId).sort(), [recA.trees[0].id, recB.trees[0].id].sort());
      assert.deepStrictEqual(await waitAllDead([...a.pids.all, ...b.pids.all]), []);
      assert.deepStrictEqual(fs.readdirSync(records), [], 'no record lost, none left');
    });

    it("a stale claim holding a live owner's record is judged again and given back, not swept", async () => {
      const records = tmpDir();
      const owner = await startOwner(records);
      // A sweeper (with a stepped clock, say) claimed the live owner's record, then died.
      const staleClaimant = deadPid();
      fs.renameSync(owner.file, path.join(records, `${owner.ownerPid}.json.claimed-${staleClaimant}-${Date.now()}`));
      const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      const result = sweepJson(ran);
      assert.strictEqual(result.killed, 0, ran.stdout);
      assert.strictEqual(result.liveOwners, 1);
      assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, 'the live tree is untouched');
      assert.deepStrictEqual(
        fs.readdirSync(records).filter((n) => !n.endsWith('.current')),
        [path.basename(owner.file)],
        'the record is back under its name',
      );
      await endOwner(owner);
    });

    it('acts on what it claimed, not on what it read: a record rewritten by a live owner before the claim is given back', async () => {
      const records = tmpDir();
      const liveRecords = tmpDir();
      const owner = await startOwner(liveRecords);
      const live = fs.readFileSync(owner.file, 'utf8');
      const liveRecord = JSON.parse(live) as OwnerRecord;
      // What the sweep reads first: an earlier process with the live owner's pid (an earlier start tick), dead.
      const stale: OwnerRecord = { ...liveRecord, owner: { ...liveRecord.owner, startTicks: liveRecord.owner.startTicks! - 1 } };
      const file = path.join(records, path.basename(owner.file));
      fs.writeFileSync(file, JSON.stringify(stale), { mode: 0o600 });
      // Between the sweep's judging and its claim, the live owner writes its record under that name (as its
      // RecordStore does: with its .current link).
      const real = processTable();
      let judged = 0;
      const table = syntheticTable([]);
      table.snapshot = () => real.snapshot();
      table.read = (pid) => real.read(pid);
      table.probe = (pid) => {
        const p = real.read(pid) ?? 'gone';
        if (pid === owner.ownerPid && ++judged === 1) new RecordStore(records).write(liveRecord.owner, liveRecord.trees);
        return p;
      };
      const result = await sweep(new RecordStore(records), { table });
      assert.ok(judged >= 2, 'the claimed content was judged again');
      assert.deepStrictEqual(result.trees, []);
      assert.strictEqual(result.liveOwners, 1);
      assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, "the live owner's tree is untouched");
      assert.strictEqual(fs.readFileSync(file, 'utf8'), live, 'given back under its name');
      await endOwner(owner);
    });
    it('a FIFO or a folder under a claim name of a gone sweeper stays where it is, sweep after sweep; ps lists claims with their state', async () => {
      const records = tmpDir();
      const gone = deadPid();
      const fifo = path.join(records, `4242.json.claimed-${gone}-${Date.now() - 5000}`);
      const folder = path.join(records, `4243.json.claimed-${gone}-${Date.now() - 5000}`);
      execFileSync('mkfifo', [fifo]);
      fs.mkdirSync(folder);
      // A claim in progress: its sweeper (this process) runs.
      const live = path.join(records, `4244.json.claimed-${processTag(selfIdentity(processTable()))}-0123456789ab`);
      fs.writeFileSync(live, '{}', { mode: 0o600 });
      const names = fs.readdirSync(records).sort();
      for (let i = 0; i < 2; i++) {
        const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        assert.ok(!ran.timedOut, 'the sweep did not hang');
        const result = sweepJson(ran);
        assert.deepStrictEqual(fs.readdirSync(records).sort(), names, `sweep ${i + 1} renamed nothing`);
        for (const [file, kind] of [
          [fifo, 'a FIFO'],
          [folder, 'a folder'],
        ])
          assert.ok(
            result.problems.some(
              (p: { file: string; problem: string }) => p.file === file && p.problem.includes(kind) && /left in place/.test(p.problem),
            ),
            `${kind} reported where it is: ${JSON.stringify(result.problems)}`,
          );
      }
      const ps = await runBounded(node, [CLI, 'ps', '--records', records, '--json']);
      const claims = JSON.parse(ps.stdout).claims as {
        file: string;
        ownerPid: number;
        claimant: { pid: number; state: string };
        problem?: string;
      }[];
      const byFile = new Map(claims.map((c) => [c.file, c]));
      assert.deepStrictEqual(
        [fifo, folder, live].map((f) => [byFile.get(f)?.ownerPid, byFile.get(f)?.claimant.state, byFile.get(f)?.problem !== undefined]),
        [
          [4242, 'dead', true],
          [4243, 'dead', true],
          [4244, 'alive', false],
        ],
      );
      const human = await runBounded(node, [CLI, 'ps', '--records', records]);
      assert.match(
        human.stdout,
        new RegExp(`claim ${live}: owner 4244's record, claimed by sweeper ${process.pid} \\(alive: in progress\\)`),
      );
      assert.match(human.stdout, /claim .*4242\.json\.claimed-.*: a FIFO, not a regular file: left in place/);
      assert.deepStrictEqual(fs.readdirSync(records).sort(), names, 'ps changed nothing');
    });
  });

  describe('ps changes nothing; sweep removes only its own temp files; no link target leaks (issue 10, item 7)', () => {
    it('ps leaves a foreign 2024.json, sweep a .draft.tmp it did not write, and neither quotes a symlink target', async () => {
      const records = tmpDir();
      const secretDir = tmpDir('secret-target-');
      const target = path.join(secretDir, 'SECRET-TARGET');
      fs.writeFileSync(target, 'TOPSECRET-CONTENT');
      fs.writeFileSync(path.join(records, '2024.json'), '{"year":2024}', { mode: 0o600 });
      const draft = path.join(records, '.draft.tmp');
      fs.writeFileSync(draft, 'a draft', { mode: 0o600 });
      fs.utimesSync(draft, 1, 1);
      fs.symlinkSync(target, path.join(records, '77.json'));
      const before = fs.readdirSync(records).sort();
      const ps = await runBounded(node, [CLI, 'ps', '--records', records, '--json']);
      assert.deepStrictEqual(fs.readdirSync(records).sort(), before, 'ps renamed or removed nothing');
      assert.match(ps.stdout, /2024\.json/);
      const swept = await runBounded(node, [CLI, 'sweep', '--records', records, '--json']);
      assert.ok(fs.existsSync(draft), 'the draft stays');
      assert.ok(fs.lstatSync(path.join(records, '77.json')).isSymbolicLink(), 'the link stays');
      for (const out of [ps.stdout, ps.stderr, swept.stdout, swept.stderr]) {
        assert.doesNotMatch(out, /SECRET|secret-target/, 'nothing of the link target is shown');
      }
      assert.match(swept.stdout, /77\.json",\s*"problem": "a symbolic link, not a regular file/);
    });
  });
});
