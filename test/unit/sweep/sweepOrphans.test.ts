/**
 * The sweep's rules (src/proc/sweep/sweepOrphans.ts) on synthetic process tables, with a killer that records what it
 * is asked to kill: which records and claims are acted on, taken over, given back or cleaned up. The real-process
 * sweeps (test/system/sweep) stay the final word.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { KillReport, localSweepParts, OwnerInfo, RecordStore, sweepOrphans, TreeRecord } from '../../../src/proc';
import { CgroupLocation } from '../../../src/proc/cgroup/probe';
import { treeCgroupPath } from '../../../src/proc/cgroup/treeCgroup';
import { KillOptions } from '../../../src/proc/kill/killTarget';
import { TreeIdentity } from '../../../src/proc/members/membership';
import { processTag } from '../../../src/proc/records/fileNames';
import { setAsidePreviousRecord } from '../../../src/proc/records/previousRecord';
import { SweepOptions } from '../../../src/proc/sweep/sweepOrphans';
import { tmpDir } from '../../support/repo';
import { CLOCK, identity, proc, SELF as SYNTHETIC_SELF, syntheticTable, TREE, windowsMachine } from '../../support/synthetic';

const EARLIER_BOOT = '00000000-0000-0000-0000-000000000000';

/** A killer that kills nothing and says what it was asked. */
function recordingKiller() {
  const calls: { tree: TreeIdentity; options: KillOptions }[] = [];
  return {
    calls,
    killTrees: async (trees: { tree: TreeIdentity; options: KillOptions }[]): Promise<KillReport[]> =>
      trees.map(({ tree, options }) => {
        calls.push({ tree, options });
        return { treeId: tree.id, signalled: 2, survivors: 0, survivorPids: [], escalated: false, refused: [] };
      }),
  };
}

/** A tree whose group (pid `root`, start tick 100) has one more member. */
const treeOf = (id: string, root: number, extra: Partial<TreeRecord> = {}): TreeRecord => ({
  id,
  label: id,
  command: ['x'],
  rootPid: root,
  pgid: root,
  sid: root,
  rootStartTime: 1,
  trackedAt: 2,
  envTag: `AGENT_TREES_TREE_ID=${id}`,
  cgroup: null,
  rootStartTicks: 100,
  trackedAtTicks: 101,
  ...extra,
});
const membersOf = (root: number) => [proc(root, { startKey: 100 }), proc(root + 1, { startKey: 102, ppid: root, pgid: root, sid: root })];

const SELF = () => identity(process.pid, 7);
const SWEEPER = 8000; // a sweeper that claimed something
const OWNER = 6000; // the owner whose record it is
const ROOT = 6100;

interface World {
  store: RecordStore;
  killer: ReturnType<typeof recordingKiller>;
  run(extra?: Partial<SweepOptions>): ReturnType<typeof sweepOrphans>;
}

/**
 * A sweep by this process over `processes` (and itself, start tick 7), with a killer that kills nothing; our tree
 * cgroups live in `cgroupsAt` (a stand-in folder), if anywhere.
 */
function world(
  processes: ReturnType<typeof proc>[],
  unreadable: number[] = [],
  store = new RecordStore(tmpDir()),
  cgroupsAt?: CgroupLocation,
): World {
  const killer = recordingKiller();
  const table = syntheticTable([proc(process.pid, { startKey: 7 }), ...processes], { unreadable });
  return {
    store,
    killer,
    run: (extra = {}) =>
      sweepOrphans(store, {
        self: SELF(),
        graceMs: 0,
        table,
        killer,
        guard: { protectedReason: () => undefined },
        cgroupParts: { cgroups: { procs: () => [], remove: () => true }, cgroupProber: { location: () => cgroupsAt } },
        cgroups: 'off',
        clock: CLOCK,
        ...extra,
      }),
  };
}

/** The name of `owner`'s `.current` link (see records.ts), which a live owner keeps beside its record. */
const linkOf = (w: World, owner: OwnerInfo) => path.basename(w.store.currentOf(owner));

/** A claim of `owner`'s record (one tree) by `claimant`, as a sweeper that then stopped would leave it. */
function leaveClaim(w: World, owner: OwnerInfo, claimant: OwnerInfo, tree = treeOf('t', ROOT)): string {
  w.store.write(owner, [tree]);
  const claim = w.store.claim(owner.pid, claimant);
  assert.ok(claim);
  return claim;
}

describe('sweep rules: taking over a stale claim', () => {
  const liveOwner = [proc(OWNER, { startKey: 50 }), ...membersOf(ROOT)];
  const cases: {
    name: string;
    processes: ReturnType<typeof proc>[];
    unreadable?: number[];
    claimant: () => OwnerInfo;
    owner?: () => OwnerInfo;
    /** killed: its tree was killed; left: the claim is untouched; given-back: back under the owner's name; cleaned: deleted, nothing killed. */
    expect: 'killed' | 'left' | 'given-back' | 'cleaned';
  }[] = [
    {
      name: 'claimant gone, owner gone: taken over and swept',
      processes: membersOf(ROOT),
      claimant: () => identity(SWEEPER, 10),
      expect: 'killed',
    },
    {
      name: 'claimant replaced (its pid now a later process): taken over',
      processes: [proc(SWEEPER, { startKey: 99 }), ...membersOf(ROOT)],
      claimant: () => identity(SWEEPER, 10),
      expect: 'killed',
    },
    {
      name: 'claimant of an earlier boot: taken over',
      processes: [proc(SWEEPER, { startKey: 10 }), ...membersOf(ROOT)],
      claimant: () => ({ ...identity(SWEEPER, 10), bootId: EARLIER_BOOT }),
      expect: 'killed',
    },
    {
      name: "an older version's claim, its claimant gone: taken over",
      processes: membersOf(ROOT),
      claimant: () => ({ pid: SWEEPER, startTime: 5 }),
      expect: 'killed',
    },
    { name: 'our own claim left by an earlier sweep here: taken up', processes: membersOf(ROOT), claimant: SELF, expect: 'killed' },
    {
      name: 'claimant alive: left alone',
      processes: [proc(SWEEPER, { startKey: 10 }), ...membersOf(ROOT)],
      claimant: () => identity(SWEEPER, 10),
      expect: 'left',
    },
    {
      name: 'claimant unreadable (EMFILE): left alone',
      processes: membersOf(ROOT),
      unreadable: [SWEEPER],
      claimant: () => identity(SWEEPER, 10),
      expect: 'left',
    },
    {
      name: "an older version's claim, its claimant pid in use: left alone",
      processes: [proc(SWEEPER, { startKey: 10 }), ...membersOf(ROOT)],
      claimant: () => ({ pid: SWEEPER, startTime: 5 }),
      expect: 'left',
    },
    {
      name: 'claimant in another pid namespace: left alone',
      processes: membersOf(ROOT),
      claimant: () => ({ ...identity(SWEEPER, 10), pidNs: 1 }),
      expect: 'left',
    },
    {
      name: 'claimant gone, but the record owner is alive: re-checked and given back',
      processes: liveOwner,
      claimant: () => identity(SWEEPER, 10),
      expect: 'given-back',
    },
    {
      name: 'claimant gone, record owner unreadable: given back',
      processes: membersOf(ROOT),
      unreadable: [OWNER],
      claimant: () => identity(SWEEPER, 10),
      expect: 'given-back',
    },
    {
      name: 'claimant gone, record owner in another pid namespace: given back',
      processes: membersOf(ROOT),
      claimant: () => identity(SWEEPER, 10),
      owner: () => ({ ...identity(OWNER, 50), pidNs: 1 }),
      expect: 'given-back',
    },
    {
      name: 'claimant gone, record of an earlier boot: cleaned up, nothing killed',
      processes: membersOf(ROOT),
      claimant: () => identity(SWEEPER, 10),
      owner: () => ({ ...identity(OWNER, 50), bootId: EARLIER_BOOT }),
      expect: 'cleaned',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const w = world(c.processes, c.unreadable);
      const claim = leaveClaim(w, c.owner?.() ?? identity(OWNER, 50), c.claimant());
      const result = await w.run();
      const files = fs.readdirSync(w.store.dir);
      switch (c.expect) {
        case 'killed':
          assert.deepStrictEqual(
            w.killer.calls.map((k) => k.tree.id),
            ['t'],
          );
          assert.deepStrictEqual(
            result.trees.map((t) => t.outcome),
            ['killed'],
          );
          assert.deepStrictEqual(files, []);
          break;
        case 'left':
          assert.deepStrictEqual(w.killer.calls, []);
          assert.deepStrictEqual(files, [path.basename(claim)]);
          break;
        case 'given-back':
          assert.deepStrictEqual(w.killer.calls, []);
          assert.deepStrictEqual(files.sort(), [linkOf(w, c.owner?.() ?? identity(OWNER, 50)), `${OWNER}.json`]);
          break;
        case 'cleaned':
          assert.deepStrictEqual(w.killer.calls, []);
          assert.deepStrictEqual(
            result.trees.map((t) => [t.outcome, t.note]),
            [['gone', 'recorded before the last boot: nothing of it can still run']],
          );
          assert.deepStrictEqual(files, []);
          break;
      }
    });
  }

  it('two claims of one owner pid (a fresh one and a taken-over one) are both swept', async () => {
    const w = world([...membersOf(ROOT), ...membersOf(ROOT + 10)]);
    leaveClaim(w, identity(OWNER, 40), identity(SWEEPER, 10), treeOf('a', ROOT));
    w.store.write(identity(OWNER, 50), [treeOf('b', ROOT + 10)]);
    await w.run();
    assert.deepStrictEqual(w.killer.calls.map((k) => k.tree.id).sort(), ['a', 'b']);
    assert.deepStrictEqual(fs.readdirSync(w.store.dir), []);
  });
});

describe('sweep rules: a live owner removes its record while a sweeper holds it', () => {
  /** A store that lets the owner act at the sweeper's next claim and at its give-back, exactly there. */
  class RacingStore extends RecordStore {
    atClaim?: () => void;
    atGiveBack?: () => void;
    override claim(ownerPid: number, claimant: OwnerInfo): string | undefined {
      const step = this.atClaim;
      this.atClaim = undefined;
      step?.();
      return super.claim(ownerPid, claimant);
    }
    override restoreClaim(...args: Parameters<RecordStore['restoreClaim']>): ReturnType<RecordStore['restoreClaim']> {
      const step = this.atGiveBack;
      this.atGiveBack = undefined;
      step?.();
      return super.restoreClaim(...args);
    }
  }
  const live = () => identity(OWNER, 50);

  it('a claim of a sweeper that died, taken over: the record the owner removed meanwhile stays removed', async () => {
    const store = new RacingStore(tmpDir());
    const w = world([proc(OWNER, { startKey: 50 }), ...membersOf(ROOT)], [], store);
    leaveClaim(w, live(), identity(SWEEPER, 10));
    store.atGiveBack = () => new RecordStore(store.dir).write(live(), []); // the owner is done with its trees
    const result = await w.run();
    assert.strictEqual(store.atGiveBack, undefined, 'the owner acted between the claim and the give-back');
    assert.deepStrictEqual(w.killer.calls, []);
    assert.strictEqual(result.liveOwners, 1);
    assert.deepStrictEqual(fs.readdirSync(store.dir), [], 'no record came back');
  });

  it("a record claimed on a stale listing (a new owner took the pid): the new owner's removal stands, the old owner is swept", async () => {
    const store = new RacingStore(tmpDir());
    const w = world([proc(OWNER, { startKey: 50 }), ...membersOf(ROOT), ...membersOf(ROOT + 10)], [], store);
    store.write(identity(OWNER, 40), [treeOf('old', ROOT)]); // listed: its owner is gone, its pid now a later process's
    const owner = new RecordStore(store.dir);
    store.atClaim = () => {
      // That later process starts owning: sets the earlier record aside, records a tree of its own.
      assert.strictEqual(setAsidePreviousRecord(owner, live()).outcome, 'set-aside');
      owner.write(live(), [treeOf('new', ROOT + 10)]);
    };
    store.atGiveBack = () => owner.write(live(), []);
    const result = await w.run();
    assert.strictEqual(store.atGiveBack, undefined, 'the owner acted between the claim and the give-back');
    assert.deepStrictEqual(
      w.killer.calls.map((k) => k.tree.id),
      ['old'],
    );
    assert.strictEqual(result.liveOwners, 1);
    assert.deepStrictEqual(fs.readdirSync(store.dir), [], 'no record came back');
  });
});

describe('sweep rules: records', () => {
  it('sweeps a dead owner, leaves a live one, cleans up an earlier boot, leaves another namespace alone', async () => {
    const w = world([proc(OWNER + 1, { startKey: 60 }), ...membersOf(ROOT), ...membersOf(ROOT + 10)]);
    w.store.write(identity(OWNER, 50), [treeOf('dead', ROOT)]);
    w.store.write(identity(OWNER + 1, 60), [treeOf('live', ROOT + 10)]);
    w.store.write({ ...identity(OWNER + 2, 70), bootId: EARLIER_BOOT }, [treeOf('old-boot', ROOT + 20)]);
    w.store.write({ ...identity(OWNER + 3, 80), pidNs: 1 }, [treeOf('elsewhere', ROOT + 30)]);
    const result = await w.run();
    assert.deepStrictEqual(
      w.killer.calls.map((k) => k.tree.id),
      ['dead'],
    );
    assert.strictEqual(result.liveOwners, 1);
    assert.deepStrictEqual(
      result.skipped.map((s) => path.basename(s.file)),
      [`${OWNER + 3}.json`],
    );
    assert.deepStrictEqual(fs.readdirSync(w.store.dir).sort(), [
      linkOf(w, identity(OWNER + 1, 60)),
      linkOf(w, { ...identity(OWNER + 3, 80), pidNs: 1 }),
      `${OWNER + 1}.json`,
      `${OWNER + 3}.json`,
    ]);
  });

  it('an owner replaced by a later process with its pid is swept; an owner whose pid is unreadable is not', async () => {
    const w = world([proc(OWNER, { startKey: 51 }), ...membersOf(ROOT), ...membersOf(ROOT + 10)], [OWNER + 1]);
    w.store.write(identity(OWNER, 50), [treeOf('replaced', ROOT)]);
    w.store.write(identity(OWNER + 1, 50), [treeOf('unknown', ROOT + 10)]);
    const result = await w.run();
    assert.deepStrictEqual(
      w.killer.calls.map((k) => k.tree.id),
      ['replaced'],
    );
    assert.match(result.skipped[0].reason, /cannot be read/);
  });

  it('onlyOwner: only that owner is swept; no other record, claim or temp file is touched', async () => {
    const w = world([...membersOf(ROOT), ...membersOf(ROOT + 10)]);
    w.store.write(identity(OWNER, 50), [treeOf('mine', ROOT)]);
    w.store.write(identity(OWNER + 1, 50), [treeOf('other', ROOT + 10)]);
    const otherClaim = leaveClaim(w, identity(OWNER + 2, 50), identity(SWEEPER, 10), treeOf('other-claim', ROOT + 10));
    const temp = path.join(w.store.dir, `.${OWNER + 1}.json.${processTag(identity(SWEEPER, 10))}.0123456789ab.tmp`);
    fs.writeFileSync(temp, '{}', { mode: 0o600 });
    fs.writeFileSync(path.join(w.store.dir, `${OWNER + 5}.json`), 'corrupt', { mode: 0o600 });
    await w.run({ onlyOwner: identity(OWNER, 50) });
    assert.deepStrictEqual(
      w.killer.calls.map((k) => k.tree.id),
      ['mine'],
    );
    assert.deepStrictEqual(
      fs.readdirSync(w.store.dir).sort(),
      [
        path.basename(temp),
        linkOf(w, identity(OWNER + 1, 50)),
        linkOf(w, identity(OWNER + 2, 50)),
        `${OWNER + 1}.json`,
        `${OWNER + 5}.json`,
        path.basename(otherClaim),
      ].sort(),
    );
  });

  it('removes a temp file whose writer is gone, keeps one whose writer is alive', async () => {
    const w = world([proc(SWEEPER, { startKey: 10 })]);
    const name = (writer: OwnerInfo) => path.join(w.store.dir, `.${OWNER}.json.${processTag(writer)}.0123456789ab.tmp`);
    fs.writeFileSync(name(identity(SWEEPER, 10)), '{}', { mode: 0o600 });
    fs.writeFileSync(name(identity(SWEEPER + 1, 10)), '{}', { mode: 0o600 });
    await w.run();
    assert.deepStrictEqual(fs.readdirSync(w.store.dir), [path.basename(name(identity(SWEEPER, 10)))]);
  });

  it('gives every claimed record back when no snapshot can be taken', async () => {
    const w = world(membersOf(ROOT));
    w.store.write(identity(OWNER, 50), [treeOf('t', ROOT)]);
    const table = syntheticTable([proc(process.pid, { startKey: 7 })]);
    table.snapshot = () => {
      throw new Error('EMFILE: too many open files');
    };
    const result = await w.run({ table });
    assert.deepStrictEqual(w.killer.calls, []);
    assert.match(result.problems[0].problem, /cannot take a process snapshot/);
    assert.deepStrictEqual(fs.readdirSync(w.store.dir), [`${OWNER}.json`]);
  });

  it('honours cgroups "off": a recorded cgroup is never used, even one that is ours', async () => {
    // A stand-in for the folder of our tree cgroups, holding this tree's (as the cgroup file system shows one).
    const location: CgroupLocation = { kind: 'directory', base: tmpDir() };
    const id = 'sweep-rules-cgroup';
    const dir = treeCgroupPath(location, id);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), '');
    for (const cgroups of ['off', 'auto'] as const) {
      const w = world(membersOf(ROOT), [], new RecordStore(tmpDir()), location);
      w.store.write(identity(OWNER, 50), [treeOf(id, ROOT, { cgroup: dir, trackedAt: Date.now() })]);
      await w.run({ cgroups });
      assert.strictEqual(w.killer.calls[0].options.cgroupVerified, cgroups === 'auto', cgroups);
    }
  });
});

describe('sweep rules: Windows (injected ps-list and taskkill)', () => {
  it("a sweep of another owner's tree is refused, logged, and its record kept", async () => {
    const { m } = windowsMachine(() => assert.fail('taskkill must not run'));
    const store = new RecordStore(tmpDir());
    // A dead owner: a pid ps-list does not list.
    const gone = 4999;
    const record: TreeRecord = {
      ...TREE,
      rootPid: 4000,
      pgid: 4000,
      sid: 4000,
      label: 'agent',
      command: ['agent'],
      envTag: 'AGENT_TREES_TREE_ID=t1',
    };
    store.write({ pid: gone, startTime: 1 }, [record]);
    const warnings: string[] = [];
    const log = { trace() {}, debug() {}, info() {}, warn: (s: string) => warnings.push(s), error() {} };
    const result = await sweepOrphans(store, {
      ...localSweepParts(m.core),
      self: { pid: SYNTHETIC_SELF.pid, startTime: 1 },
      graceMs: 0,
      cgroups: 'auto',
      log,
    });
    assert.deepStrictEqual(
      result.trees.map((t) => t.outcome),
      ['refused'],
    );
    assert.ok(
      warnings.some((w) => /not swept: .*no start times/.test(w)),
      warnings.join('\n'),
    );
    assert.deepStrictEqual(
      store.read(gone)?.trees.map((t) => t.id),
      ['t1'],
      'the record is kept',
    );
    fs.rmSync(store.dir, { recursive: true });
  });
});
