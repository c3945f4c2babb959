/**
 * The records folder the CLI is given (src/cli/recordsDir.ts), on real processes: a path that cannot hold records
 * gets one line and exit 2 before anything is spawned, from every command.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { FIXTURE, tmpDir } from '../../support/repo';
import { fixturePids } from '../../support/fixtures';
import { waitAllDead } from '../../support/started';
import { waitFor } from '../../support/wait';
import { dirFor, startCli } from '../../support/cli';
import { OTHER_UID } from '../../support/otherUser';
import { requireRoot } from '../../support/environment';

describe('agent-trees with a records path that cannot hold records', () => {
  /** Runs the CLI; a run that does not end by itself is ended and fails the test (it hung). */
  async function runBounded(args: string[], options: { asUid?: number } = {}) {
    const run = startCli(args, options);
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 20_000);
    const r = await run.done;
    clearTimeout(timer);
    assert.notStrictEqual(run.child.signalCode, 'SIGKILL', `${args.join(' ')}: hung`);
    return r;
  }

  const cases: { what: string; make: () => string; asUid?: number; problem: RegExp }[] = [
    {
      what: 'a file',
      make: () => {
        const f = path.join(tmpDir(), 'file');
        fs.writeFileSync(f, '');
        return f;
      },
      problem: /is not a folder/,
    },
    {
      what: 'a dangling symlink',
      make: () => {
        const l = path.join(tmpDir(), 'link');
        fs.symlinkSync('/nonexistent/agent-trees', l);
        return l;
      },
      problem: /symlink to .* which does not exist/,
    },
    {
      what: 'a FIFO',
      make: () => {
        const f = path.join(tmpDir(), 'fifo');
        spawnSyncOk('mkfifo', [f]);
        return f;
      },
      problem: /is not a folder/,
    },
    { what: 'a path under /proc', make: () => '/proc/x', problem: /cannot be created|not writable/ },
    {
      what: "a symbolic link of another user's (to a folder of ours)",
      make: () => {
        const l = path.join(dirFor(OTHER_UID, 0o777), 'link');
        fs.symlinkSync(tmpDir(), l);
        fs.lchownSync(l, OTHER_UID, OTHER_UID);
        return l;
      },
      problem: /a symbolic link of uid 12345: only links of this user or root are followed/,
    },
    { what: 'a read-only folder (as another user)', make: () => dirFor(OTHER_UID, 0o555), asUid: OTHER_UID, problem: /not writable/ },
    {
      // Its owner could move the records away and put a folder of theirs in their place: a watchdog would then find
      // no record to end the tree by.
      what: "a folder inside another user's folder",
      make: () => path.join(dirFor(OTHER_UID, 0o755), 'records'),
      problem: /goes through .*, a folder of uid 12345: only folders of this user or root are trusted to hold it/,
    },
    {
      what: 'a folder inside a folder anyone can write to (no sticky bit)',
      make: () => path.join(dirFor(0, 0o777), 'records'),
      problem: /goes through .*, which any user can write to \(no sticky bit\)/,
    },
  ];
  for (const c of cases) {
    it(`${c.what}: a one-line error, exit 2, nothing spawned`, async function () {
      if (c.asUid !== undefined) requireRoot(this, 'to run as an ordinary user');
      const records = c.make();
      const marker = path.join(dirFor(OTHER_UID, 0o777), 'spawned');
      const r = await runBounded(['run', '--records', records, '--', 'sh', '-c', `touch ${marker}`], { asUid: c.asUid });
      assert.strictEqual(r.code, 2, r.stderr);
      assert.strictEqual(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^agent-trees: records folder /);
      assert.match(r.stderr, c.problem);
      assert.strictEqual(r.stdout, '');
      assert.ok(!fs.existsSync(marker), 'nothing was spawned');
    });
  }

  // A folder every check passes that takes no files (`--records /proc`, root's, mode 555): a tree run unrecorded
  // there could not be swept after a crash, so run must refuse it.
  it('a folder that passes every check but takes no files (/proc): run refuses with one line and exit 2, and starts nothing', async () => {
    const marker = path.join(tmpDir(), 'started');
    const ran = await runBounded(['run', '--records', '/proc', '--', 'sh', '-c', `touch "${marker}"`]);
    assert.strictEqual(ran.code, 2, ran.stderr);
    assert.match(ran.stderr, /^agent-trees: records folder \/proc is not writable: [^\n]*\n$/);
    assert.strictEqual(fs.existsSync(marker), false, 'nothing was started');
  });

  it("a symbolic link of this user's is followed once, at the start: a link changed while run works changes nothing", async () => {
    const first = tmpDir();
    const second = tmpDir();
    const link = path.join(tmpDir(), 'records');
    fs.symlinkSync(first, link);
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', link, '--', FIXTURE, 'deep', pidfile]);
    const pids = await fixturePids(pidfile);
    await waitFor('the record in the folder the link named', () => fs.existsSync(path.join(first, `${run.child.pid}.json`)));
    fs.rmSync(link);
    fs.symlinkSync(second, link);
    run.child.kill('SIGTERM');
    assert.strictEqual((await run.done).code, 143);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(first), [], 'its record removed where it was written');
    assert.deepStrictEqual(fs.readdirSync(second), [], 'nothing written where the link points now');
  });

  it('ps, sweep and kill say the same for a records path that is a file', async () => {
    const file = path.join(tmpDir(), 'file');
    fs.writeFileSync(file, '');
    for (const args of [['ps'], ['sweep'], ['kill', 'abc']]) {
      const r = await runBounded([...args, '--records', file]);
      assert.strictEqual(r.code, 2, r.stderr);
      assert.match(r.stderr, /^agent-trees: records folder .* is not a folder\n$/);
    }
  });
});

function spawnSyncOk(file: string, args: string[]): void {
  const r = spawnSync(file, args);
  assert.strictEqual(r.status, 0, `${file} ${args.join(' ')}`);
}
