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
import { treeCgroupPath } from '../../../src/proc/cgroup/treeCgroup';
import { FIXTURE, REPO, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids, FixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { SCENARIOS } from '../../fixtures/scenarios';
import { requireCgroupTier, requireEnvironment } from '../../support/environment';

/** The one scenario the group tier cannot reach: no group, no session, no parent link, no tag. */
const GROUP_TIER_LIMIT = 'daemon-scrubbed';

/** Fixture pids plus anything still carrying the tree's tag. */
function survivors(pids: FixturePids, treeId: string): number[] {
  const tagged = (processTable().snapshot().tagged().get(treeId) ?? []).map((p) => p.pid);
  return [...new Set([...aliveOf(pids.all), ...tagged])];
}

/** The forker first forks a crowd (root, forker and children, all tagged), so the kill meets a growing tree. */
async function settle(mode: string, treeId: string): Promise<void> {
  if (mode === 'forker')
    await waitFor('the forker to fork a crowd', () => (processTable().snapshot().tagged().get(treeId)?.length ?? 0) >= 6);
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
      if (tier === 'cgroup') requireCgroupTier(this);
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
          requireEnvironment(this, false, 'root, to choose the next pid (ns_last_pid) for the wraparound fixture');
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
        const ownerProc = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, mode, pidfile, cgroups], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        register(ownerProc.pid!);
        const [treeId, gotTier] = (await new Promise<string>((resolve) => ownerProc.stdout!.once('data', (d) => resolve(String(d)))))
          .trim()
          .split(' ');
        assert.strictEqual(gotTier, tier);
        const pids = await fixturePids(pidfile);
        await settle(mode, treeId);
        ownerProc.kill('SIGKILL');
        await new Promise((resolve) => ownerProc.once('exit', resolve));
        if (pids.roles.has('unsupported')) {
          await sweepOrphans(new RecordStore(records), {
            ...localSweepParts(processCore()),
            self: selfIdentity(processTable()),
            graceMs: 200,
            cgroups: 'auto',
          });
          requireEnvironment(this, false, 'root, to choose the next pid (ns_last_pid) for the wraparound fixture');
        }
        const result = await sweepOrphans(new RecordStore(records), {
          ...localSweepParts(processCore()),
          self: selfIdentity(processTable()),
          graceMs: 300,
          cgroups: 'auto',
        });
        assert.strictEqual(result.trees.length, 1);
        await waitAllDead(pids.all, 3000);
        expectSurvivors(mode, tier, survivors(pids, treeId), pids);
        if (tier === 'cgroup')
          await waitFor('the swept cgroup to be removed', () => !fs.existsSync(treeCgroupPath(cgroupProbe.tier!, treeId)));
        assert.deepStrictEqual(fs.readdirSync(records), [], 'the record is deleted');
      });
    }
  });
}
