/**
 * Claims, as sweeps in processes of their own meet them (src/proc/sweep/sweepOrphans.ts, through the real CLI): a
 * claim of a sweeper that died, a claim and a record of one owner pid, a record a live owner rewrote while it was
 * being claimed, and what no claim can be (a FIFO, a folder).
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { processCore, RecordStore, selfIdentity } from '../../../src/proc';
import { processTag } from '../../../src/proc/records/fileNames';
import { OwnerRecord } from '../../../src/proc/records/schema';
import { runBounded } from '../../support/cli';
import { cliOwners, deadPid, sweep, sweepJson } from '../../support/records';
import { CLI, tmpDir } from '../../support/repo';
import { aliveOf, waitAllDead } from '../../support/started';
import { syntheticTable } from '../../support/synthetic';

const node = process.execPath;
const processTable = () => processCore().table;

describe('claims, swept by processes of their own', () => {
  const owners = cliOwners();

  /** Rewrites a real record as one of owner pid `pid` (keeping its start tick: a dead earlier process). */
  const asOwner = (file: string, pid: number): OwnerRecord => {
    const rec = JSON.parse(fs.readFileSync(file, 'utf8')) as OwnerRecord;
    return { ...rec, owner: { ...rec.owner, pid } };
  };

  it('a fresh claim and a taken-over claim of one owner pid never replace each other: both trees are swept', async () => {
    const records = tmpDir();
    const [a, b] = [await owners.start(records), await owners.start(records)];
    for (const o of [a, b]) o.run.child.kill('SIGKILL');
    await Promise.all([a.run.exited, b.run.exited]);
    const shared = deadPid();
    const recA = asOwner(a.file, shared);
    const recB = asOwner(b.file, shared);
    fs.rmSync(a.file);
    fs.rmSync(b.file);
    // A: claimed by a sweeper that died mid-sweep (an older version's claim name); B: the record as it is now.
    const staleClaimant = deadPid();
    fs.writeFileSync(path.join(records, `${shared}.json.claimed-${staleClaimant}-${Date.now() - 5000}`), JSON.stringify(recA), {
      mode: 0o600,
    });
    fs.writeFileSync(path.join(records, `${shared}.json`), JSON.stringify(recB), { mode: 0o600 });
    const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
    const result = sweepJson(ran);
    assert.deepStrictEqual(result.trees.map((t: { treeId: string }) => t.treeId).sort(), [recA.trees[0].id, recB.trees[0].id].sort());
    assert.deepStrictEqual(await waitAllDead([...a.pids.all, ...b.pids.all]), []);
    assert.deepStrictEqual(fs.readdirSync(records), [], 'no record lost, none left');
  });

  it("a stale claim holding a live owner's record is judged again and given back, not swept", async () => {
    const records = tmpDir();
    const owner = await owners.start(records);
    // A sweeper (with a stepped clock, say) claimed the live owner's record, then died.
    const staleClaimant = deadPid();
    fs.renameSync(owner.file, path.join(records, `${owner.ownerPid}.json.claimed-${staleClaimant}-${Date.now()}`));
    const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
    const result = sweepJson(ran);
    assert.strictEqual(result.killed, 0, ran.stdout);
    assert.strictEqual(result.liveOwners, 1);
    assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, 'the live tree is untouched');
    assert.deepStrictEqual(
      fs.readdirSync(records).filter((n) => !n.endsWith('.current')),
      [path.basename(owner.file)],
      'the record is back under its name',
    );
    await owners.end(owner);
  });

  it('acts on what it claimed, not on what it read: a record rewritten by a live owner before the claim is given back', async () => {
    const records = tmpDir();
    const liveRecords = tmpDir();
    const owner = await owners.start(liveRecords);
    const live = fs.readFileSync(owner.file, 'utf8');
    const liveRecord = JSON.parse(live) as OwnerRecord;
    // What the sweep reads first: an earlier process with the live owner's pid (an earlier start tick), dead.
    const stale: OwnerRecord = { ...liveRecord, owner: { ...liveRecord.owner, startTicks: liveRecord.owner.startTicks! - 1 } };
    const file = path.join(records, path.basename(owner.file));
    fs.writeFileSync(file, JSON.stringify(stale), { mode: 0o600 });
    // Between the sweep's judging and its claim, the live owner writes its record under that name (as its
    // RecordStore does: with its .current link).
    const real = processTable();
    let judged = 0;
    const table = syntheticTable([]);
    table.snapshot = () => real.snapshot();
    table.read = (pid) => real.read(pid);
    table.probe = (pid) => {
      const p = real.read(pid) ?? 'gone';
      if (pid === owner.ownerPid && ++judged === 1) new RecordStore(records).write(liveRecord.owner, liveRecord.trees);
      return p;
    };
    const result = await sweep(new RecordStore(records), { table });
    assert.ok(judged >= 2, 'the claimed content was judged again');
    assert.deepStrictEqual(result.trees, []);
    assert.strictEqual(result.liveOwners, 1);
    assert.deepStrictEqual(aliveOf(owner.pids.all), owner.pids.all, "the live owner's tree is untouched");
    assert.strictEqual(fs.readFileSync(file, 'utf8'), live, 'given back under its name');
    await owners.end(owner);
  });
  it('a FIFO or a folder under a claim name of a gone sweeper stays where it is, sweep after sweep; ps lists claims with their state', async () => {
    const records = tmpDir();
    const gone = deadPid();
    const fifo = path.join(records, `4242.json.claimed-${gone}-${Date.now() - 5000}`);
    const folder = path.join(records, `4243.json.claimed-${gone}-${Date.now() - 5000}`);
    execFileSync('mkfifo', [fifo]);
    fs.mkdirSync(folder);
    // A claim in progress: its sweeper (this process) runs.
    const live = path.join(records, `4244.json.claimed-${processTag(selfIdentity(processTable()))}-0123456789ab`);
    fs.writeFileSync(live, '{}', { mode: 0o600 });
    const names = fs.readdirSync(records).sort();
    for (let i = 0; i < 2; i++) {
      const ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      assert.ok(!ran.timedOut, 'the sweep did not hang');
      const result = sweepJson(ran);
      assert.deepStrictEqual(fs.readdirSync(records).sort(), names, `sweep ${i + 1} renamed nothing`);
      for (const [file, kind] of [
        [fifo, 'a FIFO'],
        [folder, 'a folder'],
      ])
        assert.ok(
          result.problems.some(
            (p: { file: string; problem: string }) => p.file === file && p.problem.includes(kind) && /left in place/.test(p.problem),
          ),
          `${kind} reported where it is: ${JSON.stringify(result.problems)}`,
        );
    }
    const ps = await runBounded(node, [CLI, 'ps', '--records', records, '--json']);
    const claims = JSON.parse(ps.stdout).claims as {
      file: string;
      ownerPid: number;
      claimant: { pid: number; state: string };
      problem?: string;
    }[];
    const byFile = new Map(claims.map((c) => [c.file, c]));
    assert.deepStrictEqual(
      [fifo, folder, live].map((f) => [byFile.get(f)?.ownerPid, byFile.get(f)?.claimant.state, byFile.get(f)?.problem !== undefined]),
      [
        [4242, 'dead', true],
        [4243, 'dead', true],
        [4244, 'alive', false],
      ],
    );
    const human = await runBounded(node, [CLI, 'ps', '--records', records]);
    assert.match(
      human.stdout,
      new RegExp(`claim ${live}: owner 4244's record, claimed by sweeper ${process.pid} \\(alive: in progress\\)`),
    );
    assert.match(human.stdout, /claim .*4242\.json\.claimed-.*: a FIFO, not a regular file: left in place/);
    assert.deepStrictEqual(fs.readdirSync(records).sort(), names, 'ps changed nothing');
  });
});
