/**
 * Which processes are an owned tree's members (members/treeMembers.ts), on real processes: a process group the
 * tree once had is the tree's only while it provably never emptied.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../../src/proc';
import { OTHER_UID } from '../../support/otherUser';
import { REPO, tmpDir } from '../../support/repo';
import { aliveOf, register } from '../../support/started';
import { waitFor } from '../../support/wait';
import { requireCgroupTier, requireRoot } from '../../support/environment';

const table = processCore().table;

const IMPOSTOR = path.join(REPO, 'test', 'fixtures', 'groupImpostor.pl');

/**
 * Spawns an owned tree whose root exits when told to, and an impostor that takes the root's pid (and so its
 * group id) once the root is gone: a new session and group with that id, holding another user's `sleep`.
 */
async function emptiedTreeAndImpostor(owner: TreeOwner) {
  const tree = owner.spawn({ command: 'sh', args: ['-c', 'read _; exit 0'], stdio: ['pipe', 'ignore', 'ignore'] });
  register(tree.child.pid!);
  const out = path.join(tmpDir(), 'impostor');
  const helper = spawn('perl', [IMPOSTOR, String(tree.record.pgid), String(OTHER_UID), '120', out], { stdio: 'ignore' });
  register(helper.pid!);
  tree.child.stdin!.end(); // the root exits; the tree has no other member, so its group empties
  const line = await waitFor('the impostor', () => {
    const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
    return /^(impostor|failed) .*$/m.exec(text)?.[0];
  });
  assert.match(line, /^impostor \d+$/, line);
  const impostor = Number(line.split(' ')[1]);
  register(impostor);
  const p = await waitFor('the impostor to run as the other user', () => {
    const now = table.read(impostor);
    return now && now.uid === OTHER_UID && now;
  });
  assert.strictEqual(p.pgid, tree.record.pgid, 'the impostor holds the process group id the tree had');
  assert.strictEqual(table.read(tree.record.pgid), undefined, 'the group is leaderless');
  return { tree, impostor };
}

describe("an owned tree's process group, once it has emptied", function () {
  this.timeout(30_000);

  for (const tier of ['cgroup', 'group'] as const) {
    const cgroups = tier === 'cgroup' ? 'auto' : 'off';
    const needs = function (this: Mocha.Context) {
      requireRoot(this, 'to choose the next pid through ns_last_pid');
      if (tier === 'cgroup') requireCgroupTier(this);
    };

    it(`is never the tree's again: the owner's watch drops the emptied tree although a new group has its id (${tier} tier)`, async function () {
      needs.call(this);
      const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups, watchIntervalMs: 100 });
      let impostor = 0;
      try {
        const made = await emptiedTreeAndImpostor(owner);
        impostor = made.impostor;
        await waitFor('the emptied tree to be dropped', () => owner.list().length === 0);
        assert.deepStrictEqual(aliveOf([impostor]), [impostor], "the other user's process is untouched");
      } finally {
        if (impostor && aliveOf([impostor]).length) process.kill(impostor, 'SIGKILL');
        await owner.dispose(0);
      }
    });

    it(`is never the tree's again: a kill of the emptied tree never signals the new group (${tier} tier)`, async function () {
      needs.call(this);
      // No watch look before the kill: the kill alone must tell the group is not the tree's.
      const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups, watchIntervalMs: 600_000 });
      let impostor = 0;
      try {
        const made = await emptiedTreeAndImpostor(owner);
        impostor = made.impostor;
        assert.deepStrictEqual(owner.members(made.tree.record.id), [], 'the new group is no member');
        const report = await owner.kill(made.tree.record.id, 0);
        assert.strictEqual(report.signalled, 0, `signalled ${report.signalled}`);
        assert.deepStrictEqual(aliveOf([impostor]), [impostor], "the other user's process is untouched");
        assert.strictEqual(owner.list().length, 0, 'the tree ended with the kill');
      } finally {
        if (impostor && aliveOf([impostor]).length) process.kill(impostor, 'SIGKILL');
        await owner.dispose(0);
      }
    });
  }
});
