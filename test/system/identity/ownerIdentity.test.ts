/**
 * Who a process is, on real processes and through the real CLI where the CLI judges it: an owner's identity across
 * clock steps and pid namespaces, a /proc that cannot be read, and whether an MCP wrapper's owner is our child.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { ownerIsChildOf, OwnerInfo, processCore, RecordStore, TreeRecord } from '../../../src/proc';
import { hostClock } from '../../../src/proc/platform/bootClock';
import { ProcessInfo } from '../../../src/proc/platform/processTable';
import { OwnerRecord } from '../../../src/proc/records/schema';
import { CLI, REPO, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { aliveOf, register } from '../../support/started';
import { runBounded } from '../../support/cli';
import { cliOwners, deadPid, identity, sweepJson, unrelatedLeader } from '../../support/records';
import { requireEnvironment, requireRoot, requireTools } from '../../support/environment';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

const processTable = () => processCore().table;
const node = process.execPath;
describe("an owner's identity on real processes", () => {
  const owners = cliOwners();

  describe('across clock steps', () => {
    before(function () {
      requireTools(this, 'faketime'); // scripts/test-tools.sh installs it before the suite
    });

    it("a sweeper whose clock is 3 s ahead, or 1 h behind, leaves a live owner's tree alone", async () => {
      const records = tmpDir();
      const owner = await owners.start(records);
      for (const step of ['+3s', '-1h']) {
        const ran = await runBounded('faketime', ['-f', step, node, CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
        const result = sweepJson(ran);
        assert.strictEqual(result.liveOwners, 1, `clock ${step}: ${ran.stdout}`);
        assert.deepStrictEqual(result.trees, [], `clock ${step}`);
        assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, `clock ${step}: the live tree is untouched`);
        assert.ok(fs.existsSync(owner.file), `clock ${step}: the record stays`);
      }
      await owners.end(owner);
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

  describe('across pid namespaces', () => {
    before(function () {
      requireRoot(this, 'to place processes at chosen pids and make pid namespaces');
      requireTools(this, 'unshare');
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

    // An owner in a pid namespace that reads the host's /proc (unshare -p without --mount-proc) would record its
    // namespace pid, which a host sweep would find "gone" (and kill the live tree), and its own timeout could end
    // none of the tree: it must not start one.
    it('refuses to start a tree (one line, exit 2): it could neither be seen nor ended from there', async () => {
      const records = tmpDir();
      const marker = path.join(tmpDir(), 'started');
      const ran = await runBounded('unshare', [
        '-pf',
        'sh',
        '-c',
        `"${node}" "${CLI}" run --records "${records}" --timeout 2 -- sh -c 'touch "${marker}"; setsid sleep 60 & exec sleep 60'; echo "exit $?"; sleep 1`,
      ]);
      assert.strictEqual(ran.timedOut, false);
      assert.match(ran.stdout, /^exit 2$/m, ran.stdout + ran.stderr);
      assert.match(ran.stderr, /^agent-trees: .*another pid namespace.*\n$/);
      assert.strictEqual(fs.existsSync(marker), false, 'nothing was started');
      assert.deepStrictEqual(fs.readdirSync(records), [], 'nothing was recorded');
    });
  });

  describe('an unreadable /proc is not a dead owner', () => {
    it('a sweep under EMFILE leaves a live owner and its tree alone', async () => {
      const records = tmpDir();
      const owner = await owners.start(records);
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
      await owners.end(owner);
    });
  });
});

describe("an MCP wrapper's owner (ownerIsChildOf)", () => {
  it('our child at the recorded pid counts only if it started at the recorded tick', async function () {
    const clock = hostClock();
    requireEnvironment(this, !!clock?.procIsOurs, "a /proc of this process's own pid namespace");
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const grandchild = spawn('sh', ['-c', 'sleep 60 & wait'], { stdio: 'ignore' });
    register(child.pid!);
    register(grandchild.pid!);
    let g: ProcessInfo | undefined;
    try {
      const p = await waitFor('the sleep', () => table.read(child.pid!));
      g = await waitFor("the shell's child", () => table.snapshot().children().get(grandchild.pid!)?.[0]);
      register(g.pid);
      const owner = (q: typeof p, ticks: number): OwnerInfo => ({
        pid: q.pid,
        startTime: q.startTime,
        startTicks: ticks,
        bootId: clock!.bootId,
        pidNs: clock!.pidNs,
        machineId: clock!.machineId,
      });
      assert.strictEqual(ownerIsChildOf(owner(p, p.startKey), process.pid, table), true, 'that very child');
      assert.strictEqual(ownerIsChildOf(owner(p, p.startKey - 3), process.pid, table), false, 'a later process at the pid');
      assert.strictEqual(ownerIsChildOf(owner(p, p.startKey + 3), process.pid, table), false, 'a process older than the record');
      assert.strictEqual(
        ownerIsChildOf({ pid: p.pid, startTime: p.startTime }, process.pid, table),
        false,
        'no boot identity: cannot tell',
      );
      assert.strictEqual(ownerIsChildOf(owner(g, g.startKey), process.pid, table), false, 'a grandchild');
      assert.strictEqual(ownerIsChildOf({ ...owner(p, p.startKey), bootId: 'another-boot' }, process.pid, table), false, 'another boot');
    } finally {
      child.kill('SIGKILL');
      const all = [child.pid!, grandchild.pid!, ...(g ? [g.pid] : [])];
      for (const pid of all) process.kill(pid, 'SIGKILL');
      await waitFor('all gone', () => aliveOf(all).length === 0);
    }
  });
});
