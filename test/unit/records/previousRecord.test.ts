/** A record left under our own pid when we start owning (src/proc/records/previousRecord.ts): whose it is, and where it goes. */
import * as assert from 'assert';
import * as fs from 'fs';
import { OwnerInfo, RecordStore } from '../../../src/proc';
import { ownerState } from '../../../src/proc/identity/ownerIdentity';
import { setAsidePreviousRecord } from '../../../src/proc/records/previousRecord';
import { tmpDir } from '../../support/repo';
import { CLOCK, identity, proc, syntheticTable, treeRecord } from '../../support/synthetic';

const tree = (id: string, extra = {}) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100, ...extra });

describe('setAsidePreviousRecord', () => {
  const c = () => CLOCK;
  // claimant: how a sweeper judges the claim's claimant (the earlier process): gone means it takes it over now.
  const cases: { name: string; previous?: (self: OwnerInfo) => OwnerInfo; expect: string; claimant?: string }[] = [
    { name: 'no record', expect: 'none' },
    { name: 'our own record', previous: (self) => self, expect: 'ours' },
    {
      name: 'an earlier process with our pid (other start tick)',
      previous: (self) => ({ ...self, startTicks: self.startTicks! - 10 }),
      expect: 'set-aside',
      claimant: 'replaced',
    },
    {
      name: 'a process of an earlier boot with our pid',
      previous: (self) => ({ ...self, bootId: '00000000-0000-0000-0000-000000000000' }),
      expect: 'set-aside',
      claimant: 'earlier-boot',
    },
    {
      name: 'an older version record with our pid (swept once we are gone: never on a guess)',
      previous: (self) => ({ pid: self.pid, startTime: self.startTime }),
      expect: 'set-aside',
      claimant: 'unknown',
    },
  ];
  for (const k of cases) {
    it(k.name, () => {
      const store = new RecordStore(tmpDir());
      const self = identity(process.pid, 1000);
      const table = syntheticTable([proc(process.pid, { startKey: 1000 })]);
      const prev = k.previous?.(self);
      if (prev) store.write(prev, [tree('p')]);
      const outcome = setAsidePreviousRecord(store, self);
      assert.strictEqual(outcome.outcome, k.expect);
      if (outcome.outcome === 'set-aside') {
        assert.ok(!fs.existsSync(store.fileOf(self.pid)), 'our name is free for our own record');
        const [claim] = store.claims(c());
        assert.strictEqual(claim.claimant.pid, prev!.pid, 'claimed in the name of the earlier process');
        assert.strictEqual(ownerState(table, claim.claimant, c()), k.claimant);
        assert.deepStrictEqual(
          store.readClaim(claim.file).trees.map((t) => t.id),
          ['p'],
        );
      } else if (prev) {
        assert.ok(fs.existsSync(store.fileOf(self.pid)));
      }
    });
  }
});
