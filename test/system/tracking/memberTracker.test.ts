/**
 * The view's member tracking (src/proc/memberTracker.ts) on real trees: the same members as a full resolution,
 * reads that follow the members and not the machine, the slow full scan that finds a daemon that left the parent
 * chain, and kills that reach it whatever the view saw. Process reads are counted by the table itself (`reads`)
 * and by a recording wrapper around it.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { MemberInfo, processCore, processKey, readShell, TreeMembersSource, TreeOwner, WINDOW_TAG_VARIABLE } from '../../../src/proc';
import { COMMAND_SETTLES_MS, LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { CensusOptions, ProcessInfo, ProcessTable, Snapshot } from '../../../src/proc/platform/processTable';
import { listMembers, MemberListing, TreeQuery, ViewExtras } from '../../../src/proc/tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../../../src/proc/tracking/memberTracker';
import { SCENARIOS } from '../../fixtures/scenarios';
import { aliveOf, FIXTURE, fixturePids, register, REPO, sleep, tmpDir, waitAllDead, waitFor } from '../../support/started';

/** Delegates to a real /proc table and records what was asked of it. */
class RecordingTable implements ProcessTable {
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

/** A clock the test moves, and a refresh function as the view runs it (tracker + refreshMembers). */
function tracked(table: ProcessTable) {
  const clock = { now: 1_000_000 };
  const tracker = new MemberTracker(core, { now: () => clock.now });
  const refresh = (trees: TreeQuery[], extras: ViewExtras = {}): MemberListing => {
    const r = refreshMembers(table, tracker.next(trees, extras, canTrack(table, trees, extras, core)), core);
    tracker.learn(r);
    return r;
  };
  return { clock, tracker, refresh };
}

const queryOf = (owner: TreeOwner, id: string): TreeQuery => {
  const record = owner.get(id)!.record;
  return { ...record, continuouslyOwned: true, cgroupVerified: record.cgroup !== null };
};
const pidsOf = (r: MemberListing, id: string) => (r.trees.find((t) => t.id === id)?.members ?? []).map((m) => m.pid).sort((a, b) => a - b);
const sorted = (pids: number[]) => [...pids].sort((a, b) => a - b);
/** This process's guard and cgroups (the table under test is each test's own). */
const core = processCore();
const cgroupProbe = core.cgroupTier('auto');

/** Starts a root that, on a line on its stdin, runs `setsid -f` to leave a daemon behind, re-parented away from the tree. */
function spawnEscaper(owner: TreeOwner, cgroups: 'auto' | 'off') {
  const pidfile = path.join(tmpDir(), 'pids');
  const script = 'echo "root $$" >> "$0"; read go; setsid -f sh -c \'echo "daemon $$" >> "$0"; exec sleep 60\' "$0"; exec sleep 60';
  const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: ['pipe', 'ignore', 'ignore'], cgroups });
  register(tree.child.pid!);
  const table = new LinuxProcessTable();
  return {
    tree,
    /** Lets the daemon go and waits until nothing of the tree is its parent any more. */
    async escape(): Promise<number> {
      tree.child.stdin!.write('go\n');
      const daemon = await waitFor('the daemon', () => {
        const m = /^daemon (\d+)$/m.exec(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '');
        return m ? Number(m[1]) : undefined;
      });
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

describe('member tracking: the same members as a full resolution', function () {
  this.timeout(60_000);
  for (const tier of ['cgroup', 'group'] as const) {
    for (const { mode, title } of SCENARIOS) {
      it(`${tier} tier, ${title}`, async function () {
        if (tier === 'cgroup' && !cgroupProbe.tier) this.skip();
        const cgroups = tier === 'cgroup' ? 'auto' : 'off';
        const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
        const table = new RecordingTable();
        const { clock, refresh } = tracked(table);
        const pidfile = path.join(tmpDir(), 'pids');
        const tree = owner.spawn({ command: FIXTURE, args: [mode, pidfile], stdio: 'ignore', cgroups });
        register(tree.child.pid!);
        const id = tree.record.id;
        let pids: Awaited<ReturnType<typeof fixturePids>> | undefined;
        try {
          // The view watches the tree from its start, refreshing while it grows (here far faster than 1 Hz).
          const first = refresh([queryOf(owner, id)]);
          if (tier === 'group') assert.strictEqual(first.fullScan, true, 'the first refresh is a full scan');
          await waitFor('the fixture', () => {
            refresh([queryOf(owner, id)]);
            return fs.existsSync(pidfile) && /^(ready|unsupported) /m.test(fs.readFileSync(pidfile, 'utf8'));
          });
          const fixture = (pids = await fixturePids(pidfile));
          if (fixture.roles.has('unsupported')) this.skip();
          if (mode === 'forker') await sleep(300);
          const scansBefore = table.fullScans;
          const incremental = refresh([queryOf(owner, id)]);
          if (mode !== 'forker') {
            // (The forker's hundreds of members are a large part of this machine: listing /proc is the cheaper refresh.)
            assert.strictEqual(incremental.fullScan, false);
            assert.strictEqual(table.fullScans, scansBefore, 'no full scan between the slow ones');
          }
          const full = sorted(owner.members(id).map((p) => p.pid));
          const alive = new Set(aliveOf(full));
          // Never a process the full resolution does not count (or one that died meanwhile).
          for (const pid of pidsOf(incremental, id)) assert.ok(full.includes(pid) || !alive.has(pid), `${pid} is not a member`);
          // After the slow scan every member is known, escaped daemons too; later refreshes keep them.
          clock.now += 10_000;
          const slow = refresh([queryOf(owner, id)]);
          assert.strictEqual(slow.fullScan, tier === 'group', 'no full scan for a tree in its own cgroup');
          clock.now += 1000;
          const after = refresh([queryOf(owner, id)]);
          if (mode !== 'forker') assert.strictEqual(after.fullScan, false);
          const fullAgain = sorted(owner.members(id).map((p) => p.pid));
          const named = (list: number[]) => list.filter((pid) => fixture.all.includes(pid));
          if (mode === 'forker' || mode === 'ignore-term') {
            // Members come and go by the millisecond: compare the fixture's own processes.
            assert.deepStrictEqual(named(pidsOf(after, id)), named(fullAgain));
          } else {
            assert.deepStrictEqual(pidsOf(after, id), fullAgain);
          }
          const unreachable = tier === 'group' && mode === 'daemon-scrubbed' ? fixture.roles.get('daemon')! : [];
          assert.deepStrictEqual(named(fullAgain), sorted(aliveOf(fixture.all).filter((pid) => !unreachable.includes(pid))));
        } finally {
          await owner.dispose(300);
          // The group tier's known limit (the scrubbed daemon) is not killed by the tree's kill: ours to end.
          for (const pid of aliveOf(pids?.all ?? [])) process.kill(pid, 'SIGKILL');
        }
      });
    }
  }

  it('walks children forked by any thread, not only the main one', async function () {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    // A worker thread spawns the child: its parent task is that thread, listed in the thread's own children file.
    const workerFile = path.join(tmpDir(), 'worker.js');
    fs.writeFileSync(
      workerFile,
      `const c = require('child_process').spawn('sleep', ['60'], { stdio: 'ignore' });
      require('fs').appendFileSync(${JSON.stringify(pidfile)}, 'child ' + c.pid + '\\n');
      setTimeout(() => {}, 60000);`,
    );
    const script = `new (require('worker_threads').Worker)(${JSON.stringify(workerFile)}); setTimeout(() => {}, 60000);`;
    const tree = owner.spawn({ command: process.execPath, args: ['-e', script], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    try {
      const child = await waitFor('the child', () => {
        const m = /^child (\d+)$/m.exec(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '');
        return m ? Number(m[1]) : undefined;
      });
      register(child);
      const root = tree.record.rootPid;
      const mainList = fs.readFileSync(`/proc/${root}/task/${root}/children`, 'latin1').split(' ').map(Number);
      assert.ok(!mainList.includes(child), 'the child hangs off a worker thread, not the main one');
      const table = new RecordingTable();
      const { refresh } = tracked(table);
      refresh([queryOf(owner, id)]); // the first refresh is the full scan; the second walks
      const r = refresh([queryOf(owner, id)]);
      assert.strictEqual(r.fullScan, false);
      assert.deepStrictEqual(pidsOf(r, id), sorted([root, child]));
    } finally {
      await owner.dispose(300);
    }
  });
});

describe('member tracking: a terminal of the window', function () {
  this.timeout(30_000);

  it('finds what a full resolution finds under a shell, its window-tagged daemon too, refresh after refresh', async () => {
    const tag = `test-window-${process.pid}`;
    const pidfile = path.join(tmpDir(), 'pids');
    const script = `
      echo "shell $$" >> "$1"
      setsid sh -c 'echo "setsid $$" >> "$1"; exec sleep 60' x "$1" &
      setsid -f sh -c 'echo "daemon $$" >> "$1"; exec sleep 60' x "$1"
      sleep 0.2
      echo "ready $$" >> "$1"
      exec sleep 60`;
    const child = spawn('sh', ['-c', script, 'shell', pidfile], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag },
    });
    register(child.pid!);
    const { all, roles } = await fixturePids(pidfile);
    try {
      const shell = readShell(child.pid!, core.table)!;
      const extras: ViewExtras = { terminals: { windowTags: [tag], shells: [shell], seen: {}, kept: [] } };
      const full = () => listMembers(new LinuxProcessTable().snapshot(), [], core, { extras }).terminals[0].members.map((m) => m.pid);
      const { clock, refresh } = tracked(new RecordingTable());
      const first = refresh([], extras);
      assert.strictEqual(first.fullScan, true, 'a terminal it knows nothing of: every process read');
      assert.deepStrictEqual(
        first.terminals[0].members.map((m) => m.pid),
        full(),
      );
      assert.ok(full().includes(roles.get('daemon')![0]), 'the daemon, by the window tag');
      extras.terminals!.seen[shell.key] = first.terminals[0].members.filter((m) => m.pid !== shell.pid).map(processKey);
      for (let i = 0; i < 3; i++) {
        clock.now += 1000;
        const r = refresh([], extras);
        assert.strictEqual(r.fullScan, false);
        assert.deepStrictEqual(
          r.terminals[0].members.map((m) => m.pid),
          full(),
        );
      }
      assert.deepStrictEqual(full(), sorted(all));
    } finally {
      for (const pid of aliveOf(all)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('member tracking: what a refresh reads', function () {
  this.timeout(60_000);

  it('reads the members, not the machine: 300 more processes elsewhere cost a refresh nothing', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable();
    const { clock, refresh } = tracked(table);
    let crowd: ReturnType<typeof spawn> | undefined;
    try {
      await waitFor('five members', () => owner.members(id).length === 5);
      await sleep(COMMAND_SETTLES_MS); // a younger process's command line is read again at each refresh (it may exec)
      refresh([queryOf(owner, id)]); // full scan; command lines and environments read once
      clock.now += 1000;
      refresh([queryOf(owner, id)]);
      const readsOf = () => {
        clock.now += 1000;
        const before = table.reads;
        const r = refresh([queryOf(owner, id)]);
        assert.strictEqual(r.fullScan, false);
        assert.strictEqual(pidsOf(r, id).length, 5);
        return table.reads - before;
      };
      const quiet = readsOf();
      // One stat and one children list per member (each is one thread), nothing else.
      assert.strictEqual(quiet, 10);
      crowd = spawn('sh', ['-c', 'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; echo up; wait'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        detached: true,
      });
      register(crowd.pid!);
      await new Promise((r) => crowd!.stdout!.once('data', r));
      const crowded = readsOf();
      assert.strictEqual(crowded, quiet, 'the same reads with 300 more processes on the machine');
      assert.strictEqual(table.fullScans, 1);
    } finally {
      if (crowd) process.kill(-crowd.pid!, 'SIGKILL');
      await owner.dispose(300);
    }
  });

  it('lists the same members in the same order on every refresh, walk or full scan (the view fires only changes)', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const { clock, refresh } = tracked(new RecordingTable());
    try {
      await waitFor('five members', () => owner.members(id).length === 5);
      const orders = new Set<string>();
      for (let i = 0; i < 12; i++) {
        clock.now += 1000;
        orders.add(
          refresh([queryOf(owner, id)])
            .trees[0].members.map((m) => m.pid)
            .join(' '),
        );
      }
      assert.strictEqual(orders.size, 1, [...orders].join(' / '));
    } finally {
      await owner.dispose(300);
    }
  });

  it('reads nothing when there is no tree to show (today a full scan)', () => {
    const table = new RecordingTable();
    const { refresh } = tracked(table);
    const before = table.reads;
    const r = refresh([]);
    assert.deepStrictEqual(r.trees, []);
    assert.strictEqual(table.reads - before, 0);
    assert.strictEqual(table.fullScans, 0);
    assert.strictEqual(table.partialSnapshots.length, 0);
  });

  it('scans every process at most once per interval, at once when asked or for a tree it knows nothing of, never for trees in their own cgroups', () => {
    const clock = { now: 0 };
    const tracker = new MemberTracker(core, { now: () => clock.now, fullScanIntervalMs: 10_000 });
    const group = {
      id: 'g',
      rootPid: 100,
      pgid: 100,
      sid: 100,
      rootStartTime: 0,
      trackedAt: 0,
      cgroup: null,
      continuouslyOwned: true,
      cgroupVerified: false,
    };
    const inCgroup = { ...group, id: 'c', cgroup: '/sys/fs/cgroup/x', cgroupVerified: true };
    const members = (n: number) => Array.from({ length: n }, (_, i) => ({ pid: 1000 + i }) as MemberInfo);
    const answer = (id: string, n: number, listed = 1000): MemberListing => ({
      takenAt: 0,
      processCount: n,
      listed,
      trees: [{ id, members: members(n) }],
      terminals: [],
      windowRecords: [],
    });
    const ask = (trees: TreeQuery[], n = 3, tracking = true) => {
      const r = tracker.next(trees, {}, tracking);
      tracker.learn(answer(trees[0]?.id ?? '', n));
      return r;
    };
    const fulls: number[] = [];
    for (let t = 0; t <= 25_000; t += 1000) {
      clock.now = t + (t % 3000 === 0 ? -3 : 2); // timers drift a few ms either way
      const r = ask([group]);
      if (r.full) fulls.push(t);
      assert.strictEqual(r.thorough, t === 0, 'every process read only the first time');
    }
    assert.deepStrictEqual(fulls, [0, 10_000, 20_000]);
    tracker.scanSoon();
    const asked = ask([group]);
    assert.deepStrictEqual([asked.full, asked.thorough], [true, true]);
    assert.strictEqual(ask([group]).full, false);
    const other = { ...group, id: 'h' };
    const first = ask([group, other]);
    assert.deepStrictEqual(
      [first.full, first.thorough],
      [true, true],
      'a tree it knows no members of: they may be older than the last scan',
    );
    tracker.scanSoon();
    assert.strictEqual(ask([inCgroup]).full, false, 'a cgroup holds every member: no scan needed');
    assert.strictEqual(ask([]).full, false);
    assert.strictEqual(ask([group], 3, false).full, true, 'without children lists every refresh is a full scan');
    // A tree that is a large part of the machine: listing /proc costs less than walking it, every refresh.
    clock.now += 1000;
    ask([group], 20);
    assert.strictEqual(ask([group], 400).full, false);
    assert.strictEqual(ask([group], 400).full, true);
    assert.strictEqual(ask([group], 400).full, true);
  });

  it('falls back to a full scan on every refresh where the kernel lists no children (CONFIG_PROC_CHILDREN)', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & exec sleep 60'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable(new LinuxProcessTable(), false);
    const { clock, refresh } = tracked(table);
    try {
      await waitFor('two members', () => owner.members(id).length === 2);
      for (let i = 0; i < 3; i++) {
        clock.now += 1000;
        const r = refresh([queryOf(owner, id)]);
        assert.strictEqual(r.fullScan, true);
        assert.deepStrictEqual(pidsOf(r, id), sorted(owner.members(id).map((p) => p.pid)));
      }
      assert.strictEqual(table.fullScans, 3);
      assert.strictEqual(table.partialSnapshots.length, 0);
    } finally {
      await owner.dispose(300);
    }
  });

  it('cgroup tier: members from the cgroup and every cgroup below it, scrubbed daemon too, without a full scan', async function () {
    if (!cgroupProbe.tier || cgroupProbe.tier.kind !== 'directory') this.skip();
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' });
    const pidfile = path.join(tmpDir(), 'pids');
    // One member moves into a cgroup of its own below the tree's; another leaves as a scrubbed daemon.
    const script = `cg=/sys/fs/cgroup/unified$(sed -n 's/^0:://p' /proc/self/cgroup)
      [ -d "$cg" ] || cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
      mkdir "$cg/sub"
      sh -c 'echo $$ > "$1/sub/cgroup.procs"; echo "sub $$" >> "$2"; exec sleep 60' x "$cg" "$0" &
      setsid -f env -i /bin/sh -c 'echo "daemon $$" >> "$0"; exec sleep 60 </dev/null >/dev/null 2>&1' "$0"
      echo "root $$" >> "$0"; exec sleep 60`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable();
    const { refresh } = tracked(table);
    let roles: Map<string, number[]> | undefined;
    try {
      assert.strictEqual(tree.tier, 'cgroup');
      roles = await waitFor('all three', () => {
        const text = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '';
        const m = new Map(
          text
            .split('\n')
            .filter(Boolean)
            .map((l) => [l.split(' ')[0], [Number(l.split(' ')[1])]]),
        );
        return m.has('sub') && m.has('daemon') && m.has('root') ? m : undefined;
      });
      for (const [, [pid]] of roles) register(pid);
      const sub = roles.get('sub')![0];
      await waitFor('the sub-cgroup member', () => fs.readFileSync(`/proc/${sub}/cgroup`, 'utf8').includes('/sub'));
      const r = refresh([queryOf(owner, id)]);
      assert.strictEqual(r.fullScan, false);
      assert.strictEqual(table.fullScans, 0);
      assert.deepStrictEqual(pidsOf(r, id), sorted([...roles.values()].flat()));
      assert.deepStrictEqual(pidsOf(r, id), sorted(owner.members(id).map((p) => p.pid)));
    } finally {
      await owner.dispose(300);
      if (tree.record.cgroup)
        await waitFor('the sub-cgroup removed', () => {
          try {
            fs.rmdirSync(path.join(tree.record.cgroup!, 'sub'));
            return true;
          } catch (e) {
            return (e as NodeJS.ErrnoException).code === 'ENOENT';
          }
        });
      if (roles) assert.deepStrictEqual(await waitAllDead([...roles.values()].flat()), []);
    }
  });
});

describe('member tracking: the full scan reads what started since the last one', function () {
  this.timeout(60_000);

  it('reads every process the first time, then only the newcomers: 300 new processes cost about 300 reads', async () => {
    const table = new LinuxProcessTable();
    const first = table.reads;
    const all = table.snapshotOfNewcomers([], []);
    const firstReads = table.reads - first;
    assert.ok(firstReads >= all.processes.size, 'the first census reads every process');
    let crowd: ReturnType<typeof spawn> | undefined;
    try {
      crowd = spawn('sh', ['-c', 'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; echo up; wait'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        detached: true,
      });
      register(crowd.pid!);
      await new Promise((r) => crowd!.stdout!.once('data', r));
      const before = table.reads;
      const census = table.snapshotOfNewcomers([], []);
      const reads = table.reads - before;
      const crowdPids = fs.readFileSync(`/proc/${crowd.pid}/task/${crowd.pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
      assert.strictEqual(crowdPids.length, 300);
      for (const pid of crowdPids) assert.ok(census.processes.has(pid), `newcomer ${pid} is in the census`);
      assert.ok(census.processes.has(crowd.pid!));
      // The crowd, whatever else started meanwhile on this shared machine, the listing and its counters: not every process.
      const everything = table.snapshot().processes.size;
      assert.ok(reads < everything - 200 || everything < 600, `${reads} reads with ${everything} processes on the machine`);
      assert.ok(reads >= 301);
    } finally {
      if (crowd) process.kill(-crowd.pid!, 'SIGKILL');
    }
  });

  // Pid allocation moved by hand (ns_last_pid, root only) so that a new process gets a pid the census saw before.
  for (const { title, lastPidAtCensus } of [
    { title: 'within one turn of pid allocation', lastPidAtCensus: (pid: number) => pid - 10 },
    {
      title: 'after pid allocation wrapped around',
      lastPidAtCensus: (pid: number, max: number) => pid + Math.min(5000, Math.floor((max - pid) / 2)),
    },
  ]) {
    it(`reads a pid again when allocation came round to it (${title}): a new process at a pid seen before is a newcomer`, async function () {
      const maxPid = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
      if (process.getuid?.() !== 0) this.skip(); // moving ns_last_pid needs root
      const table = new LinuxProcessTable();
      const first = spawn('sleep', ['60'], { stdio: 'ignore' });
      register(first.pid!);
      const pid = first.pid!;
      const started = [first];
      try {
        const lastPid = lastPidAtCensus(pid, maxPid);
        if (lastPid === pid || lastPid >= maxPid || pid < 400) this.skip(); // no room on this side of the pid
        fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(lastPid));
        table.snapshotOfNewcomers([], []);
        first.kill('SIGKILL');
        await waitFor('the first holder to be reaped', () => !fs.existsSync(`/proc/${pid}`));
        let second: ReturnType<typeof spawn> | undefined;
        for (let attempt = 0; attempt < 20 && second?.pid !== pid; attempt++) {
          fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
          second = spawn('sleep', ['60'], { stdio: 'ignore' });
          started.push(second);
          if (second.pid) register(second.pid);
        }
        if (second?.pid !== pid) this.skip(); // something else on the machine took the pid each time
        const census = table.snapshotOfNewcomers([], []);
        const now = table.read(pid);
        assert.ok(now, 'the new holder runs');
        assert.strictEqual(census.processes.get(pid)?.startKey, now.startKey, 'the new holder is read, not taken for the old one');
      } finally {
        for (const c of started) c.kill('SIGKILL');
      }
    });
  }
});

describe('member tracking: a daemon that left the parent chain', function () {
  this.timeout(30_000);

  it('is found by the slow full scan, kept from then on, and dies in a kill', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const escaper = spawnEscaper(owner, 'off');
    const id = escaper.tree.record.id;
    const table = new RecordingTable();
    const { clock, refresh } = tracked(table);
    try {
      assert.strictEqual(refresh([queryOf(owner, id)]).fullScan, true);
      const daemon = await escaper.escape();
      assert.ok(
        owner.members(id).some((p) => p.pid === daemon),
        'a member by its tag, for a full resolution',
      );
      for (let s = 1; s <= 9; s++) {
        clock.now += 1000;
        const r = refresh([queryOf(owner, id)]);
        assert.strictEqual(r.fullScan, false);
        assert.ok(!pidsOf(r, id).includes(daemon), `second ${s}: no walk from the tree leads to the daemon`);
      }
      clock.now += 1000;
      const slow = refresh([queryOf(owner, id)]);
      assert.strictEqual(slow.fullScan, true);
      assert.ok(pidsOf(slow, id).includes(daemon), 'shown after the slow scan, 10 s after the last');
      clock.now += 1000;
      assert.ok(pidsOf(refresh([queryOf(owner, id)]), id).includes(daemon), 'and kept by the walks after it');
      const report = await owner.kill(id, 0);
      assert.strictEqual(report.survivors, 0);
      assert.deepStrictEqual(await waitAllDead([daemon]), []);
    } finally {
      await owner.dispose(300);
    }
  });

  it('dies in a kill that comes before any slow scan saw it: kills resolve on a full scan', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const escaper = spawnEscaper(owner, 'off');
    const id = escaper.tree.record.id;
    const { clock, refresh } = tracked(new RecordingTable());
    try {
      refresh([queryOf(owner, id)]);
      const daemon = await escaper.escape();
      clock.now += 1000;
      assert.ok(!pidsOf(refresh([queryOf(owner, id)]), id).includes(daemon), 'the view has not seen it yet');
      const report = await owner.kill(id, 0);
      assert.strictEqual(report.survivors, 0);
      assert.ok(report.signalled >= 2);
      assert.deepStrictEqual(await waitAllDead([daemon]), []);
    } finally {
      await owner.dispose(300);
    }
  });
});

describe("the owner's watch of a tree whose root exited", function () {
  this.timeout(30_000);

  it('follows the members: a daemon that left the parent chain keeps the tree owned, found without a full scan each look; it ends once the daemon is gone', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchIntervalMs: 50 });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({
      command: 'sh',
      args: ['-c', 'setsid -f sh -c \'echo "$$" > "$0"; exec sleep 60\' "$0"', pidfile],
      stdio: 'ignore',
    });
    register(tree.child.pid!);
    const shared = core.table as LinuxProcessTable;
    const calls = { full: 0, partial: 0 };
    const snapshot = shared.snapshot.bind(shared);
    const snapshotOf = shared.snapshotOf.bind(shared);
    shared.snapshot = () => (calls.full++, snapshot());
    shared.snapshotOf = (pids, walk) => (calls.partial++, snapshotOf(pids, walk));
    let ended = false;
    owner.on('ended', () => (ended = true));
    try {
      const daemon = await waitFor('the daemon', () => Number(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim() || 0 : 0));
      register(daemon);
      await waitFor('the root to exit', () => tree.rootExit !== undefined);
      await waitFor('a first look', () => calls.partial + calls.full > 0);
      const before = { ...calls };
      await waitFor('three more looks', () => calls.partial >= before.partial + 3);
      assert.strictEqual(ended, false, 'still owned: the daemon is a member');
      assert.strictEqual(calls.full, before.full, 'no full scan while the walk finds a member');
      process.kill(daemon, 'SIGKILL');
      await waitFor('the tree to end', () => ended);
    } finally {
      shared.snapshot = snapshot;
      shared.snapshotOf = snapshotOf;
      await owner.dispose(0);
    }
  });
});

describe('member tracking in the view source, on this thread and in the worker', function () {
  this.timeout(30_000);

  it('gives the same members either way, and counts the reads', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['setsid', pidfile], stdio: 'ignore' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    const query = [queryOf(owner, tree.record.id)];
    const local = new TreeMembersSource(core);
    const worker = new TreeMembersSource(core, { workerScript: path.join(REPO, 'out', 'src', 'proc', 'tracking', 'snapshotWorker.js'), workerThreshold: -1 });
    try {
      for (let round = 0; round < 3; round++) {
        const [a, b] = [await local.query(query), await worker.query(query)];
        assert.strictEqual(worker.lastInWorker, true);
        assert.strictEqual(local.lastInWorker, false);
        assert.deepStrictEqual(pidsOf(a, tree.record.id), sorted(pids.all));
        assert.deepStrictEqual(pidsOf(b, tree.record.id), pidsOf(a, tree.record.id));
        assert.ok(b.trees[0].members.every((m) => m.command.length > 0));
      }
      const s = worker.stats();
      assert.deepStrictEqual([s.refreshes, s.fullScans], [3, 1]);
      // Both share this thread's table; the worker's own reads come on top.
      assert.ok(s.processReads > local.stats().processReads, 'the worker reports its reads');
    } finally {
      worker.dispose();
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});
