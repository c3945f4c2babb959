/**
 * The view's member source (src/proc/tracking/treeMembersSource.ts) on real trees: the same members on this thread
 * and in the worker, and a tree in a cgroup of its own read from its cgroup alone.
 */
import * as assert from 'assert';
import * as path from 'path';
import { processCore, TreeMembersSource, TreeOwner } from '../../../src/proc';
import { MemberTracker, refreshMembers } from '../../../src/proc/tracking/memberTracker';
import { fixturePids } from '../../support/fixtures';
import { pidsOf, queryOf, sorted } from '../../support/ownedTrees';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { register, waitAllDead } from '../../support/started';
import { requireCgroupTier } from '../../support/environment';

const core = processCore();

describe("the view's member source", function () {
  this.timeout(30_000);

  it('gives the same members in the worker (compiled, or dist/cli.js as the extension starts it) as on this thread', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['setsid', pidfile], stdio: 'ignore' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    const query = [{ ...tree.record, continuouslyOwned: true, cgroupVerified: false }];
    const local = new TreeMembersSource(processCore());
    // Always the worker: from the compiled entry, and from the bundle the extension starts it from.
    const worker = new TreeMembersSource(processCore(), {
      workerScript: path.join(REPO, 'out', 'src', 'cli', 'bundle.js'),
      workerThreshold: -1,
    });
    const bundled = new TreeMembersSource(processCore(), { workerScript: CLI, workerThreshold: -1 });
    try {
      const [a, b, c] = [await local.query(query), await worker.query(query), await bundled.query(query)];
      assert.strictEqual(worker.lastInWorker, true);
      assert.strictEqual(bundled.lastInWorker, true);
      assert.strictEqual(local.lastInWorker, false);
      const pidsOf = (r: typeof a) => r.trees[0].members.map((m) => m.pid).sort();
      assert.deepStrictEqual(pidsOf(a), [...pids.all].sort());
      assert.deepStrictEqual(pidsOf(b), pidsOf(a));
      assert.deepStrictEqual(pidsOf(c), pidsOf(a));
      assert.ok(b.trees[0].members.every((m) => m.command.length > 0));
    } finally {
      worker.dispose();
      bundled.dispose();
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('gives the same members either way, and counts the reads', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['setsid', pidfile], stdio: 'ignore' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    const query = [queryOf(owner, tree.record.id)];
    const local = new TreeMembersSource(core);
    const worker = new TreeMembersSource(core, {
      workerScript: path.join(REPO, 'out', 'src', 'cli', 'bundle.js'),
      workerThreshold: -1,
    });
    try {
      for (let round = 0; round < 3; round++) {
        const [a, b] = [await local.query(query), await worker.query(query)];
        assert.strictEqual(worker.lastInWorker, true);
        assert.strictEqual(local.lastInWorker, false);
        assert.deepStrictEqual(pidsOf(a, tree.record.id), sorted(pids.all));
        assert.deepStrictEqual(pidsOf(b, tree.record.id), pidsOf(a, tree.record.id));
        assert.ok(b.trees[0].members.every((m) => m.command.length > 0));
      }
      const s = worker.stats();
      assert.deepStrictEqual([s.refreshes, s.fullScans], [3, 1]);
      // Both share this thread's table; the worker's own reads come on top.
      assert.ok(s.processReads > local.stats().processReads, 'the worker reports its reads');
    } finally {
      worker.dispose();
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('reads only the cgroup, and finds what a full resolution finds', async function () {
    requireCgroupTier(this);
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['daemon-scrubbed', pidfile], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    try {
      assert.strictEqual(tree.tier, 'cgroup');
      const trees = [{ ...tree.record, continuouslyOwned: true, cgroupVerified: true }];
      const fast = refreshMembers(processCore().table, new MemberTracker(processCore()).next(trees), processCore());
      assert.ok(fast.processCount < 10, 'no full scan');
      const full = owner
        .members(tree.record.id)
        .map((p) => p.pid)
        .sort();
      assert.deepStrictEqual(fast.trees[0].members.map((m) => m.pid).sort(), full);
      assert.deepStrictEqual(full, [...pids.all].sort(), 'the scrubbed daemon too');
    } finally {
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});
