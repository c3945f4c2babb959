/** Whether an owner is alive, in boot ticks (src/proc/identity/ownerIdentity.ts), on synthetic process tables. */
import * as assert from 'assert';
import { OwnerInfo } from '../../../src/proc';
import { ownerState } from '../../../src/proc/identity/ownerIdentity';
import { CLOCK, identity, proc, syntheticTable } from '../../support/synthetic';

describe('owner liveness, in boot ticks', () => {
  const here = () => CLOCK;
  const cases: { name: string; table: ReturnType<typeof syntheticTable>; owner: () => OwnerInfo; expect: string }[] = [
    {
      name: 'same pid, same start tick: alive',
      table: syntheticTable([proc(500, { startKey: 1234 })]),
      owner: () => identity(500, 1234),
      expect: 'alive',
    },
    { name: 'pid gone: dead', table: syntheticTable([]), owner: () => identity(500, 1234), expect: 'dead' },
    {
      name: 'pid held by a later process: replaced',
      table: syntheticTable([proc(500, { startKey: 1235 })]),
      owner: () => identity(500, 1234),
      expect: 'replaced',
    },
    {
      name: 'pid held by an earlier process: cannot be (unknown)',
      table: syntheticTable([proc(500, { startKey: 1000 })]),
      owner: () => identity(500, 1234),
      expect: 'unknown',
    },
    {
      name: 'unreadable (EMFILE): unknown, never dead',
      table: syntheticTable([], { unreadable: [500] }),
      owner: () => identity(500, 1234),
      expect: 'unknown',
    },
    {
      name: 'an earlier boot',
      table: syntheticTable([proc(500, { startKey: 1234 })]),
      owner: () => ({ ...identity(500, 1234), bootId: '00000000-0000-0000-0000-000000000000' }),
      expect: 'earlier-boot',
    },
    {
      name: 'another pid namespace: unknown',
      table: syntheticTable([]),
      owner: () => ({ ...identity(500, 1234), pidNs: 1 }),
      expect: 'unknown',
    },
    {
      name: 'another machine: unknown',
      table: syntheticTable([]),
      owner: () => ({ ...identity(500, 1234), machineId: 'host:elsewhere', bootId: '00000000-0000-0000-0000-000000000001' }),
      expect: 'unknown',
    },
    { name: 'older record, pid gone: dead', table: syntheticTable([]), owner: () => ({ pid: 500, startTime: 1 }), expect: 'dead' },
    {
      name: 'older record, pid held by anyone: unknown',
      table: syntheticTable([proc(500, { startKey: 99_999_999 })]),
      owner: () => ({ pid: 500, startTime: 1 }),
      expect: 'unknown',
    },
  ];
  for (const k of cases) it(k.name, () => assert.strictEqual(ownerState(k.table, k.owner(), here()), k.expect));

  it('a table that throws (EMFILE) is unknown', () => {
    const throwing = {
      startPrecision: { unit: 'ticks' as const, errorMs: 50 },
      read: () => {
        throw new Error('EMFILE');
      },
      snapshot: () => {
        throw new Error('EMFILE');
      },
    };
    assert.strictEqual(ownerState(throwing, identity(5, 1), here()), 'unknown');
  });

  it('judges nothing from a /proc of another pid namespace', () => {
    assert.strictEqual(ownerState(syntheticTable([]), identity(500, 1234), { ...here(), procIsOurs: false }), 'unknown');
  });
});
