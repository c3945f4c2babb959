import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { OwnerInfo, RecordStore } from '../../../src/proc';
import { ownerState, sameProcess } from '../../../src/proc/identity/ownerIdentity';
import { processTag } from '../../../src/proc/records/fileNames';
import { setAsidePreviousRecord } from '../../../src/proc/records/previousRecord';
import { MAX_RECORD_BYTES, recordShapeProblem } from '../../../src/proc/records/schema';
import { tmpDir } from '../../support/started';
import { clock, identity, proc, syntheticTable, treeRecord } from '../../support/records';

const tree = (id: string, extra = {}) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100, ...extra });

describe('owned-tree records', () => {
  it('writes the version-1 shape with the boot-clock fields added after it, atomically, and removes the file when nothing is tracked', () => {
    const store = new RecordStore(tmpDir());
    const owner = identity(777, 500, 1_700_000_000_000);
    store.write(owner, [tree('abc', { rootStartTicks: 600, trackedAtTicks: 601 })]);
    const text = fs.readFileSync(path.join(store.dir, '777.json'), 'utf8');
    assert.deepStrictEqual(Object.keys(JSON.parse(text)), ['version', 'owner', 'trees']);
    assert.deepStrictEqual(Object.keys(JSON.parse(text).owner), ['pid', 'startTime', 'startTicks', 'bootId', 'pidNs', 'machineId']);
    assert.deepStrictEqual(Object.keys(JSON.parse(text).trees[0]), [
      'id',
      'label',
      'command',
      'rootPid',
      'pgid',
      'sid',
      'rootStartTime',
      'trackedAt',
      'envTag',
      'cgroup',
      'rootStartTicks',
      'trackedAtTicks',
    ]);
    assert.deepStrictEqual(store.read(777)?.trees[0], tree('abc', { rootStartTicks: 600, trackedAtTicks: 601 }));
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), [`.777.json.${processTag(owner)}.current`, '777.json'], 'no temp file left');
    assert.strictEqual(fs.statSync(path.join(store.dir, '777.json')).mode & 0o777, 0o600);
    assert.strictEqual(
      fs.statSync(path.join(store.dir, '777.json')).ino,
      fs.statSync(store.currentOf(owner)).ino,
      'the record and its .current link are one file',
    );
    store.write(owner, [tree('abc'), tree('def')]);
    assert.strictEqual(
      fs.statSync(path.join(store.dir, '777.json')).ino,
      fs.statSync(store.currentOf(owner)).ino,
      'the link follows each write',
    );
    store.write(owner, []);
    assert.deepStrictEqual(fs.readdirSync(store.dir), []);
  });

  it('writes no ticks for an owner without a boot identity (they would mean nothing)', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 778, startTime: 1 }, [tree('abc', { rootStartTicks: 600, trackedAtTicks: 601 })]);
    assert.deepStrictEqual(store.read(778)?.trees[0], tree('abc'));
  });

  it('reads a record of an older version (no boot-clock fields) as it is', () => {
    const store = new RecordStore(tmpDir());
    fs.writeFileSync(
      path.join(store.dir, '31.json'),
      JSON.stringify({ version: 1, owner: { pid: 31, startTime: 5 }, trees: [tree('old')] }),
      { mode: 0o600 },
    );
    assert.deepStrictEqual(store.list().records[0].record.trees, [tree('old')]);
  });

  it('reports a corrupt, a truncated and a foreign file; only a sweep (setAside) moves them', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 10, startTime: 1 }, [tree('good')]);
    const write = (name: string, text: string) => fs.writeFileSync(path.join(store.dir, name), text, { mode: 0o600 });
    write('11.json', '{"version":1,"owner":{"pid":11,"startTime":1},"trees":[{"id":"x"');
    write('12.json', '{"hello":"world"}');
    write('13.json', '');
    write('14.json', JSON.stringify({ version: 1, owner: { pid: 14, startTime: 1 }, trees: [tree('y', { pgid: -3 })] }));
    const before = fs.readdirSync(store.dir).sort();
    const listed = store.list();
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), before, 'listing alone changes nothing');
    assert.ok(listed.problems.every((p) => p.setAsideTo === undefined));
    const { records, problems } = store.list({ setAside: true });
    assert.deepStrictEqual(
      records.map((r) => r.record.owner.pid),
      [10],
    );
    const byFile = new Map(problems.map((p) => [path.basename(p.file), p]));
    assert.match(byFile.get('11.json')!.problem, /not valid JSON/);
    assert.match(byFile.get('12.json')!.problem, /not an Agent Trees record: version/);
    assert.match(byFile.get('13.json')!.problem, /empty file/);
    assert.match(byFile.get('14.json')!.problem, /trees\[0\]\.pgid: expected a positive integer/);
    for (const p of problems) assert.ok(p.setAsideTo && fs.existsSync(p.setAsideTo), `${p.file} set aside`);
    assert.deepStrictEqual(store.list().problems, [], 'set aside: a second reader is not bothered again');
  });

  it('never quotes a corrupt file in its problem', () => {
    const store = new RecordStore(tmpDir());
    fs.writeFileSync(path.join(store.dir, '16.json'), 'root:x:0:0:SECRET-CONTENT', { mode: 0o600 });
    const [p] = store.list().problems;
    assert.match(p.problem, /not valid JSON/);
    assert.doesNotMatch(p.problem, /root|SECRET/);
  });

  it('leaves a record of another format version where it is', () => {
    const store = new RecordStore(tmpDir());
    fs.writeFileSync(path.join(store.dir, '15.json'), JSON.stringify({ version: 2, owner: { pid: 15 }, trees: [] }), { mode: 0o600 });
    const { problems } = store.list({ setAside: true });
    assert.match(problems[0].problem, /format version 2/);
    assert.strictEqual(problems[0].setAsideTo, undefined);
    assert.ok(fs.existsSync(path.join(store.dir, '15.json')));
  });

  it('rejects a tag that does not match the id exactly, and half a boot identity', () => {
    assert.match(
      recordShapeProblem({ version: 1, owner: { pid: 1, startTime: 1 }, trees: [tree('abc', { envTag: 'AGENT_TREES_TREE_ID=abcdef' })] })!,
      /envTag/,
    );
    assert.match(recordShapeProblem({ version: 1, owner: { pid: 1, startTime: 1, startTicks: 5 }, trees: [] })!, /without the rest/);
    assert.match(
      recordShapeProblem({ version: 1, owner: { pid: 1, startTime: 1 }, trees: [tree('t', { trackedAtTicks: 3 })] })!,
      /without the owner's boot identity/,
    );
  });
});

describe('records nobody else can plant', () => {
  const other = 12345;

  it('refuses every file of a folder others can write, and moves nothing', function () {
    if (process.getuid?.() !== 0) this.skip();
    const store = new RecordStore(tmpDir());
    store.write({ pid: 21, startTime: 1 }, [tree('t')]);
    fs.chmodSync(store.dir, 0o1777);
    const { records, problems } = store.list({ setAside: true });
    assert.deepStrictEqual(records, []);
    assert.match(problems[0].problem, /writable by other users \(mode 1777\)/);
    assert.strictEqual(store.claim(21, identity(process.pid, 1)), undefined, 'nothing in it is claimed');
    assert.throws(() => store.ensureDir(), /writable by other users/);
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), ['.21.json.21-m1.current', '21.json']);
  });

  it("refuses another user's file, a file others can write, a symlink, a FIFO and a folder, each left in place", function () {
    if (process.getuid?.() !== 0) this.skip();
    const store = new RecordStore(tmpDir());
    const f = (name: string) => path.join(store.dir, name);
    const valid = (pid: number) => JSON.stringify({ version: 1, owner: { pid, startTime: 1 }, trees: [tree(`t${pid}`)] });
    fs.writeFileSync(f('41.json'), valid(41), { mode: 0o600 });
    fs.chownSync(f('41.json'), other, other);
    fs.writeFileSync(f('42.json'), valid(42));
    fs.chmodSync(f('42.json'), 0o666);
    const target = path.join(tmpDir(), 'secret-target-name');
    fs.writeFileSync(target, valid(43));
    fs.symlinkSync(target, f('43.json'));
    execFileSync('mkfifo', [f('44.json')]);
    fs.mkdirSync(f('45.json'));
    fs.writeFileSync(f('46.json'), ' '.repeat(MAX_RECORD_BYTES + 10), { mode: 0o600 });
    const { records, problems } = store.list({ setAside: true });
    assert.deepStrictEqual(records, []);
    const byFile = new Map(problems.map((p) => [path.basename(p.file), p.problem]));
    assert.match(byFile.get('41.json')!, new RegExp(`owned by uid ${other}, not by this user`));
    assert.match(byFile.get('42.json')!, /writable by other users \(mode 666\)/);
    assert.match(byFile.get('43.json')!, /a symbolic link, not a regular file: not followed/);
    assert.doesNotMatch(byFile.get('43.json')!, /secret|target|tmp\/agent/);
    assert.match(byFile.get('44.json')!, /a FIFO, not a regular file/);
    assert.match(byFile.get('45.json')!, /a folder, not a regular file/);
    assert.match(byFile.get('46.json')!, /more than a record can be/);
    for (const p of problems) assert.match(p.problem, /left in place/);
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), ['41.json', '42.json', '43.json', '44.json', '45.json', '46.json']);
  });
});

describe('claims', () => {
  const claimant = () => identity(process.pid, 77);

  it('lets only one of two claimants claim a record, under names that never collide', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 20, startTime: 1 }, [tree('t')]);
    const a = store.claim(20, identity(1001, 5));
    const b = store.claim(20, identity(1002, 6));
    assert.ok(a && !b);
    assert.deepStrictEqual(
      store.claims(clock()).map((c) => [c.ownerPid, c.claimant.pid, c.claimant.startTicks]),
      [[20, 1001, 5]],
    );
    assert.ok(sameProcess(store.claims(clock())[0].claimant, identity(1001, 5)), 'the claimant reads back from the name');
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
    assert.deepStrictEqual(store.claims(clock())[0].claimant, { pid: 999, startTime: 1_700_000_000_000 });
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

describe('removeStaleTempFiles', () => {
  const cases: { name: string; writer?: 'alive' | 'gone'; current?: true; ageMs: number; removed: boolean }[] = [
    { name: 'ours, writer gone', writer: 'gone', ageMs: 0, removed: true },
    { name: 'ours, writer alive (mid-write), however old', writer: 'alive', ageMs: 3_600_000, removed: false },
    { name: 'a .current link, its owner gone', writer: 'gone', current: true, ageMs: 0, removed: true },
    { name: 'a .current link, its owner alive, however old', writer: 'alive', current: true, ageMs: 3_600_000, removed: false },
    { name: 'an older version temp file, over a minute old', ageMs: 120_000, removed: true },
    { name: 'an older version temp file, fresh', ageMs: 1_000, removed: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const store = new RecordStore(tmpDir());
      const writer = identity(31, c.writer === 'alive' ? 1 : 2);
      const name = c.current
        ? `.31.json.${processTag(writer)}.current`
        : c.writer
          ? `.31.json.${processTag(writer)}.0123456789ab.tmp`
          : '.31.json.4242.k3j4h5.tmp';
      const file = path.join(store.dir, name);
      fs.writeFileSync(file, '{}', { mode: 0o600 });
      const at = (Date.now() - c.ageMs) / 1000;
      fs.utimesSync(file, at, at);
      const gone = (w: OwnerInfo) => w.startTicks === 2;
      const removed = store.removeStaleTempFiles(gone, clock());
      assert.deepStrictEqual(removed, c.removed ? [file] : []);
      assert.strictEqual(fs.existsSync(file), !c.removed);
    });
  }

  it('leaves every file not of its own naming, however old', () => {
    const store = new RecordStore(tmpDir());
    const names = [
      '.draft.tmp',
      '.31.json.tmp',
      'notes.tmp',
      '.31.json.12-t5-hzz.0123456789ab.tmp',
      '31.json.bad-1-0123456789ab',
      '.31.json.current',
      '31.json.current',
    ];
    for (const n of names) {
      fs.writeFileSync(path.join(store.dir, n), 'x', { mode: 0o600 });
      fs.utimesSync(path.join(store.dir, n), 1, 1);
    }
    assert.deepStrictEqual(
      store.removeStaleTempFiles(() => true, clock(), Date.now()),
      [],
    );
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), names.sort());
  });
});

describe('setAsidePreviousRecord', () => {
  const c = () => clock();
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
      const table = syntheticTable([proc(process.pid, 1000)]);
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

  it('reports an unreadable record and leaves it', () => {
    const store = new RecordStore(tmpDir());
    execFileSync('mkfifo', [store.fileOf(process.pid)]);
    const outcome = setAsidePreviousRecord(store, identity(process.pid, 1000));
    assert.strictEqual(outcome.outcome, 'unreadable');
    assert.ok(fs.statSync(store.fileOf(process.pid)).isFIFO());
  });
});

describe('owner liveness, in boot ticks', () => {
  const here = () => clock();
  const cases: { name: string; table: ReturnType<typeof syntheticTable>; owner: () => OwnerInfo; expect: string }[] = [
    {
      name: 'same pid, same start tick: alive',
      table: syntheticTable([proc(500, 1234)]),
      owner: () => identity(500, 1234),
      expect: 'alive',
    },
    { name: 'pid gone: dead', table: syntheticTable([]), owner: () => identity(500, 1234), expect: 'dead' },
    {
      name: 'pid held by a later process: replaced',
      table: syntheticTable([proc(500, 1235)]),
      owner: () => identity(500, 1234),
      expect: 'replaced',
    },
    {
      name: 'pid held by an earlier process: cannot be (unknown)',
      table: syntheticTable([proc(500, 1000)]),
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
      table: syntheticTable([proc(500, 1234)]),
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
      table: syntheticTable([proc(500, 99_999_999)]),
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
