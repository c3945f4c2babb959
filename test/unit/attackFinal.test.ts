/**
 * Final attack probes of the changes since 8f77d2e (watchdog, takeover, the `.current` link and `.bad-` set-aside,
 * pseudo-terminal trees and the relay, terminal trees, cmd.exe lines), each on real files and processes: what a
 * probe broke is pinned here, so it stays fixed.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync, spawn } from 'child_process';
import { RecordStore } from '../../src/proc';
import { sameProcess } from '../../src/proc/identity/ownerIdentity';
import { CLI, register, table, tmpDir, waitFor } from '../support/started';
import { hasTool, identity, runBounded, treeRecord } from '../support/records';

const tree = (id: string) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100 });
const claimant = () => identity(process.pid, 77);

describe('final attack probes', () => {
  describe("a live owner's claim given back when its .current name holds something else", () => {
    // What sits under the owner's `.current` name is linked back under its record name by a give-back. Probed:
    // a FIFO, a symlink or another owner's record there replaced the live owner's claimed record (the claim
    // was dropped), so after the owner's crash its trees had no record any sweep could read.
    const plants: { name: string; plant: (store: RecordStore, at: string, claim: string) => void }[] = [
      { name: 'a FIFO', plant: (_s, at) => execFileSync('mkfifo', ['-m', '600', at]) },
      { name: 'a symbolic link to a record of ours', plant: (s, at) => fs.symlinkSync(s.fileOf(99), at) },
      { name: 'a symbolic link to nothing', plant: (_s, at) => fs.symlinkSync('/nonexistent/x', at) },
      { name: 'a folder', plant: (_s, at) => fs.mkdirSync(at) },
      {
        name: "another user's record of that owner",
        plant: (_s, at, claim) => {
          if (process.getuid?.() !== 0) return fs.symlinkSync('/nonexistent/x', at);
          fs.copyFileSync(claim, at);
          fs.chownSync(at, 12345, 12345);
        },
      },
      {
        name: "a hard link to another owner's record",
        plant: (s, at) => fs.linkSync(s.fileOf(99), at),
      },
      {
        name: 'a hard link to a file that is no record',
        plant: (_s, at) => {
          const junk = path.join(tmpDir(), 'junk');
          fs.writeFileSync(junk, 'not json', { mode: 0o600 });
          fs.linkSync(junk, at);
        },
      },
    ];
    for (const p of plants) {
      it(`${p.name}: the claimed record goes back, never replaced by it`, () => {
        const store = new RecordStore(tmpDir());
        store.write(identity(99, 5), [tree('other-owners')]);
        const owner = identity(41, 100);
        store.write(owner, [tree('mine')]);
        const claim = store.claim(41, claimant())!;
        const claimed = store.readClaim(claim);
        fs.rmSync(store.currentOf(owner));
        p.plant(store, store.currentOf(owner), claim);
        const back = store.restoreClaim(claim, claimed, sameProcess, true);
        let now;
        try {
          now = store.read(41);
        } catch (e) {
          now = (e as Error).message;
        }
        const kept = fs.existsSync(claim) ? store.readClaim(claim).trees.map((t) => t.id) : [];
        assert.ok(
          (typeof now === 'object' && now?.trees.map((t) => t.id).join() === 'mine') || kept.join() === 'mine',
          `the live owner's trees are still recorded somewhere readable (give-back: ${back}; under its name: ${JSON.stringify(now)}; claim: ${kept})`,
        );
        assert.strictEqual(store.read(99)!.trees[0].id, 'other-owners', "the other owner's record is untouched");
      });
    }
  });

  describe('the killer inside the tree it kills', () => {
    // Probed: `agent-trees kill $AGENT_TREES_TREE_ID` run by the tree's own shell spares itself and its
    // ancestors (guardEdges.test.ts), and also every other member of its own process group (the guard never
    // signals our group): a background job of that shell ran on, yet it printed "ended 0 processes" and exited 0.
    it('says which members of its own group it left running and exits 1, signalling none of them', async () => {
      const records = tmpDir();
      const marker = path.join(tmpDir(), 'after');
      const ran = await runBounded(process.execPath, [
        CLI,
        'run',
        '--records',
        records,
        '--no-cgroup',
        '--timeout',
        '30',
        '--',
        'sh',
        '-c',
        `sleep 60 & "${process.execPath}" "${CLI}" kill "$AGENT_TREES_TREE_ID" --records "${records}" --grace 1; echo "kill exit $?"; kill $!; touch "${marker}"`,
      ]);
      assert.strictEqual(ran.timedOut, false);
      assert.match(ran.stdout, /^kill exit 1$/m, ran.stdout + ran.stderr);
      assert.match(
        ran.stdout,
        /ended 0 processes; spared this command and its ancestors \(\d+, \d+\); 1 left running: in this command's own process group \(\d+\)/,
      );
      assert.ok(fs.existsSync(marker), 'the shell that ran it was not signalled');
    });
  });

  describe("the watchdog's wait for its owner to finish exiting, across a wall-clock step", () => {
    // Probed: the wait for the owner (whose end of the pipe closes a moment before it is gone) ran on the wall
    // clock; with the clock running fast (faketime x1000, as a step forward would), it gave up at once and said
    // "owner still running: nothing swept", so the dead owner's trees ran on until some later sweep.
    it('waits on a monotonic clock: an owner that ends within the wait is proven gone', async function () {
      if (!hasTool('faketime')) this.skip();
      const owner = spawn('sleep', ['1.5'], { stdio: 'ignore' });
      register(owner.pid!);
      const startKey = (await waitFor('the owner', () => table.read(owner.pid!))).startKey;
      const ran = await runBounded(
        'faketime',
        ['-f', '+0 x1000', process.execPath, CLI, 'sweep', '--owner', `${owner.pid}:${startKey}`, '--records', tmpDir()],
        20_000,
        { env: { ...process.env, FAKETIME_DONT_FAKE_MONOTONIC: '1' } },
      );
      assert.strictEqual(ran.timedOut, false);
      assert.doesNotMatch(ran.stderr, /still running: nothing swept/, ran.stderr);
      assert.strictEqual(ran.code, 0, ran.stderr);
    });
  });

  describe('the owner writing while a sweeper gives its claimed record back, in two processes', () => {
    // The owner rewrites and removes its record in a tight loop while this process claims and gives it back
    // (the owner judged alive): whatever the interleaving, what stands at the end is the owner's last word.
    for (const last of ['a record', 'no record'] as const) {
      it(`ends with ${last}, as the owner last said`, async () => {
        const dir = tmpDir();
        const store = new RecordStore(dir);
        const owner = identity(43, 100);
        const records = path.join(__dirname, '..', '..', 'src', 'proc', 'records', 'claims.js');
        const script = `
          const { RecordStore } = require(${JSON.stringify(records)});
          const [dir, owner, tree] = JSON.parse(process.argv[1]);
          const s = new RecordStore(dir);
          for (let i = 0; i < 400; i++) s.write(owner, i % 3 === 2 ? [] : [{ ...tree, id: 't' + i, envTag: 'AGENT_TREES_TREE_ID=t' + i }]);
          s.write(owner, ${last === 'a record' ? "[{ ...tree, id: 'final', envTag: 'AGENT_TREES_TREE_ID=final' }]" : '[]'});`;
        const child = spawn(process.execPath, ['-e', script, JSON.stringify([dir, owner, tree('x')])], { stdio: 'inherit' });
        register(child.pid!);
        const exited = new Promise((resolve) => child.on('exit', resolve));
        let done = false;
        void exited.then(() => (done = true));
        const outcomes = new Map<string, number>();
        while (!done) {
          const claim = store.claim(43, claimant());
          if (claim) {
            let claimed;
            try {
              claimed = store.readClaim(claim);
            } catch (e) {
              assert.fail(`a claim of the owner's record could not be read: ${(e as Error).message}`);
            }
            const back = store.restoreClaim(claim, claimed, sameProcess, true);
            outcomes.set(back, (outcomes.get(back) ?? 0) + 1);
          }
          await new Promise((r) => setImmediate(r));
        }
        // A give-back that met the owner's record and then found it removed keeps its claim ('kept'), for the next
        // sweep to judge again: that next give-back settles it.
        for (const c of store.claims(undefined)) store.restoreClaim(c.file, store.readClaim(c.file), sameProcess, true);
        const leftClaims = store.claims(undefined).map((c) => path.basename(c.file));
        const now = store.read(43)?.trees.map((t) => t.id) ?? [];
        assert.deepStrictEqual(
          { now, leftClaims },
          { now: last === 'a record' ? ['final'] : [], leftClaims: [] },
          `give-backs: ${JSON.stringify([...outcomes])}`,
        );
        assert.deepStrictEqual(
          fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')),
          [],
          'no temp file left',
        );
      });
    }
  });

  describe('a watchdog sweep for an owner whose pid a new owner now holds', () => {
    it("proves the old owner gone and leaves the new owner's record (and its .current link) alone", async () => {
      const dir = tmpDir();
      const store = new RecordStore(dir);
      const newOwner = spawn('sleep', ['30'], { stdio: 'ignore' });
      register(newOwner.pid!);
      const startKey = (await waitFor('the new owner', () => table.read(newOwner.pid!))).startKey;
      const live = identity(newOwner.pid!, startKey);
      store.write(live, [tree('new-owners')]);
      const before = fs.readdirSync(dir).sort();
      try {
        const ran = await runBounded(process.execPath, [
          CLI,
          'sweep',
          '--owner',
          `${newOwner.pid}:${startKey - 1}`,
          '--records',
          dir,
          '--json',
        ]);
        assert.strictEqual(ran.code, 0, ran.stderr);
        assert.deepStrictEqual(JSON.parse(ran.stdout).trees, [], 'nothing swept');
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), before, 'the folder is as it was');
        assert.strictEqual(store.read(newOwner.pid!)!.trees[0].id, 'new-owners');
      } finally {
        newOwner.kill('SIGKILL');
      }
    });
  });
});
