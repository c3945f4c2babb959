// The members of the runs as the API's list() and the picks read them (src/extension/runMembers.ts, plain Node):
// nothing read until asked, then through the view's member source on this thread, with the rules of its async
// query, at a cost that follows the members. Real processes.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { AgentRuns } from '../../../src/agents/runs';
import { RunMembers } from '../../../src/extension/runMembers';
import { processCore, TreeMembersSource, TreeOwner } from '../../../src/proc';
import { createCore } from '../../../src/proc/core';
import { FIXTURE, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { register, waitAllDead } from '../../support/started';
import { requireEnvironment } from '../../support/environment';

describe('the members of the runs, on request', () => {
  it('reads nothing until asked; then every live run in one read, as the async query finds them; then only the members', async () => {
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), () => ({
      defaultTimeoutSeconds: 0,
      killGraceSeconds: 0.3,
      killDescendantsOnExit: true,
    }));
    // A core of its own: its table counts only the reads of this source.
    const core = createCore();
    // Full scans an hour apart: the second read below is due none, however slow this machine is.
    const source = new TreeMembersSource(core, { tracker: { fullScanIntervalMs: 3_600_000 } });
    const members = new RunMembers(runs, source);
    const files = [path.join(tmpDir(), 'a'), path.join(tmpDir(), 'b')];
    const [a, b] = files.map((file, i) => runs.launch({ name: `r${i}`, command: FIXTURE, args: ['setsid', file], terminal: 'pipe' }));
    register(a.tree.child.pid!);
    register(b.tree.child.pid!);
    const [pa, pb] = await Promise.all(files.map((f) => fixturePids(f)));
    try {
      assert.deepStrictEqual(source.stats().refreshes, 0, 'nothing read before asked');
      const first = members.now();
      assert.deepStrictEqual(source.stats().refreshes, 1, 'both runs in one read');
      const pidsOf = (m: Map<string, { pid: number }[]>, id: string) => (m.get(id) ?? []).map((p) => p.pid).sort();
      assert.deepStrictEqual(pidsOf(first, a.id), [...pa.all].sort());
      assert.deepStrictEqual(pidsOf(first, b.id), [...pb.all].sort());
      assert.ok(
        first.get(a.id)!.every((p) => p.command.length > 0),
        'with command lines',
      );
      const async = await new TreeMembersSource(processCore()).query(runs.running().map((r) => runs.owner.queryOf(r.id)!));
      assert.deepStrictEqual(
        pidsOf(first, a.id),
        async.trees
          .find((t) => t.id === a.id)!
          .members.map((p) => p.pid)
          .sort(),
        'as query() finds them',
      );

      if (core.table.listsChildren?.()) {
        const before = source.stats();
        const second = members.now();
        const after = source.stats();
        assert.deepStrictEqual(pidsOf(second, a.id), pidsOf(first, a.id));
        assert.strictEqual(after.fullScans, before.fullScans, 'the second read walks from the members');
        const machine = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
        assert.ok(
          after.processReads - before.processReads < machine,
          `${after.processReads - before.processReads} reads, ${machine} processes`,
        );
      }

      await runs.kill(a.id);
      await waitFor('the first run to end', () => !a.live);
      const third = members.now();
      assert.deepStrictEqual([...third.keys()], [b.id], 'an ended run has no members to read');
    } finally {
      await runs.owner.dispose(300);
      source.dispose();
    }
    assert.deepStrictEqual(await waitAllDead([...pa.all, ...pb.all]), []);
  });

  const settings = () => ({ defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true });

  it('no runs, or only ended ones: nothing read, however often asked', async () => {
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), settings);
    const core = createCore();
    const source = new TreeMembersSource(core);
    const members = new RunMembers(runs, source);
    try {
      for (let i = 0; i < 50; i++) assert.strictEqual(members.now().size, 0);
      const run = runs.launch({ name: 'true', command: 'true', terminal: 'pipe' });
      register(run.tree.child.pid!);
      await waitFor('the run to end', () => !run.live);
      const before = source.stats().processReads;
      for (let i = 0; i < 50; i++) assert.strictEqual(members.now().size, 0);
      assert.strictEqual(source.stats().refreshes, 0);
      assert.strictEqual(source.stats().processReads, before, 'no process read');
    } finally {
      await runs.owner.dispose(300);
      source.dispose();
    }
  });

  it('asked in a tight loop: one full scan, then reads that follow the members, not the machine', async function () {
    const core = createCore();
    requireEnvironment(this, !!core.table.listsChildren?.(), 'children lists in /proc (CONFIG_PROC_CHILDREN)');
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), settings);
    const source = new TreeMembersSource(core);
    const members = new RunMembers(runs, source);
    const file = path.join(tmpDir(), 'pids');
    const run = runs.launch({ name: 'tree', command: FIXTURE, args: ['setsid', file], terminal: 'pipe' });
    register(run.tree.child.pid!);
    const pids = await fixturePids(file);
    try {
      members.now();
      const machine = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
      const before = source.stats();
      const calls = 200;
      for (let i = 0; i < calls; i++) assert.deepStrictEqual((members.now().get(run.id) ?? []).length, pids.all.length);
      const after = source.stats();
      assert.strictEqual(after.refreshes - before.refreshes, calls);
      assert.ok(after.fullScans - before.fullScans <= 1, `${after.fullScans - before.fullScans} full scans in ${calls} calls`);
      const perCall = (after.processReads - before.processReads) / calls;
      assert.ok(perCall < machine / 2, `${perCall} reads a call, ${machine} processes on the machine`);
    } finally {
      await runs.owner.dispose(300);
      source.dispose();
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});
