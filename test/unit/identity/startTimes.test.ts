/** Identity rules on synthetic processes: the group-leader proof and the root's start-time tolerance. */
import * as assert from 'assert';
import { isRecordedRoot, recordTimeProblem, startedNoLaterThanTracking } from '../../../src/proc/identity/startTimes';
import { resolveTreeMembers } from '../../../src/proc/members/treeMembers';
import { parseUptimeTicks } from '../../../src/proc/platform/bootClock';
import { START_PRECISION_MS } from '../../../src/proc/platform/procParsers';
import { CLOCK, identity, proc, syntheticTable, treeRecord } from '../../support/synthetic';

const ticksTree = treeRecord('t', {
  rootPid: 100,
  pgid: 100,
  sid: 100,
  rootStartTicks: 5000,
  trackedAtTicks: 5003,
  rootStartTime: 1_000_000,
  trackedAt: 1_000_030,
});
const epochTree = treeRecord('t', { rootPid: 100, pgid: 100, sid: 100, rootStartTime: 1_000_000, trackedAt: 1_000_030 });

/** Nobody protected, no cgroups: the synthetic tables need neither. */
const NO_DEPS = { guard: { protectedReason: () => undefined }, cgroups: { procs: () => [] } };
describe('the group-leader proof (startedNoLaterThanTracking)', () => {
  const cases: { name: string; leader: ReturnType<typeof proc>; tree: typeof ticksTree; bootTicks: boolean; proven: boolean }[] = [
    {
      name: 'ticks: the recorded root itself (same start tick)',
      leader: proc(100, { startKey: 5000 }),
      tree: ticksTree,
      bootTicks: true,
      proven: true,
    },
    {
      name: 'ticks: a process with the root pid, one tick later',
      leader: proc(100, { startKey: 5001 }),
      tree: ticksTree,
      bootTicks: true,
      proven: false,
    },
    {
      name: 'ticks: a process with the root pid, one tick earlier',
      leader: proc(100, { startKey: 4999 }),
      tree: ticksTree,
      bootTicks: true,
      proven: false,
    },
    {
      name: 'ticks: another leader, started at the tracking tick',
      leader: proc(200, { startKey: 5003 }),
      tree: { ...ticksTree, pgid: 200 },
      bootTicks: true,
      proven: true,
    },
    {
      name: 'ticks: another leader, started a tick after tracking',
      leader: proc(200, { startKey: 5004 }),
      tree: { ...ticksTree, pgid: 200 },
      bootTicks: true,
      proven: false,
    },
    {
      name: 'ticks: a record without ticks (older version) proves nothing',
      leader: proc(100, { startKey: 1 }),
      tree: epochTree,
      bootTicks: true,
      proven: false,
    },
    {
      name: 'epoch (no boot clock): started before tracking, rounding counted against it',
      leader: proc(100, { startKey: 0, startTime: 1_000_030 - START_PRECISION_MS }),
      tree: epochTree,
      bootTicks: false,
      proven: true,
    },
    {
      name: 'epoch (no boot clock): within the rounding after tracking',
      leader: proc(100, { startKey: 0, startTime: 1_000_031 - START_PRECISION_MS }),
      tree: epochTree,
      bootTicks: false,
      proven: false,
    },
  ];
  for (const c of cases) it(c.name, () => assert.strictEqual(startedNoLaterThanTracking(c.leader, c.tree, c.bootTicks), c.proven));
});

describe('the root start-time tolerance (isRecordedRoot)', () => {
  const cases: { name: string; p: ReturnType<typeof proc>; tree: typeof ticksTree; bootTicks: boolean; root: boolean }[] = [
    { name: 'ticks: exact start tick', p: proc(100, { startKey: 5000 }), tree: ticksTree, bootTicks: true, root: true },
    { name: 'ticks: one tick off is another process', p: proc(100, { startKey: 5001 }), tree: ticksTree, bootTicks: true, root: false },
    { name: 'ticks: another pid', p: proc(101, { startKey: 5000 }), tree: ticksTree, bootTicks: true, root: false },
    {
      name: 'ticks: no start tick recorded (older version): never by time',
      p: proc(100, { startKey: 0, startTime: 1_000_000 }),
      tree: epochTree,
      bootTicks: true,
      root: false,
    },
    {
      name: 'epoch: within twice the rounding',
      p: proc(100, { startKey: 0, startTime: 1_000_000 + 2 * START_PRECISION_MS }),
      tree: epochTree,
      bootTicks: false,
      root: true,
    },
    {
      name: 'epoch: beyond twice the rounding',
      p: proc(100, { startKey: 0, startTime: 1_000_001 + 2 * START_PRECISION_MS }),
      tree: epochTree,
      bootTicks: false,
      root: false,
    },
  ];
  for (const c of cases) it(c.name, () => assert.strictEqual(isRecordedRoot(c.p, c.tree, c.bootTicks), c.root));

  it('a root that left its group is a member only with its exact start tick', () => {
    const tree = { ...ticksTree, pgid: 300, sid: 300 };
    const members = (rootStartKey: number) =>
      resolveTreeMembers(
        tree,
        syntheticTable([proc(100, { startKey: rootStartKey, pgid: 999, sid: 999 })]).snapshot(),
        {
          continuouslyOwned: false,
          cgroupVerified: false,
          protectedReason: () => undefined,
        },
        NO_DEPS,
      ).members.map((p) => p.pid);
    assert.deepStrictEqual(members(5000), [100]);
    assert.deepStrictEqual(members(5001), []);
  });

  it('a group led by a process started after tracking is not taken, and says why', () => {
    const m = resolveTreeMembers(
      ticksTree,
      syntheticTable([proc(100, { startKey: 6000 }), proc(101, { startKey: 6001, pgid: 100, sid: 100, ppid: 100 })]).snapshot(),
      {
        continuouslyOwned: false,
        cgroupVerified: false,
        protectedReason: () => undefined,
      },
      NO_DEPS,
    );
    assert.deepStrictEqual(m.members, []);
    assert.match(m.groupDoubt!, /started after the tree was tracked/);
  });
});

describe('record times bounded by now', () => {
  const record = (owner = identity(1, 100), trees = [treeRecord('t', { rootStartTicks: 200, trackedAtTicks: 201 })]) => ({
    version: 1 as const,
    owner,
    trees,
  });
  it('accepts times in the past', () => assert.strictEqual(recordTimeProblem(record(), CLOCK), undefined));
  it('refuses a tracking tick after now', () => {
    const p = recordTimeProblem(record(identity(1, 100), [treeRecord('t', { trackedAtTicks: CLOCK.nowTicks() + 1000 })]), CLOCK);
    assert.match(p!.message, /trackedAtTicks .* is after now/);
    assert.strictEqual(p!.unreadable, false);
  });
  it('refuses a root that started after it was tracked, and a tree tracked before its owner started', () => {
    assert.match(
      recordTimeProblem(record(identity(1, 100), [treeRecord('t', { rootStartTicks: 300, trackedAtTicks: 299 })]), CLOCK)!.message,
      /rootStartTicks is after/,
    );
    assert.match(
      recordTimeProblem(record(identity(1, 100), [treeRecord('t', { trackedAtTicks: 99 })]), CLOCK)!.message,
      /before its owner started/,
    );
  });
  it('refuses an older record tracked in the future (epoch ms)', () => {
    assert.match(
      recordTimeProblem(record({ pid: 1, startTime: 1 }, [treeRecord('t', { trackedAt: Date.now() + 60_000 })]), CLOCK)!.message,
      /in the future/,
    );
  });
  it('reports an unreadable boot clock as unreadable, not as impossible', () => {
    const broken = {
      ...CLOCK,
      nowTicks: () => {
        throw Object.assign(new Error('EMFILE'), { code: 'EMFILE' });
      },
    };
    assert.deepStrictEqual(recordTimeProblem(record(), broken), {
      unreadable: true,
      message: 'the boot clock cannot be read to check its times (EMFILE)',
    });
  });
  it('reads /proc/uptime without floating point', () => {
    assert.strictEqual(parseUptimeTicks('286.03 329.79\n'), 28603);
    assert.throws(() => parseUptimeTicks('garbage'), /unexpected \/proc\/uptime/);
  });
});
