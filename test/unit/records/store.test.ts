/**
 * The owned-tree records on disk (src/proc/records/store.ts, schema.ts): their shape, atomic writes, what a reader
 * reports of a corrupt or foreign file, and which temp files a sweep may remove.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { OwnerInfo, RecordStore } from '../../../src/proc';
import { processTag } from '../../../src/proc/records/fileNames';
import { recordShapeProblem } from '../../../src/proc/records/schema';
import { tmpDir } from '../../support/repo';
import { CLOCK, identity, treeRecord } from '../../support/synthetic';

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
      const removed = store.removeStaleTempFiles(gone, CLOCK);
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
      store.removeStaleTempFiles(() => true, CLOCK, Date.now()),
      [],
    );
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), names.sort());
  });
});
