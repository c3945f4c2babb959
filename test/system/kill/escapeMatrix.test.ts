/**
 * The escape matrix: real trees that try to get away, killed live and swept after their owner was SIGKILLed,
 * with and without the cgroup tier. Survivors are counted per scenario.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { localSweepParts, processCore, RecordStore, selfIdentity, sweepOrphans, TreeOwner } from '../../../src/proc';

const processTable = () => processCore().table;
import { isOurCgroup, killCgroup, removeUnnamedEmptyCgroups, treeCgroupPath } from '../../../src/proc/cgroup/treeCgroup';
import { aliveOf, FIXTURE, FixturePids, fixturePids, REPO, register, tmpDir, waitAllDead, waitFor } from '../../support/started';
import { SCENARIOS } from '../../fixtures/scenarios';


/** The one scenario the group tier cannot reach: no group, no session, no parent link, no tag. */
const GROUP_TIER_LIMIT = 'daemon-scrubbed';

/** Fixture pids plus anything still carrying the tree's tag. */
function survivors(pids: FixturePids, treeId: string): number[] {
  const tagged = (processTable().snapshot().tagged().get(treeId) ?? []).map((p) => p.pid);
  return [...new Set([...aliveOf(pids.all), ...tagged])];
}

/** The forker first forks a crowd (root, forker and children, all tagged), so the kill meets a growing tree. */
async function settle(mode: string, treeId: string): Promise<void> {
  if (mode === 'forker') await waitFor('the forker to fork a crowd', () => (processTable().snapshot().tagged().get(treeId)?.length ?? 0) >= 6);
}

function expectSurvivors(mode: string, tier: string, left: number[], pids: FixturePids): void {
  if (tier === 'group' && mode === GROUP_TIER_LIMIT) {
    const daemon = pids.roles.get('daemon')![0];
    assert.deepStrictEqual(left, [daemon], 'the known limit of the group tier: the scrubbed daemon survives');
    process.kill(daemon, 'SIGKILL'); // ours to clean up: the test started it
  } else {
    assert.deepStrictEqual(left, [], `survivors: ${left.join(', ')}`);
  }
}

const cgroupProbe = processCore().cgroupTier('auto');

for (const tier of ['cgroup', 'group'] as const) {
  describe(`escape matrix, ${tier} tier`, function () {
    before(function () {
      if (tier === 'cgroup' && !cgroupProbe.tier) {
        // Skipped with its reason, never passed silently.
        this.test!.parent!.title += ` (skipped: ${cgroupProbe.unavailable})`;
        this.skip();
      }
    });
    const cgroups = tier === 'cgroup' ? 'auto' : 'off';

    for (const { mode, title } of SCENARIOS) {
      it(`${title}: live kill`, async function () {
        const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
        const pidfile = path.join(tmpDir(), 'pids');
        const tree = owner.spawn({ command: FIXTURE, args: [mode, pidfile], stdio: 'ignore', cgroups });
        register(tree.child.pid!);
        assert.strictEqual(tree.tier, tier);
        const pids = await fixturePids(pidfile);
        if (pids.roles.has('unsupported')) {
          await owner.dispose(200);
          this.skip();
        }
        await settle(mode, tree.record.id);
        await owner.kill(tree.record.id, 300);
        await waitAllDead(pids.all, 3000);
        expectSurvivors(mode, tier, survivors(pids, tree.record.id), pids);
        await owner.dispose(200);
        if (tree.record.cgroup) await waitFor('the empty cgroup to be removed', () => !fs.existsSync(tree.record.cgroup!));
      });

      it(`${title}: sweep after the owner was SIGKILLed`, async function () {
        const records = tmpDir();
        const pidfile = path.join(tmpDir(), 'pids');
        const ownerProc = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, mode, pidfile, cgroups], { stdio: ['ignore', 'pipe', 'inherit'] });
        register(ownerProc.pid!);
        const [treeId, gotTier] = (await new Promise<string>((resolve) => ownerProc.stdout!.once('data', (d) => resolve(String(d))))).trim().split(' ');
        assert.strictEqual(gotTier, tier);
        const pids = await fixturePids(pidfile);
        await settle(mode, treeId);
        ownerProc.kill('SIGKILL');
        await new Promise((resolve) => ownerProc.once('exit', resolve));
        if (pids.roles.has('unsupported')) {
          await sweepOrphans(new RecordStore(records), { ...localSweepParts(processCore()), self: selfIdentity(processTable()), graceMs: 200, cgroups: 'auto' });
          this.skip();
        }
        const result = await sweepOrphans(new RecordStore(records), { ...localSweepParts(processCore()), self: selfIdentity(processTable()), graceMs: 300, cgroups: 'auto' });
        assert.strictEqual(result.trees.length, 1);
        await waitAllDead(pids.all, 3000);
        expectSurvivors(mode, tier, survivors(pids, treeId), pids);
        if (tier === 'cgroup') await waitFor('the swept cgroup to be removed', () => !fs.existsSync(treeCgroupPath(cgroupProbe.tier!, treeId)));
        assert.deepStrictEqual(fs.readdirSync(records), [], 'the record is deleted');
      });
    }
  });
}

describe('cgroup housekeeping', () => {
  it('a sweep removes empty cgroups of ours that no record names, and leaves named ones', function () {
    const tier = cgroupProbe.tier;
    if (!tier) {
      this.test!.title += ` (skipped: ${cgroupProbe.unavailable})`;
      this.skip();
    }
    const stale = treeCgroupPath(tier, `stale-${process.pid}`);
    const named = treeCgroupPath(tier, `named-${process.pid}`);
    fs.mkdirSync(stale);
    fs.mkdirSync(named);
    try {
      const removed = removeUnnamedEmptyCgroups(tier, new Set([named]), Date.now() + 120_000);
      assert.ok(removed.includes(stale));
      assert.ok(!fs.existsSync(stale));
      assert.ok(fs.existsSync(named));
      assert.deepStrictEqual(removeUnnamedEmptyCgroups(tier, new Set(), Date.now()).filter((d) => d === named), [], 'a fresh one may be a tree being spawned');
    } finally {
      for (const dir of [stale, named]) if (fs.existsSync(dir)) fs.rmdirSync(dir);
    }
  });

  it('without cgroup.kill (before Linux 5.14), freezes the cgroup, SIGKILLs each member, then thaws it', () => {
    // A stand-in folder: cgroup.kill cannot be written (a directory), so the freeze path runs.
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), '1234\n5678\n');
    fs.mkdirSync(path.join(dir, 'cgroup.kill'));
    fs.writeFileSync(path.join(dir, 'cgroup.freeze'), '0');
    const seen: { pid: number; frozen: string }[] = [];
    const pids = killCgroup(dir, (pid) => seen.push({ pid, frozen: fs.readFileSync(path.join(dir, 'cgroup.freeze'), 'utf8') }));
    assert.deepStrictEqual(pids, [1234, 5678]);
    assert.deepStrictEqual(seen, [{ pid: 1234, frozen: '1' }, { pid: 5678, frozen: '1' }], 'signalled while frozen');
    assert.strictEqual(fs.readFileSync(path.join(dir, 'cgroup.freeze'), 'utf8'), '0', 'thawed afterwards');
  });

  it('uses a recorded cgroup only when it is ours and not made afresh', function () {
    const tier = cgroupProbe.tier;
    if (!tier) this.skip();
    const id = `verify-${process.pid}`;
    const dir = treeCgroupPath(tier!, id);
    fs.mkdirSync(dir);
    try {
      assert.strictEqual(isOurCgroup(tier, dir, id, Date.now()), true);
      assert.strictEqual(isOurCgroup(tier, dir, id, Date.now() - 60_000), false, 'created after the tree was tracked');
      assert.strictEqual(isOurCgroup(tier, dir, 'other-id', Date.now()), false, 'named for another tree');
      assert.strictEqual(isOurCgroup(tier, '/sys/fs/cgroup', id, Date.now()), false, 'outside our folder');
    } finally {
      fs.rmdirSync(dir);
    }
  });
});
