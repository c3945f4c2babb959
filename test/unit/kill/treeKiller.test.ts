/**
 * The tree killer's rules (src/proc/kill), case by case on synthetic machines (test/support/synthetic.ts): joining
 * kills, the guard on every path, survivors, and kills on macOS's start times. The real-process kills
 * (test/system/kill) stay the final word on Linux.
 */
import * as assert from 'assert';
import { MAC_START_PRECISION, MacProcessTable } from '../../../src/proc/platform/macProcessTable';
import { resolveTreeMembers } from '../../../src/proc/members/treeMembers';
import {
  ANCESTRY,
  FakeTable,
  inTree,
  machine,
  OUTSIDER as outsider,
  OWNED as owned,
  proc,
  TRACKED,
  TREE as tree,
} from '../../support/synthetic';

const HOUR = 3_600_000;

describe('joining kills', () => {
  for (const [first, second] of [
    [HOUR, 20],
    [20, HOUR],
  ]) {
    it(`a shorter grace wins: ${first} ms, then ${second} ms, is one kill that escalates after 20 ms`, async () => {
      const m = machine([proc(200, { ignoresTerm: true }), inTree(201, { ignoresTerm: true })]);
      const phases: string[] = [];
      m.core.killer.on('terminate', () => phases.push('terminate')).on('escalate', () => phases.push('escalate'));
      const a = m.core.killer.kill(tree, { ...owned, graceMs: first });
      const b = m.core.killer.kill(tree, { ...owned, graceMs: second });
      assert.strictEqual(a, b, 'the second request joins the first');
      const report = await a; // with the hour-long grace winning this would outlast the test's timeout
      assert.deepStrictEqual(phases, ['terminate', 'escalate'], 'one SIGTERM round, one escalation');
      assert.strictEqual(report.escalated, true);
      assert.strictEqual(report.survivors, 0);
    });
  }
});
describe('the guard on every kill path', () => {
  it('refuses a group that holds an ancestor right now, though the ancestor is no member', () => {
    const m = machine([inTree(201, { tag: 't1' })], { ancestry: [ANCESTRY[0], proc(50, { pgid: 200, sid: 200 }), ANCESTRY[2]] });
    assert.match(m.core.guard.groupRefusal(200, []) ?? '', /holds pid 50, this process or its ancestor/);
    assert.strictEqual(m.core.guard.groupRefusal(201, []), undefined);
  });

  it('a leaderless group holding our parent gets no group signal; its other members are ended one by one', async () => {
    const m = machine([inTree(201, { tag: 't1' }), inTree(202)], {
      ancestry: [ANCESTRY[0], proc(50, { pgid: 200, sid: 200 }), ANCESTRY[2]],
    });
    const report = await m.core.killer.kill(tree, { ...outsider, graceMs: 50 });
    assert.deepStrictEqual(
      m.signaller.calls.filter((c) => c.to === 'group'),
      [],
      'no kill(-pgid)',
    );
    assert.deepStrictEqual(m.signaller.reached(50), [], 'the parent got nothing');
    assert.deepStrictEqual(m.signaller.reached(201).slice(0, 2), ['SIGSTOP', 'SIGTERM'], 'frozen first');
    assert.strictEqual(report.survivors, 0);
    assert.ok(m.table.processes.has(50));
  });

  it('a cgroup that holds this process is never killed as a whole; the others die one by one', async () => {
    const m = machine([proc(300, { tag: 't1', pgid: 300, sid: 300 }), proc(301, { ppid: 300, pgid: 300, sid: 300 })]);
    m.cgroups.dirs.set('/cg/tree-t1', [100, 300, 301]);
    const report = await m.core.killer.kill({ ...tree, cgroup: '/cg/tree-t1' }, { ...outsider, cgroupVerified: true });
    assert.deepStrictEqual(m.cgroups.killed, []);
    assert.ok(
      report.refused.some((r) => /not killed as a whole: it holds pid 100/.test(r)),
      report.refused.join('; '),
    );
    assert.deepStrictEqual(m.signaller.reached(100, 100), []);
    assert.ok(!m.table.processes.has(300) && !m.table.processes.has(301));
    assert.ok(m.table.processes.has(100));
  });

  it('a member in a child cgroup is found, killed with the cgroup, and counted', async () => {
    const m = machine([proc(400, { pgid: 400, sid: 400 })]); // env -i setsid -f: only the cgroup leads to it
    m.cgroups.dirs.set('/cg/tree-t1', []);
    m.cgroups.dirs.set('/cg/tree-t1/sub', [400]);
    const verified = { ...tree, cgroup: '/cg/tree-t1' };
    assert.deepStrictEqual(
      resolveTreeMembers(verified, m.table.snapshot(), { continuouslyOwned: true, cgroupVerified: true }, m.core).members.map((p) => p.pid),
      [400],
    );
    const report = await m.core.killer.kill(verified, { ...owned, cgroupVerified: true });
    assert.deepStrictEqual(m.cgroups.killed, ['/cg/tree-t1']);
    assert.strictEqual(report.signalled, 1);
    assert.strictEqual(report.survivors, 0);
  });

  it('counts a member it may not signal, after a freeze that stopped nobody, and says why', async () => {
    const m = machine([proc(200), inTree(201, { denied: true, uid: 0 })]);
    m.table.processes.delete(200); // the root exited; the group stays proven for its owner, which saw 201
    const report = await m.core.killer.kill(tree, { ...owned, graceMs: 50, extraSeeds: [m.table.read(201)!] });
    assert.strictEqual(report.survivors, 1);
    assert.deepStrictEqual(report.survivorPids, [201]);
    assert.ok(
      report.refused.some((r) => /pid 201 runs as uid 0: only root or uid 0 can end it/.test(r)),
      report.refused.join('; '),
    );
  });
});

describe('kills on macOS (injected ps)', () => {
  /** What `ps -o pid=,ppid=,pgid=,sess=,state=,uid=,rss=,time=,lstart=,command=` prints for the fake table. */
  function psOutput(fake: FakeTable, args: string[]): string {
    const only = args[0] === '-p' ? Number(args[1]) : undefined;
    const lines = [...fake.processes.values()]
      .filter((p) => only === undefined || p.pid === only)
      .map((p) => {
        const d = new Date(p.startTime);
        const day = d.toLocaleDateString('en-US', { weekday: 'short' });
        const month = d.toLocaleDateString('en-US', { month: 'short' });
        const time = [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
        return `${p.pid} ${p.ppid} ${p.pgid} ${p.sid} ${p.state} ${p.uid} 100 0:00.01 ${day} ${month} ${String(d.getDate()).padStart(2)} ${time} ${d.getFullYear()} ${p.name}`;
      });
    if (only !== undefined && lines.length === 0) throw new Error('ps: exit 1');
    return lines.join('\n') + '\n';
  }

  const at = (seconds: number) => Math.floor(TRACKED / 1000) * 1000 + seconds * 1000;
  for (const { title, leaderStart, group } of [
    { title: 'a leader started whole seconds before tracking: the group is signalled at once', leaderStart: at(-3), group: true },
    { title: 'a leader started in the second tracking began: the group is not trusted', leaderStart: at(0), group: false },
  ]) {
    it(title, async () => {
      const m = machine([proc(200, { startTime: leaderStart }), inTree(201, { startTime: leaderStart })], {
        platform: 'darwin',
        precision: MAC_START_PRECISION,
        coreTable: (fake) => new MacProcessTable((_file, args) => psOutput(fake, args)),
      });
      assert.strictEqual(m.core.table.startPrecision, MAC_START_PRECISION);
      const report = await m.core.killer.kill(tree, outsider);
      assert.strictEqual(
        m.signaller.calls.some((c) => c.to === 'group'),
        group,
      );
      if (group) assert.strictEqual(report.survivors, 0);
      else {
        assert.deepStrictEqual(m.signaller.calls, [], 'nothing proven, nothing signalled (macOS has no tags)');
        assert.match(report.groupDoubt ?? '', /started after the tree was tracked/);
      }
    });
  }
});
