/**
 * Claims of owned-tree records (src/proc/records/claims.ts) on real files and in two processes: what a give-back
 * meets under the owner's `.current` name, and an owner writing while a sweeper gives its claimed record back.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync, spawn } from 'child_process';
import { RecordStore } from '../../../src/proc';
import { sameProcess } from '../../../src/proc/identity/ownerIdentity';
import { OTHER_UID } from '../../support/otherUser';
import { REPO, tmpDir } from '../../support/repo';
import { register } from '../../support/started';
import { identity } from '../../support/records';
import { treeRecord } from '../../support/synthetic';

const tree = (id: string) => treeRecord(id, { rootStartTime: 1_700_000_000_000, trackedAt: 1_700_000_000_100 });
const claimant = () => identity(process.pid, 77);

describe("a live owner's claim given back when its .current name holds something else", () => {
  // What sits under the owner's `.current` name is linked back under its record name by a give-back. Were a FIFO,
  // a symlink or another owner's record there to replace the live owner's claimed record (the claim dropped), its
  // trees would have no record any sweep could read after the owner's crash.
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
        fs.chownSync(at, OTHER_UID, OTHER_UID);
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

describe('the owner writing while a sweeper gives its claimed record back, in two processes', () => {
  // The owner rewrites and removes its record in a tight loop while this process claims and gives it back
  // (the owner judged alive): whatever the interleaving, what stands at the end is the owner's last word.
  for (const last of ['a record', 'no record'] as const) {
    it(`ends with ${last}, as the owner last said`, async () => {
      const dir = tmpDir();
      const store = new RecordStore(dir);
      const owner = identity(43, 100);
      const records = path.join(REPO, 'out', 'src', 'proc', 'records', 'claims.js');
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
