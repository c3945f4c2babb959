import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { ownerState, ProcessTable, RecordStore, recordShapeProblem, TreeRecord } from '../../src/proc';
import { tmpDir } from './helpers';

const tree = (id: string, extra: Partial<TreeRecord> = {}): TreeRecord => ({
  id,
  label: 'demo',
  command: ['bash', '-c', 'sleep 1'],
  rootPid: 4242,
  pgid: 4242,
  sid: 4242,
  rootStartTime: 1_700_000_000_000,
  trackedAt: 1_700_000_000_100,
  envTag: `AGENT_TREES_TREE_ID=${id}`,
  cgroup: null,
  ...extra,
});

describe('owned-tree records', () => {
  it('writes exactly the documented shape, atomically, and removes the file when nothing is tracked', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 777, startTime: 1_700_000_000_000 }, [tree('abc')]);
    const text = fs.readFileSync(path.join(store.dir, '777.json'), 'utf8');
    assert.deepStrictEqual(Object.keys(JSON.parse(text)), ['version', 'owner', 'trees']);
    assert.deepStrictEqual(Object.keys(JSON.parse(text).trees[0]),
      ['id', 'label', 'command', 'rootPid', 'pgid', 'sid', 'rootStartTime', 'trackedAt', 'envTag', 'cgroup']);
    assert.deepStrictEqual(store.read(777)?.trees[0], tree('abc'));
    assert.deepStrictEqual(fs.readdirSync(store.dir), ['777.json'], 'no temp file left');
    store.write({ pid: 777, startTime: 1_700_000_000_000 }, []);
    assert.deepStrictEqual(fs.readdirSync(store.dir), []);
  });

  it('reports a corrupt, a truncated and a foreign file, sets them aside, and still reads the good one', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 10, startTime: 1 }, [tree('good')]);
    fs.writeFileSync(path.join(store.dir, '11.json'), '{"version":1,"owner":{"pid":11,"startTime":1},"trees":[{"id":"x"');
    fs.writeFileSync(path.join(store.dir, '12.json'), '{"hello":"world"}');
    fs.writeFileSync(path.join(store.dir, '13.json'), '');
    fs.writeFileSync(path.join(store.dir, '14.json'), JSON.stringify({ version: 1, owner: { pid: 14, startTime: 1 }, trees: [tree('y', { pgid: -3 })] }));
    const { records, problems } = store.list();
    assert.deepStrictEqual(records.map((r) => r.record.owner.pid), [10]);
    const byFile = new Map(problems.map((p) => [path.basename(p.file), p]));
    assert.match(byFile.get('11.json')!.problem, /not valid JSON/);
    assert.match(byFile.get('12.json')!.problem, /not an Agent Trees record: version/);
    assert.match(byFile.get('13.json')!.problem, /empty file/);
    assert.match(byFile.get('14.json')!.problem, /trees\[0\]\.pgid: expected a positive integer/);
    for (const p of problems) assert.ok(p.setAsideTo && fs.existsSync(p.setAsideTo), `${p.file} set aside`);
    // Set aside: a second reader is not bothered again.
    assert.deepStrictEqual(store.list().problems, []);
  });

  it('leaves a record of another format version where it is', () => {
    const store = new RecordStore(tmpDir());
    fs.writeFileSync(path.join(store.dir, '15.json'), JSON.stringify({ version: 2, owner: { pid: 15 }, trees: [] }));
    const { problems } = store.list();
    assert.match(problems[0].problem, /format version 2/);
    assert.strictEqual(problems[0].setAsideTo, undefined);
    assert.ok(fs.existsSync(path.join(store.dir, '15.json')));
  });

  it('rejects a tag that does not match the id exactly', () => {
    assert.match(recordShapeProblem({ version: 1, owner: { pid: 1, startTime: 1 }, trees: [tree('abc', { envTag: 'AGENT_TREES_TREE_ID=abcdef' })] })!, /envTag/);
  });

  it('lets only one of two claimants claim a record', () => {
    const store = new RecordStore(tmpDir());
    store.write({ pid: 20, startTime: 1 }, [tree('t')]);
    const a = store.claim(20, { pid: 1001, startTime: 5 });
    const b = store.claim(20, { pid: 1002, startTime: 6 });
    assert.ok(a && !b);
    assert.deepStrictEqual(store.claims().map((c) => c.claimant.pid), [1001]);
  });
});

describe('owner liveness', () => {
  const fakeTable = (read: ProcessTable['read']): ProcessTable => ({ read, snapshot: () => { throw new Error('unused'); } });
  const proc = (startTime: number) => ({ pid: 5, ppid: 1, pgid: 5, sid: 5, state: 'S', startKey: 1, startTime, uid: 0, name: 'x', rssBytes: 0, cpuMs: 0 });

  it('counts an owner alive when its start time cannot be read', () => {
    assert.strictEqual(ownerState(fakeTable(() => { throw new Error('EIO'); }), 5, 1000), 'alive');
  });
  it('counts an owner replaced when its pid belongs to a process started later, beyond the clock slack', () => {
    assert.strictEqual(ownerState(fakeTable(() => proc(10_000)), 5, 1000), 'replaced');
    assert.strictEqual(ownerState(fakeTable(() => proc(2_500)), 5, 1000), 'alive', 'within the 2 s slack');
  });
  it('counts an owner dead when its pid is gone', () => {
    assert.strictEqual(ownerState(fakeTable(() => undefined), 4_000_000, 1000), 'dead');
  });
});
