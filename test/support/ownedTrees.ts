/**
 * Owned trees for the tests of the view's member tracking and the benchmark: the view's refresh on a clock the test
 * moves, a table that counts what it is asked, the query of an owned tree, and a tree that leaves a daemon behind.
 */
import * as path from 'path';
import { processCore, TreeOwner, TreeRecord } from '../../src/proc';
import { CgroupMode } from '../../src/proc/cgroup/probe';
import { LinuxProcessTable } from '../../src/proc/platform/linuxProcessTable';
import { CensusOptions, ProcessInfo, ProcessTable, Snapshot } from '../../src/proc/platform/processTable';
import { ListingDeps, MemberListing, TreeQuery, ViewExtras } from '../../src/proc/tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../../src/proc/tracking/memberTracker';
import { tmpDir } from './repo';
import { waitFor } from './wait';
import { roleIn } from './fixtures';
import { register } from './started';

/** Delegates to a real /proc table and records what was asked of it. */
export class RecordingTable implements ProcessTable {
  readonly startPrecision: ProcessTable['startPrecision'];
  /** Looks at every process: snapshot() and censuses (snapshotOfNewcomers). */
  fullScans = 0;
  censuses = 0;
  partialSnapshots: { pids: number[]; walkedFrom: number[] }[] = [];
  constructor(
    readonly inner = new LinuxProcessTable(),
    private readonly childrenListed = true,
  ) {
    this.startPrecision = inner.startPrecision;
  }
  snapshot(): Snapshot {
    this.fullScans++;
    return this.inner.snapshot();
  }
  snapshotOfNewcomers(pids: Iterable<number>, descendantsOf: Iterable<number> = [], options: CensusOptions = {}): Snapshot {
    this.fullScans++;
    this.censuses++;
    return this.inner.snapshotOfNewcomers(pids, descendantsOf, options);
  }
  snapshotOf(pids: Iterable<number>, descendantsOf: Iterable<number> = []): Snapshot {
    const p = [...pids];
    const d = [...descendantsOf];
    this.partialSnapshots.push({ pids: p, walkedFrom: d });
    return this.inner.snapshotOf(p, d);
  }
  read(pid: number): ProcessInfo | undefined {
    return this.inner.read(pid);
  }
  listsChildren(): boolean {
    return this.childrenListed && this.inner.listsChildren();
  }
  /** Files under /proc read so far. */
  get reads(): number {
    return this.inner.reads;
  }
}

/**
 * The view's refresh as the view runs it (a MemberTracker and refreshMembers) on `table`, with a clock the test moves
 * (`clock.now`, ms): `refresh` asks what the tracker says is next and teaches it the answer.
 */
export function tracked(table: ProcessTable = new LinuxProcessTable(), deps: ListingDeps = processCore()) {
  const clock = { now: 1_000_000 };
  const tracker = new MemberTracker(deps, { now: () => clock.now });
  const refresh = (trees: TreeQuery[], extras: ViewExtras = {}): MemberListing => {
    const r = refreshMembers(table, tracker.next(trees, extras, canTrack(table, trees, extras, deps)), deps);
    tracker.learn(r);
    return r;
  };
  return { clock, tracker, refresh, table };
}

/** The query of a tree its owner spawned and has owned ever since, as the view asks it: by owner and id, or the tree. */
export function queryOf(owner: TreeOwner, id: string): TreeQuery;
export function queryOf(tree: { record: TreeRecord }): TreeQuery;
export function queryOf(from: TreeOwner | { record: TreeRecord }, id?: string): TreeQuery {
  const record = id === undefined ? (from as { record: TreeRecord }).record : (from as TreeOwner).get(id)!.record;
  return { ...record, continuouslyOwned: true, cgroupVerified: record.cgroup !== null };
}

export const sorted = (pids: number[]) => [...pids].sort((a, b) => a - b);

/** The pids a listing gives for tree `id`, in order. */
export const pidsOf = (r: MemberListing, id: string) => sorted((r.trees.find((t) => t.id === id)?.members ?? []).map((m) => m.pid));

/**
 * A tree whose root, on a line on its stdin, leaves a `setsid -f` daemon behind (re-parented away from the tree),
 * then sleeps. `escape` lets the daemon go and resolves with its pid once nothing of the tree is its parent any more.
 */
export function spawnEscaper(owner: TreeOwner, cgroups: CgroupMode = 'off') {
  const pidfile = path.join(tmpDir(), 'pids');
  const script = 'echo "root $$" >> "$0"; read go; setsid -f sh -c \'echo "daemon $$" >> "$0"; exec sleep 60\' "$0"; exec sleep 60';
  const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: ['pipe', 'ignore', 'ignore'], cgroups });
  register(tree.child.pid!);
  const table = new LinuxProcessTable();
  return {
    tree,
    pidfile,
    async escape(): Promise<number> {
      tree.child.stdin!.write('go\n');
      const daemon = await waitFor('the daemon', () => roleIn(pidfile, 'daemon'));
      register(daemon);
      await waitFor('the daemon to leave the parent chain', () => {
        const d = table.read(daemon);
        const parent = d && table.read(d.ppid);
        return d && (!parent || parent.sid !== tree.record.sid);
      });
      return daemon;
    },
  };
}
