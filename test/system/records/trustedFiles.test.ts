/**
 * Records nobody else can plant, and files that are no record (src/proc/records/trustedFiles.ts), on real files and
 * through the real CLI: another user's files, folders others can write, impossible times, FIFOs, symbolic links and
 * folders where a record is expected, and a `ps` that changes nothing.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { RecordStore } from '../../../src/proc';
import { setAsidePreviousRecord } from '../../../src/proc/records/previousRecord';
import { MAX_RECORD_BYTES } from '../../../src/proc/records/schema';
import { CLI, tmpDir } from '../../support/repo';
import { aliveOf, waitAllDead } from '../../support/started';
import { runBounded } from '../../support/cli';
import { AS_OTHER_USER, OTHER_UID, readableDir } from '../../support/otherUser';
import { cliOwners, deadPid, identity, sweep, sweepJson, unrelatedLeader } from '../../support/records';
import { treeRecord } from '../../support/synthetic';
import { requireRoot, requireTools } from '../../support/environment';

const node = process.execPath;
const tree = (id: string, extra = {}) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100, ...extra });

describe('records nobody else can plant', () => {
  it('refuses every file of a folder others can write, and moves nothing', function () {
    requireRoot(this, "as the records folders of these tests are root's");
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
    requireRoot(this, 'to give a file to another user');
    const store = new RecordStore(tmpDir());
    const f = (name: string) => path.join(store.dir, name);
    const valid = (pid: number) => JSON.stringify({ version: 1, owner: { pid, startTime: 1 }, trees: [tree(`t${pid}`)] });
    fs.writeFileSync(f('41.json'), valid(41), { mode: 0o600 });
    fs.chownSync(f('41.json'), OTHER_UID, OTHER_UID);
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
    assert.match(byFile.get('41.json')!, new RegExp(`owned by uid ${OTHER_UID}, not by this user`));
    assert.match(byFile.get('42.json')!, /writable by other users \(mode 666\)/);
    assert.match(byFile.get('43.json')!, /a symbolic link, not a regular file: not followed/);
    assert.doesNotMatch(byFile.get('43.json')!, /secret|target|tmp\/agent/);
    assert.match(byFile.get('44.json')!, /a FIFO, not a regular file/);
    assert.match(byFile.get('45.json')!, /a folder, not a regular file/);
    assert.match(byFile.get('46.json')!, /more than a record can be/);
    for (const p of problems) assert.match(p.problem, /left in place/);
    assert.deepStrictEqual(fs.readdirSync(store.dir).sort(), ['41.json', '42.json', '43.json', '44.json', '45.json', '46.json']);
  });

  it("refuses a record uid 12345 planted in a 1777 folder naming a root process's group, tracked in the future (as another user)", async function () {
    requireRoot(this, 'to write a record as another user');
    requireTools(this, 'setpriv');
    const records = tmpDir();
    fs.chmodSync(records, 0o1777);
    const { child: victim } = await unrelatedLeader();
    const dead = deadPid();
    const planted = path.join(records, `${dead}.json`);
    const future = Date.now() + 86_400_000;
    const record = {
      version: 1,
      owner: { pid: dead, startTime: Date.now() - 5000 },
      trees: [
        {
          id: 'planted',
          label: 'x',
          command: ['x'],
          rootPid: victim.pid,
          pgid: victim.pid,
          sid: victim.pid,
          rootStartTime: future - 500,
          trackedAt: future,
          envTag: 'AGENT_TREES_TREE_ID=planted',
          cgroup: null,
        },
      ],
    };
    execFileSync(
      'setpriv',
      [...AS_OTHER_USER, node, '-e', `require('fs').writeFileSync(${JSON.stringify(planted)}, ${JSON.stringify(JSON.stringify(record))})`],
      {
        cwd: readableDir(),
      },
    );
    try {
      assert.strictEqual(fs.statSync(planted).uid, OTHER_UID);
      // As planted: a folder anyone can write.
      let ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      assert.match(JSON.stringify(sweepJson(ran).problems), /writable by other users \(mode 1777\)/);
      // The folder closed again, the file still another user's.
      fs.chmodSync(records, 0o700);
      ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      assert.match(JSON.stringify(sweepJson(ran).problems), new RegExp(`owned by uid ${OTHER_UID}, not by this user`));
      // Even as our own file: tracked in the future is impossible, so it is not trusted.
      fs.chownSync(planted, 0, 0);
      fs.chmodSync(planted, 0o600);
      ran = await runBounded(node, [CLI, 'sweep', '--records', records, '--json', '--grace', '1']);
      assert.match(JSON.stringify(sweepJson(ran).problems), /trackedAt is in the future/);
      const killed = await runBounded(node, [CLI, 'kill', 'planted', '--records', records, '--grace', '1']);
      assert.match(killed.stderr, /impossible times .*not killed/);
      assert.deepStrictEqual(aliveOf([victim.pid!]), [victim.pid!], 'the root process lives');
      assert.ok(fs.existsSync(planted), 'the refused record is left where it is');
    } finally {
      victim.kill('SIGKILL');
    }
  });

  it('refuses a record of ours whose boot-tick times are after now', async () => {
    const records = tmpDir();
    const { child: victim, info } = await unrelatedLeader();
    const dead = deadPid();
    const later = info.startKey + 360_000; // an hour after the victim started: in the future
    new RecordStore(records).write(identity(dead, later - 10), [
      {
        id: 'ahead',
        label: 'x',
        command: ['x'],
        rootPid: victim.pid!,
        pgid: victim.pid!,
        sid: victim.pid!,
        rootStartTime: Date.now(),
        trackedAt: Date.now(),
        envTag: 'AGENT_TREES_TREE_ID=ahead',
        cgroup: null,
        rootStartTicks: later - 1,
        trackedAtTicks: later,
      },
    ]);
    try {
      const result = await sweep(new RecordStore(records));
      assert.match(result.problems[0]?.problem ?? '', /is after now/);
      assert.strictEqual(result.killed, 0);
      assert.deepStrictEqual(aliveOf([victim.pid!]), [victim.pid!]);
    } finally {
      victim.kill('SIGKILL');
    }
  });
});

describe('a FIFO, a symbolic link or a folder where a record is expected', () => {
  const owners = cliOwners();

  it('sweep, ps and kill report it and go on; none of them blocks', async () => {
    const records = tmpDir();
    const owner = await owners.start(records);
    owner.run.child.kill('SIGKILL'); // a dead owner's tree next to the FIFO must still be swept
    await owner.run.exited;
    const fifo = path.join(records, '4242.json');
    execFileSync('mkfifo', [fifo]);
    for (const args of [['ps'], ['kill', 'no-such-tree'], ['sweep', '--grace', '1']]) {
      const ran = await runBounded(node, [CLI, ...args, '--records', records], 15_000);
      assert.ok(!ran.timedOut, `${args[0]} hung on the FIFO`);
      assert.match(ran.stdout + ran.stderr, /4242\.json: a FIFO, not a regular file|4242\.json\ta FIFO, not a regular file/, args[0]);
    }
    assert.ok(fs.statSync(fifo).isFIFO(), 'left in place');
    assert.deepStrictEqual(await waitAllDead(owner.pids.all), [], 'the good record was swept');
  });

  it('ps leaves a foreign 2024.json, sweep a .draft.tmp it did not write, and neither quotes a symlink target', async () => {
    const records = tmpDir();
    const secretDir = tmpDir('secret-target-');
    const target = path.join(secretDir, 'SECRET-TARGET');
    fs.writeFileSync(target, 'TOPSECRET-CONTENT');
    fs.writeFileSync(path.join(records, '2024.json'), '{"year":2024}', { mode: 0o600 });
    const draft = path.join(records, '.draft.tmp');
    fs.writeFileSync(draft, 'a draft', { mode: 0o600 });
    fs.utimesSync(draft, 1, 1);
    fs.symlinkSync(target, path.join(records, '77.json'));
    const before = fs.readdirSync(records).sort();
    const ps = await runBounded(node, [CLI, 'ps', '--records', records, '--json']);
    assert.deepStrictEqual(fs.readdirSync(records).sort(), before, 'ps renamed or removed nothing');
    assert.match(ps.stdout, /2024\.json/);
    const swept = await runBounded(node, [CLI, 'sweep', '--records', records, '--json']);
    assert.ok(fs.existsSync(draft), 'the draft stays');
    assert.ok(fs.lstatSync(path.join(records, '77.json')).isSymbolicLink(), 'the link stays');
    for (const out of [ps.stdout, ps.stderr, swept.stdout, swept.stderr]) {
      assert.doesNotMatch(out, /SECRET|secret-target/, 'nothing of the link target is shown');
    }
    assert.match(swept.stdout, /77\.json",\s*"problem": "a symbolic link, not a regular file/);
  });

  it('a record left under our pid that cannot be read (a FIFO): reported and left where it is', () => {
    const store = new RecordStore(tmpDir());
    execFileSync('mkfifo', [store.fileOf(process.pid)]);
    const outcome = setAsidePreviousRecord(store, identity(process.pid, 1000));
    assert.strictEqual(outcome.outcome, 'unreadable');
    assert.ok(fs.statSync(store.fileOf(process.pid)).isFIFO());
  });
});
