/**
 * Which processes belong to an owned tree (src/proc/members/treeMembers.ts), case by case on synthetic machines
 * (test/support/synthetic.ts): which group is proven, and the root's start-time tolerance on each platform. The
 * real-process kills (test/system/kill) stay the final word on Linux.
 */
import * as assert from 'assert';
import { TreeIdentity } from '../../../src/proc/members/membership';
import { resolveTreeMembers } from '../../../src/proc/members/treeMembers';
import { MAC_START_PRECISION } from '../../../src/proc/platform/macProcessTable';
import { StartPrecision } from '../../../src/proc/platform/processTable';
import { FakeProcess, inTree, LINUX_PRECISION, machine, proc, TRACKED, TRACKED_TICKS, TREE as tree } from '../../support/synthetic';

describe('which group is proven', () => {
  const cases: {
    title: string;
    procs: FakeProcess[];
    continuouslyOwned?: boolean;
    precision?: StartPrecision;
    proven: boolean;
    members: number[];
    doubt?: RegExp;
    excluded?: RegExp;
    tree?: TreeIdentity;
    /** What the continuous owner saw: members (pid and start key) and when it last found the root alive. */
    seen?: FakeProcess[];
    rootAliveAt?: number;
  }[] = [
    {
      title: 'the recorded root leads its group (its exact start tick)',
      procs: [proc(200), inTree(201)],
      proven: true,
      members: [200, 201],
    },
    {
      title: 'a leader that started after tracking (a reused pid)',
      procs: [proc(200, { startKey: TRACKED_TICKS + 1 }), inTree(201)],
      proven: false,
      members: [],
      doubt: /started after the tree was tracked/,
    },
    {
      title: "a leader at the root's pid one tick off the recorded root",
      procs: [proc(200, { startKey: 1201 }), inTree(201)],
      proven: false,
      members: [],
    },
    {
      title: 'a recorded tree without ticks proves no leader on Linux',
      procs: [proc(200), inTree(201)],
      proven: false,
      members: [],
      doubt: /no boot-clock times/,
      tree: { ...tree, rootStartTicks: undefined, trackedAtTicks: undefined },
    },
    {
      title: 'a leaderless group the continuous owner saw nothing of: it may have emptied and be another group now',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      proven: false,
      members: [],
      doubt: /no leader and no member carrying the tree's tag or seen as a member/,
    },
    {
      title: 'a leaderless group holding a member the continuous owner saw (pid and start key): it never emptied',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      seen: [inTree(201)],
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group whose seen member left: the same pid, another start key, proves nothing',
      procs: [inTree(201, { startKey: 9999 }), inTree(202)],
      continuouslyOwned: true,
      seen: [inTree(201)],
      proven: false,
      members: [],
    },
    {
      title: "a leaderless group holding a member of the root's session born while the root lived (rootAliveAt)",
      procs: [inTree(201), inTree(202, { startKey: 9000 })],
      continuouslyOwned: true,
      rootAliveAt: 1202,
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group whose members were all born after the root was last seen alive',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      rootAliveAt: 1201,
      proven: false,
      members: [],
    },
    {
      title: "a leaderless group of another session, with an old member, is no witness of the root's session",
      procs: [inTree(201, { sid: 77 })],
      continuouslyOwned: true,
      rootAliveAt: 99_999,
      proven: false,
      members: [],
    },
    {
      title: 'a leaderless group with a tagged member of the session outside the group',
      procs: [inTree(201), proc(203, { ppid: 1, pgid: 203, sid: 200, tag: 't1' })],
      proven: true,
      members: [201, 203],
    },
    {
      title: 'a leaderless group proven by a tagged member',
      procs: [inTree(201, { tag: 't1' }), inTree(202)],
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group with no tagged member',
      procs: [inTree(201), inTree(202)],
      proven: false,
      members: [],
      doubt: /no leader and no member carrying/,
    },
    {
      title: "a leaderless group whose only tagged member is another user's",
      procs: [inTree(201, { tag: 't1', uid: 4242 }), inTree(202)],
      proven: false,
      members: [],
      excluded: /pid 201 carries the tree's tag but runs as uid 4242/,
    },
    {
      title: 'a tagged process of ours outside the group, and its child',
      procs: [proc(300, { tag: 't1' }), proc(301, { ppid: 300 })],
      proven: false,
      members: [300, 301],
    },
    {
      title: 'a member that changed uid, by lineage (a child of a member)',
      procs: [proc(200), proc(310, { ppid: 200, pgid: 310, sid: 310, uid: 0 })],
      proven: true,
      members: [200, 310],
    },
    {
      title: 'macOS: a leader whose whole second overlaps tracking is not trusted',
      procs: [proc(200, { startTime: TRACKED - 500 }), inTree(201)],
      precision: MAC_START_PRECISION,
      proven: false,
      members: [],
      doubt: /started after the tree was tracked/,
    },
    {
      title: 'macOS: a leader a whole second older than tracking',
      procs: [proc(200, { startTime: TRACKED - 1500 }), inTree(201)],
      precision: MAC_START_PRECISION,
      proven: true,
      members: [200, 201],
    },
    {
      title: "Windows: a process at the leader's pid proves nothing to an outsider",
      procs: [proc(200, { startTime: 0 }), proc(201, { ppid: 200 })],
      precision: { unit: 'none', errorMs: Infinity },
      proven: false,
      members: [],
      doubt: /no start times/,
    },
    {
      title: 'Windows: the continuous owner',
      procs: [proc(200, { startTime: 0 }), proc(201, { ppid: 200 })],
      precision: { unit: 'none', errorMs: Infinity },
      continuouslyOwned: true,
      proven: true,
      members: [200, 201],
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const m = machine(c.procs, { precision: c.precision });
      const r = resolveTreeMembers(
        c.tree ?? tree,
        m.table.snapshot(),
        { continuouslyOwned: c.continuouslyOwned ?? false, cgroupVerified: false, extraSeeds: c.seen, rootAliveAt: c.rootAliveAt },
        m.core,
      );
      assert.strictEqual(r.groupProven, c.proven, r.groupDoubt);
      assert.deepStrictEqual(r.members.map((p) => p.pid).sort(), c.members);
      if (c.doubt) assert.match(r.groupDoubt ?? '', c.doubt);
      if (c.excluded)
        assert.ok(
          r.excluded.some((e) => c.excluded!.test(e)),
          r.excluded.join('; '),
        );
    });
  }

  // A root that is not its own group's leader is a member only as the recorded root: in ticks exactly, in
  // epoch times (macOS) within two error bounds of its recorded start.
  const rootCases: { title: string; precision: StartPrecision; fields: Partial<FakeProcess>; member: boolean }[] = [
    { title: 'Linux, its exact start tick', precision: LINUX_PRECISION, fields: { startKey: 1200 }, member: true },
    { title: 'Linux, one tick later', precision: LINUX_PRECISION, fields: { startKey: 1201 }, member: false },
    {
      title: 'macOS, 2 s off',
      precision: MAC_START_PRECISION,
      fields: { startTime: tree.rootStartTime + 2 * MAC_START_PRECISION.errorMs },
      member: true,
    },
    {
      title: 'macOS, beyond 2 error bounds',
      precision: MAC_START_PRECISION,
      fields: { startTime: tree.rootStartTime + 2 * MAC_START_PRECISION.errorMs + 1 },
      member: false,
    },
    { title: 'Windows (no start times)', precision: { unit: 'none', errorMs: Infinity }, fields: {}, member: false },
  ];
  for (const c of rootCases) {
    it(`the root start-time tolerance: a root that left its group, ${c.title}: ${c.member ? 'a member' : 'not a member'}`, () => {
      const m = machine([proc(205, { pgid: 206, sid: 206, ...c.fields })], { precision: c.precision });
      const r = resolveTreeMembers(
        { ...tree, rootPid: 205 },
        m.table.snapshot(),
        { continuouslyOwned: false, cgroupVerified: false },
        m.core,
      );
      assert.strictEqual(
        r.members.some((p) => p.pid === 205),
        c.member,
      );
    });
  }
});
