/**
 * What the view's member tracking reads next (src/proc/tracking/memberTracker.ts), from the answers it is taught:
 * when it scans every process, and when it walks from what it knows. No process is read.
 */
import * as assert from 'assert';
import { MemberInfo } from '../../../src/proc';
import { MemberListing, TreeQuery } from '../../../src/proc/tracking/listing';
import { MemberTracker } from '../../../src/proc/tracking/memberTracker';
import { machine } from '../../support/synthetic';

describe('member tracking: what a refresh reads next', () => {
  const core = machine([]).core;

  it('scans every process at most once per interval, at once when asked or for a tree it knows nothing of, never for trees in their own cgroups', () => {
    const clock = { now: 0 };
    const tracker = new MemberTracker(core, { now: () => clock.now, fullScanIntervalMs: 10_000 });
    const group = {
      id: 'g',
      rootPid: 100,
      pgid: 100,
      sid: 100,
      rootStartTime: 0,
      trackedAt: 0,
      cgroup: null,
      continuouslyOwned: true,
      cgroupVerified: false,
    };
    const inCgroup = { ...group, id: 'c', cgroup: '/sys/fs/cgroup/x', cgroupVerified: true };
    const members = (n: number) => Array.from({ length: n }, (_, i) => ({ pid: 1000 + i }) as MemberInfo);
    const answer = (id: string, n: number, listed = 1000): MemberListing => ({
      takenAt: 0,
      processCount: n,
      listed,
      trees: [{ id, members: members(n) }],
      terminals: [],
      windowRecords: [],
    });
    const ask = (trees: TreeQuery[], n = 3, tracking = true) => {
      const r = tracker.next(trees, {}, tracking);
      tracker.learn(answer(trees[0]?.id ?? '', n));
      return r;
    };
    const fulls: number[] = [];
    for (let t = 0; t <= 25_000; t += 1000) {
      clock.now = t + (t % 3000 === 0 ? -3 : 2); // timers drift a few ms either way
      const r = ask([group]);
      if (r.full) fulls.push(t);
      assert.strictEqual(r.thorough, t === 0, 'every process read only the first time');
    }
    assert.deepStrictEqual(fulls, [0, 10_000, 20_000]);
    tracker.scanSoon();
    const asked = ask([group]);
    assert.deepStrictEqual([asked.full, asked.thorough], [true, true]);
    assert.strictEqual(ask([group]).full, false);
    const other = { ...group, id: 'h' };
    const first = ask([group, other]);
    assert.deepStrictEqual(
      [first.full, first.thorough],
      [true, true],
      'a tree it knows no members of: they may be older than the last scan',
    );
    tracker.scanSoon();
    assert.strictEqual(ask([inCgroup]).full, false, 'a cgroup holds every member: no scan needed');
    assert.strictEqual(ask([]).full, false);
    assert.strictEqual(ask([group], 3, false).full, true, 'without children lists every refresh is a full scan');
    // A tree that is a large part of the machine: listing /proc costs less than walking it, every refresh.
    clock.now += 1000;
    ask([group], 20);
    assert.strictEqual(ask([group], 400).full, false);
    assert.strictEqual(ask([group], 400).full, true);
    assert.strictEqual(ask([group], 400).full, true);
  });
});
