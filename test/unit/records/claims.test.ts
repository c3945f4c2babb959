/** Claims of owned-tree records (src/proc/records/claims.ts): who may claim, under which names, and what goes back. */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { OwnerInfo, RecordStore } from '../../../src/proc';
import { sameProcess } from '../../../src/proc/identity/ownerIdentity';
import { tmpDir } from '../../support/repo';
import { CLOCK, identity, treeRecord } from '../../support/synthetic';

const tree = (id: string, extra = {}) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100, ...extra });

describe('claims', () => {
  const claimant = () => identity(process.pid, 77);

  it('lets only one of two claimants claim a record, under names that never collide', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 20, startTime: 1 }, [tree('t')]);
    const a = store.claim(20, identity(1001, 5));
    const b = store.claim(20, identity(1002, 6));
    assert.ok(a && !b);
    assert.deepStrictEqual(
      store.claims(CLOCK).map((c) => [c.ownerPid, c.claimant.pid, c.claimant.startTicks]),
      [[20, 1001, 5]],
    );
    assert.ok(sameProcess(store.claims(CLOCK)[0].claimant, identity(1001, 5)), 'the claimant reads back from the name');
  });

  it('gives the same claimant two names for two claims of one owner pid: neither replaces the other', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 22, startTime: 1 }, [tree('first')]);
    const first = store.claim(22, claimant())!;
    store.write({ pid: 22, startTime: 2 }, [tree('second')]);
    const second = store.claim(22, claimant())!;
    const third = store.takeOverClaim(first, 22, claimant())!;
    assert.strictEqual(new Set([first, second, third]).size, 3);
    assert.deepStrictEqual([store.readClaim(second).trees[0].id, store.readClaim(third).trees[0].id], ['second', 'first']);
  });

  it('reads back an older version claim name (claimant pid and start ms)', () => {
    const store = new RecordStore(tmpDir());
    fs.writeFileSync(path.join(store.dir, '23.json.claimed-999-1700000000000'), '{}', { mode: 0o600 });
    assert.deepStrictEqual(store.claims(CLOCK)[0].claimant, { pid: 999, startTime: 1_700_000_000_000 });
  });

  it('restores a claim under its owner name, never over a newer record, and drops a superseded copy', () => {
    const store = new RecordStore(tmpDir());
    const owner = identity(24, 100);
    store.write(owner, [tree('old')]);
    const c1 = store.claim(24, claimant())!;
    assert.strictEqual(store.restoreClaim(c1, store.readClaim(c1), sameProcess, true), 'restored');
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), [path.basename(store.currentOf(owner)), '24.json']);
    const c2 = store.claim(24, claimant())!;
    store.write(owner, [tree('newer')]);
    assert.strictEqual(store.restoreClaim(c2, store.readClaim(c2), sameProcess, true), 'superseded');
    assert.strictEqual(store.read(24)!.trees[0].id, 'newer');
    const c3 = store.claim(24, claimant())!;
    store.write(identity(24, 200), [tree('another-owner')]);
    assert.strictEqual(store.restoreClaim(c3, store.readClaim(c3), sameProcess, true), 'kept');
    assert.ok(fs.existsSync(c3));
    assert.strictEqual(store.read(24)!.trees[0].id, 'another-owner');
  });

  // The owner removes its record while a sweeper holds it claimed (and then judges the owner alive): what the
  // owner did last is what stands, however its steps interleave with the sweeper's.
  const whileClaimed: { name: string; owner: (store: RecordStore, owner: OwnerInfo) => void; expect: string; trees: string[] }[] = [
    { name: 'removed', owner: (s, o) => s.write(o, []), expect: 'withdrawn', trees: [] },
    { name: 'rewrote, then removed', owner: (s, o) => (s.write(o, [tree('newer')]), s.write(o, [])), expect: 'withdrawn', trees: [] },
    {
      name: 'removed, then recorded a new tree',
      owner: (s, o) => (s.write(o, []), s.write(o, [tree('new')])),
      expect: 'superseded',
      trees: ['new'],
    },
    { name: 'did nothing', owner: () => undefined, expect: 'restored', trees: ['old'] },
  ];
  for (const k of whileClaimed) {
    it(`gives a live owner back only what it says now: it ${k.name} while its record was claimed`, () => {
      const store = new RecordStore(tmpDir());
      const owner = identity(26, 100);
      store.write(owner, [tree('old')]);
      const claim = store.claim(26, claimant())!;
      const claimed = store.readClaim(claim);
      k.owner(new RecordStore(store.dir), owner); // the owner, between the claim and the give-back
      assert.strictEqual(store.restoreClaim(claim, claimed, sameProcess, true), k.expect);
      assert.ok(!fs.existsSync(claim), 'the claimed copy is gone');
      assert.deepStrictEqual(store.read(26)?.trees.map((t) => t.id) ?? [], k.trees);
    });
  }

  it("gives a gone owner's claim back as it was claimed (it has no .current link once a sweep finished it)", () => {
    const store = new RecordStore(tmpDir());
    const owner = identity(27, 100);
    store.write(owner, [tree('a'), tree('b')]);
    const c1 = store.claim(27, claimant())!;
    store.finishClaim(c1, store.readClaim(c1), [tree('b')], claimant());
    assert.ok(!fs.existsSync(store.currentOf(owner)), "the dead owner's link went with the sweep");
    const c2 = store.claim(27, claimant())!;
    assert.strictEqual(store.restoreClaim(c2, store.readClaim(c2), sameProcess, false), 'restored');
    assert.deepStrictEqual(
      store.read(27)!.trees.map((t) => t.id),
      ['b'],
    );
  });

  it('finishes a claim: remaining trees back under the owner name, or kept in the claim if that name is taken', () => {
    const store = new RecordStore(tmpDir());
    const owner = identity(25, 100);
    store.write(owner, [tree('a'), tree('b')]);
    const c1 = store.claim(25, claimant())!;
    store.finishClaim(c1, store.readClaim(c1), [tree('b')], claimant());
    assert.deepStrictEqual(fs.readdirSync(store.dir), ['25.json'], "the gone owner's .current link is removed too");
    assert.deepStrictEqual(
      store.read(25)!.trees.map((t) => t.id),
      ['b'],
    );
    const c2 = store.claim(25, claimant())!;
    store.write(identity(25, 300), [tree('new-owner')]);
    store.finishClaim(c2, store.readClaim(c2), [tree('b')], claimant());
    assert.strictEqual(store.read(25)!.trees[0].id, 'new-owner', 'never written over');
    assert.deepStrictEqual(
      store.readClaim(c2).trees.map((t) => t.id),
      ['b'],
    );
    store.finishClaim(c2, store.readClaim(c2), [], claimant());
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), [path.basename(store.currentOf(identity(25, 300))), '25.json']);
  });
});
