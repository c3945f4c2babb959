/**
 * The core's rules, case by case, on synthetic machines (see synthetic.ts): joining kills, proving groups,
 * the guard on every path, survivors, the cgroup probe, and the macOS and Windows rules. The real-process tests
 * (kill, escapeMatrix, guardEdges, sweep) stay the final word on Linux.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import { spawnSync } from 'child_process';
import { localSweepParts, RecordStore, sweepOrphans, TreeRecord } from '../../src/proc';
import { cgroup2Mount, CgroupProbeDeps, CgroupProber, probeCgroupTier } from '../../src/proc/cgroup/probe';
import { KillOptions } from '../../src/proc/kill/killTarget';
import { TreeIdentity } from '../../src/proc/members/membership';
import { resolveTreeMembers } from '../../src/proc/members/treeMembers';
import { LinuxProcessTable } from '../../src/proc/platform/linuxProcessTable';
import { MAC_START_PRECISION, MacProcessTable } from '../../src/proc/platform/macProcessTable';
import { StartPrecision } from '../../src/proc/platform/processTable';
import { parseStatusUid } from '../../src/proc/platform/procParsers';
import { WindowsProcessTable } from '../../src/proc/platform/windowsProcessTable';
import { ANCESTRY, FakeProcess, FakeTable, LINUX_PRECISION, machine, proc, SELF } from './synthetic';
import { tmpDir } from './helpers';

const TRACKED = 1_000_100;
/**
 * Where start keys are boot ticks (Linux) the tree is judged by its ticks: the root's exact start tick (the
 * synthetic root 200 starts at tick 1200, see `proc`) and the tick tracking began at; elsewhere by its epoch times.
 */
const TRACKED_TICKS = 5000;
const tree: TreeIdentity = {
  id: 't1',
  rootPid: 200,
  pgid: 200,
  sid: 200,
  rootStartTime: 1_000_000,
  trackedAt: TRACKED,
  cgroup: null,
  rootStartTicks: 1200,
  trackedAtTicks: TRACKED_TICKS,
};
const outsider: KillOptions = { graceMs: 0, continuouslyOwned: false, cgroupVerified: false };
const owned: KillOptions = { graceMs: 0, continuouslyOwned: true, cgroupVerified: false };
const HOUR = 3_600_000;

/** A member of the tree's group and session. */
const inTree = (pid: number, fields: Partial<FakeProcess> = {}) => proc(pid, { ppid: 200, pgid: 200, sid: 200, ...fields });

describe('core rules: joining kills', () => {
  for (const [first, second] of [
    [HOUR, 20],
    [20, HOUR],
  ]) {
    it(`a shorter grace wins: ${first} ms, then ${second} ms, is one kill that escalates after 20 ms`, async () => {
      const m = machine([proc(200, { ignoresTerm: true }), inTree(201, { ignoresTerm: true })]);
      const phases: string[] = [];
      m.core.killer.on('terminate', () => phases.push('terminate')).on('escalate', () => phases.push('escalate'));
      const a = m.core.killer.kill(tree, { ...owned, graceMs: first });
      const b = m.core.killer.kill(tree, { ...owned, graceMs: second });
      assert.strictEqual(a, b, 'the second request joins the first');
      const report = await a; // with the hour-long grace winning this would outlast the test's timeout
      assert.deepStrictEqual(phases, ['terminate', 'escalate'], 'one SIGTERM round, one escalation');
      assert.strictEqual(report.escalated, true);
      assert.strictEqual(report.survivors, 0);
    });
  }
});

describe('core rules: which group is proven', () => {
  const cases: {
    title: string;
    procs: FakeProcess[];
    continuouslyOwned?: boolean;
    precision?: StartPrecision;
    proven: boolean;
    members: number[];
    doubt?: RegExp;
    excluded?: RegExp;
    tree?: TreeIdentity;
    /** What the continuous owner saw: members (pid and start key) and when it last found the root alive. */
    seen?: FakeProcess[];
    rootAliveAt?: number;
  }[] = [
    {
      title: 'the recorded root leads its group (its exact start tick)',
      procs: [proc(200), inTree(201)],
      proven: true,
      members: [200, 201],
    },
    {
      title: 'a leader that started after tracking (a reused pid)',
      procs: [proc(200, { startKey: TRACKED_TICKS + 1 }), inTree(201)],
      proven: false,
      members: [],
      doubt: /started after the tree was tracked/,
    },
    {
      title: "a leader at the root's pid one tick off the recorded root",
      procs: [proc(200, { startKey: 1201 }), inTree(201)],
      proven: false,
      members: [],
    },
    {
      title: 'a recorded tree without ticks proves no leader on Linux',
      procs: [proc(200), inTree(201)],
      proven: false,
      members: [],
      doubt: /no boot-clock times/,
      tree: { ...tree, rootStartTicks: undefined, trackedAtTicks: undefined },
    },
    {
      title: 'a leaderless group the continuous owner saw nothing of: it may have emptied and be another group now',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      proven: false,
      members: [],
      doubt: /no leader and no member carrying the tree's tag or seen as a member/,
    },
    {
      title: 'a leaderless group holding a member the continuous owner saw (pid and start key): it never emptied',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      seen: [inTree(201)],
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group whose seen member left: the same pid, another start key, proves nothing',
      procs: [inTree(201, { startKey: 9999 }), inTree(202)],
      continuouslyOwned: true,
      seen: [inTree(201)],
      proven: false,
      members: [],
    },
    {
      title: 'a leaderless group holding a member of the root\'s session born while the root lived (rootAliveAt)',
      procs: [inTree(201), inTree(202, { startKey: 9000 })],
      continuouslyOwned: true,
      rootAliveAt: 1202,
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group whose members were all born after the root was last seen alive',
      procs: [inTree(201), inTree(202)],
      continuouslyOwned: true,
      rootAliveAt: 1201,
      proven: false,
      members: [],
    },
    {
      title: 'a leaderless group of another session, with an old member, is no witness of the root\'s session',
      procs: [inTree(201, { sid: 77 })],
      continuouslyOwned: true,
      rootAliveAt: 99_999,
      proven: false,
      members: [],
    },
    {
      title: 'a leaderless group with a tagged member of the session outside the group',
      procs: [inTree(201), proc(203, { ppid: 1, pgid: 203, sid: 200, tag: 't1' })],
      proven: true,
      members: [201, 203],
    },
    {
      title: 'a leaderless group proven by a tagged member',
      procs: [inTree(201, { tag: 't1' }), inTree(202)],
      proven: true,
      members: [201, 202],
    },
    {
      title: 'a leaderless group with no tagged member',
      procs: [inTree(201), inTree(202)],
      proven: false,
      members: [],
      doubt: /no leader and no member carrying/,
    },
    {
      title: "a leaderless group whose only tagged member is another user's",
      procs: [inTree(201, { tag: 't1', uid: 4242 }), inTree(202)],
      proven: false,
      members: [],
      excluded: /pid 201 carries the tree's tag but runs as uid 4242/,
    },
    {
      title: 'a tagged process of ours outside the group, and its child',
      procs: [proc(300, { tag: 't1' }), proc(301, { ppid: 300 })],
      proven: false,
      members: [300, 301],
    },
    {
      title: 'a member that changed uid, by lineage (a child of a member)',
      procs: [proc(200), proc(310, { ppid: 200, pgid: 310, sid: 310, uid: 0 })],
      proven: true,
      members: [200, 310],
    },
    {
      title: 'macOS: a leader whose whole second overlaps tracking is not trusted',
      procs: [proc(200, { startTime: TRACKED - 500 }), inTree(201)],
      precision: MAC_START_PRECISION,
      proven: false,
      members: [],
      doubt: /started after the tree was tracked/,
    },
    {
      title: 'macOS: a leader a whole second older than tracking',
      procs: [proc(200, { startTime: TRACKED - 1500 }), inTree(201)],
      precision: MAC_START_PRECISION,
      proven: true,
      members: [200, 201],
    },
    {
      title: "Windows: a process at the leader's pid proves nothing to an outsider",
      procs: [proc(200, { startTime: 0 }), proc(201, { ppid: 200 })],
      precision: { unit: 'none', errorMs: Infinity },
      proven: false,
      members: [],
      doubt: /no start times/,
    },
    {
      title: 'Windows: the continuous owner',
      procs: [proc(200, { startTime: 0 }), proc(201, { ppid: 200 })],
      precision: { unit: 'none', errorMs: Infinity },
      continuouslyOwned: true,
      proven: true,
      members: [200, 201],
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const m = machine(c.procs, { precision: c.precision });
      const r = resolveTreeMembers(
        c.tree ?? tree,
        m.table.snapshot(),
        { continuouslyOwned: c.continuouslyOwned ?? false, cgroupVerified: false, extraSeeds: c.seen, rootAliveAt: c.rootAliveAt },
        m.core,
      );
      assert.strictEqual(r.groupProven, c.proven, r.groupDoubt);
      assert.deepStrictEqual(r.members.map((p) => p.pid).sort(), c.members);
      if (c.doubt) assert.match(r.groupDoubt ?? '', c.doubt);
      if (c.excluded)
        assert.ok(
          r.excluded.some((e) => c.excluded!.test(e)),
          r.excluded.join('; '),
        );
    });
  }

  // A root that is not its own group's leader is a member only as the recorded root: in ticks exactly, in
  // epoch times (macOS) within two error bounds of its recorded start.
  const rootCases: { title: string; precision: StartPrecision; fields: Partial<FakeProcess>; member: boolean }[] = [
    { title: 'Linux, its exact start tick', precision: LINUX_PRECISION, fields: { startKey: 1200 }, member: true },
    { title: 'Linux, one tick later', precision: LINUX_PRECISION, fields: { startKey: 1201 }, member: false },
    {
      title: 'macOS, 2 s off',
      precision: MAC_START_PRECISION,
      fields: { startTime: tree.rootStartTime + 2 * MAC_START_PRECISION.errorMs },
      member: true,
    },
    {
      title: 'macOS, beyond 2 error bounds',
      precision: MAC_START_PRECISION,
      fields: { startTime: tree.rootStartTime + 2 * MAC_START_PRECISION.errorMs + 1 },
      member: false,
    },
    { title: 'Windows (no start times)', precision: { unit: 'none', errorMs: Infinity }, fields: {}, member: false },
  ];
  for (const c of rootCases) {
    it(`the root start-time tolerance: a root that left its group, ${c.title}: ${c.member ? 'a member' : 'not a member'}`, () => {
      const m = machine([proc(205, { pgid: 206, sid: 206, ...c.fields })], { precision: c.precision });
      const r = resolveTreeMembers({ ...tree, rootPid: 205 }, m.table.snapshot(), { continuouslyOwned: false, cgroupVerified: false }, m.core);
      assert.strictEqual(
        r.members.some((p) => p.pid === 205),
        c.member,
      );
    });
  }
});

describe('core rules: the guard on every path', () => {
  it('refuses a group that holds an ancestor right now, though the ancestor is no member', () => {
    const m = machine([inTree(201, { tag: 't1' })], { ancestry: [ANCESTRY[0], proc(50, { pgid: 200, sid: 200 }), ANCESTRY[2]] });
    assert.match(m.core.guard.groupRefusal(200, []) ?? '', /holds pid 50, this process or its ancestor/);
    assert.strictEqual(m.core.guard.groupRefusal(201, []), undefined);
  });

  it('a leaderless group holding our parent gets no group signal; its other members are ended one by one', async () => {
    const m = machine([inTree(201, { tag: 't1' }), inTree(202)], {
      ancestry: [ANCESTRY[0], proc(50, { pgid: 200, sid: 200 }), ANCESTRY[2]],
    });
    const report = await m.core.killer.kill(tree, { ...outsider, graceMs: 50 });
    assert.deepStrictEqual(
      m.signaller.calls.filter((c) => c.to === 'group'),
      [],
      'no kill(-pgid)',
    );
    assert.deepStrictEqual(m.signaller.reached(50), [], 'the parent got nothing');
    assert.deepStrictEqual(m.signaller.reached(201).slice(0, 2), ['SIGSTOP', 'SIGTERM'], 'frozen first');
    assert.strictEqual(report.survivors, 0);
    assert.ok(m.table.processes.has(50));
  });

  it('a cgroup that holds this process is never killed as a whole; the others die one by one', async () => {
    const m = machine([proc(300, { tag: 't1', pgid: 300, sid: 300 }), proc(301, { ppid: 300, pgid: 300, sid: 300 })]);
    m.cgroups.dirs.set('/cg/tree-t1', [100, 300, 301]);
    const report = await m.core.killer.kill({ ...tree, cgroup: '/cg/tree-t1' }, { ...outsider, cgroupVerified: true });
    assert.deepStrictEqual(m.cgroups.killed, []);
    assert.ok(
      report.refused.some((r) => /not killed as a whole: it holds pid 100/.test(r)),
      report.refused.join('; '),
    );
    assert.deepStrictEqual(m.signaller.reached(100, 100), []);
    assert.ok(!m.table.processes.has(300) && !m.table.processes.has(301));
    assert.ok(m.table.processes.has(100));
  });

  it('a member in a child cgroup is found, killed with the cgroup, and counted', async () => {
    const m = machine([proc(400, { pgid: 400, sid: 400 })]); // env -i setsid -f: only the cgroup leads to it
    m.cgroups.dirs.set('/cg/tree-t1', []);
    m.cgroups.dirs.set('/cg/tree-t1/sub', [400]);
    const verified = { ...tree, cgroup: '/cg/tree-t1' };
    assert.deepStrictEqual(
      resolveTreeMembers(verified, m.table.snapshot(), { continuouslyOwned: true, cgroupVerified: true }, m.core).members.map((p) => p.pid),
      [400],
    );
    const report = await m.core.killer.kill(verified, { ...owned, cgroupVerified: true });
    assert.deepStrictEqual(m.cgroups.killed, ['/cg/tree-t1']);
    assert.strictEqual(report.signalled, 1);
    assert.strictEqual(report.survivors, 0);
  });

  it('counts a member it may not signal, after a freeze that stopped nobody, and says why', async () => {
    const m = machine([proc(200), inTree(201, { denied: true, uid: 0 })]);
    m.table.processes.delete(200); // the root exited; the group stays proven for its owner, which saw 201
    const report = await m.core.killer.kill(tree, { ...owned, graceMs: 50, extraSeeds: [m.table.read(201)!] });
    assert.strictEqual(report.survivors, 1);
    assert.deepStrictEqual(report.survivorPids, [201]);
    assert.ok(
      report.refused.some((r) => /pid 201 runs as uid 0: only root or uid 0 can end it/.test(r)),
      report.refused.join('; '),
    );
  });
});

describe('core rules: the cgroup probe', () => {
  const hybrid = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');
  const pureV2 =
    '29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot';

  for (const [title, text, mount] of [
    ['a hybrid layout', hybrid, '/sys/fs/cgroup/unified'],
    ['pure v2 with optional fields', pureV2, '/sys/fs/cgroup'],
    ['an escaped mount point', '41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 none rw', '/mnt/my cgroups'],
    ['v1 only', hybrid.split('\n').slice(0, 2).join('\n'), undefined],
  ] as const) {
    it(`cgroup2Mount: ${title}`, () => assert.strictEqual(cgroup2Mount(text), mount));
  }

  const okFs = {
    mkdirSync: () => undefined,
    rmdirSync: () => undefined,
    existsSync: () => true,
    accessSync: () => undefined,
  } as unknown as CgroupProbeDeps['fs'];
  const deps = (over: Partial<CgroupProbeDeps>): CgroupProbeDeps => ({
    platform: 'linux',
    uid: 0,
    readMountinfo: () => hybrid,
    fs: okFs,
    execAsync: async () => {},
    ...over,
  });
  const cases: { title: string; deps: CgroupProbeDeps; tier?: { kind: string; base: string }; unavailable?: RegExp }[] = [
    { title: 'not Linux', deps: deps({ platform: 'darwin' }), unavailable: /Linux only/ },
    {
      title: 'mountinfo unreadable',
      deps: deps({
        readMountinfo: () => {
          throw new Error('EACCES');
        },
      }),
      unavailable: /cannot read \/proc\/self\/mountinfo: EACCES/,
    },
    { title: 'no cgroup2 mounted', deps: deps({ readMountinfo: () => hybrid.split('\n')[0] }), unavailable: /no cgroup2 file system/ },
    { title: 'root, writable', deps: deps({}), tier: { kind: 'directory', base: '/sys/fs/cgroup/unified/agent-trees' } },
    {
      title: 'root, pure v2',
      deps: deps({ readMountinfo: () => pureV2 }),
      tier: { kind: 'directory', base: '/sys/fs/cgroup/agent-trees' },
    },
    {
      title: 'root, not allowed to make directories',
      deps: deps({
        fs: {
          ...okFs,
          mkdirSync: () => {
            throw new Error('EROFS: read-only file system');
          },
        } as CgroupProbeDeps['fs'],
      }),
      unavailable: /cannot create cgroups under \/sys\/fs\/cgroup\/unified\/agent-trees: EROFS/,
    },
    {
      title: 'root, not a cgroup2 file system',
      deps: deps({ fs: { ...okFs, existsSync: () => false } as CgroupProbeDeps['fs'] }),
      unavailable: /no cgroup.procs/,
    },
    {
      title: 'a user with systemd',
      deps: deps({ uid: 1000 }),
      tier: { kind: 'systemd-scope', base: '/sys/fs/cgroup/unified/user.slice/user-1000.slice/user@1000.service/app.slice' },
    },
    {
      title: 'a user without systemd',
      deps: deps({
        uid: 1000,
        execAsync: async () => {
          throw new Error('Failed to connect to bus');
        },
      }),
      unavailable: /systemd-run --user --scope does not work here: Failed to connect to bus/,
    },
  ];
  for (const c of cases) {
    it(`probeCgroupTier: ${c.title}`, async () => {
      const r = await probeCgroupTier(c.deps);
      if (c.tier) assert.deepStrictEqual(r.tier && { kind: r.tier.kind, base: r.tier.base }, c.tier, r.unavailable);
      else assert.match(r.unavailable ?? '', c.unavailable!, JSON.stringify(r));
    });
  }

  it('CgroupProber never waits: a user\'s probe is pending until systemd-run answers; "off" probes nothing', async () => {
    let answer!: () => void;
    const calls: string[][] = [];
    const prober = new CgroupProber(
      deps({
        uid: 1000,
        execAsync: (file, args) => {
          calls.push([file, ...args]);
          return new Promise<void>((r) => (answer = r));
        },
      }),
    );
    assert.match(prober.now('off').unavailable!, /turned off/);
    assert.strictEqual(calls.length, 0);
    assert.match(prober.now('auto').unavailable!, /has not finished/);
    assert.deepStrictEqual(calls[0].slice(0, 4), ['systemd-run', '--user', '--scope', '--quiet']);
    const later = prober.probe('auto');
    answer();
    assert.strictEqual((await later).tier!.kind, 'systemd-scope');
    assert.strictEqual(prober.now('auto').tier!.kind, 'systemd-scope');
    assert.strictEqual(calls.length, 1, 'probed once');
    assert.strictEqual(prober.location()!.kind, 'systemd-scope', 'where cgroups live needs no probe');
  });
});

describe('core rules: Windows (injected ps-list and taskkill)', () => {
  const listing = [
    { pid: 4000, ppid: 100, name: 'node.exe' },
    { pid: 4001, ppid: 4000, name: 'cmd.exe' },
    { pid: 4002, ppid: 4001, name: 'python.exe' },
    { pid: 4003, ppid: 4001, name: 'conhost.exe' },
  ];
  const success = (pids: number[]) =>
    pids.map((p) => `SUCCESS: The process with PID ${p} (child process of PID 4000) has been terminated.`).join('\r\n');

  function windowsMachine(exec: (args: string[]) => { code: number; stdout: string }) {
    let alive = [...listing];
    const calls: string[][] = [];
    const table = new WindowsProcessTable(async () => alive);
    const m = machine([], {
      platform: 'win32',
      precision: { unit: 'none', errorMs: Infinity },
      coreTable: () => table,
      exec: async (_file, args) => {
        calls.push(args);
        const r = exec(args);
        if (r.code === 0) alive = alive.filter((p) => p.pid !== 4001 && p.ppid !== 4001);
        return r;
      },
    });
    return { m, calls, table };
  }

  it('"Kill Process and Its Children" ends the subtree through taskkill /T and counts what it ended', async () => {
    const { m, calls } = windowsMachine(() => ({ code: 0, stdout: success([4002, 4003, 4001]) }));
    const report = await m.core.killer.killSubtree(4001, 0, { ...owned, graceMs: 1000 });
    assert.deepStrictEqual(calls, [['/T', '/PID', '4001']]);
    assert.strictEqual(report.signalled, 3);
    assert.strictEqual(report.survivors, 0);
  });

  it('refuses a tree it does not own: no start times to prove any of it', async () => {
    const { m, calls } = windowsMachine(() => assert.fail('taskkill must not run'));
    const report = await m.core.killer.kill({ ...tree, rootPid: 4000, pgid: 4000, sid: 4000 }, outsider);
    assert.deepStrictEqual(calls, []);
    assert.match(report.refused[0], /only the owner that spawned a tree can prove/);
  });

  it("a sweep of another owner's tree is refused, logged, and its record kept", async () => {
    const { m } = windowsMachine(() => assert.fail('taskkill must not run'));
    const store = new RecordStore(tmpDir());
    // A dead owner: a child of ours that has exited and been reaped.
    const gone = spawnSync('true').pid!;
    const record: TreeRecord = {
      ...tree,
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
      self: { pid: SELF.pid, startTime: 1 },
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

describe('core rules: macOS (injected ps)', () => {
  /** What `ps -o pid=,ppid=,pgid=,sess=,state=,uid=,rss=,time=,lstart=,command=` prints for the fake table. */
  function psOutput(fake: FakeTable, args: string[]): string {
    const only = args[0] === '-p' ? Number(args[1]) : undefined;
    const lines = [...fake.processes.values()]
      .filter((p) => only === undefined || p.pid === only)
      .map((p) => {
        const d = new Date(p.startTime);
        const day = d.toLocaleDateString('en-US', { weekday: 'short' });
        const month = d.toLocaleDateString('en-US', { month: 'short' });
        const time = [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
        return `${p.pid} ${p.ppid} ${p.pgid} ${p.sid} ${p.state} ${p.uid} 100 0:00.01 ${day} ${month} ${String(d.getDate()).padStart(2)} ${time} ${d.getFullYear()} ${p.name}`;
      });
    if (only !== undefined && lines.length === 0) throw new Error('ps: exit 1');
    return lines.join('\n') + '\n';
  }

  const at = (seconds: number) => Math.floor(TRACKED / 1000) * 1000 + seconds * 1000;
  for (const { title, leaderStart, group } of [
    { title: 'a leader started whole seconds before tracking: the group is signalled at once', leaderStart: at(-3), group: true },
    { title: 'a leader started in the second tracking began: the group is not trusted', leaderStart: at(0), group: false },
  ]) {
    it(title, async () => {
      const m = machine([proc(200, { startTime: leaderStart }), inTree(201, { startTime: leaderStart })], {
        platform: 'darwin',
        precision: MAC_START_PRECISION,
        coreTable: (fake) => new MacProcessTable((_file, args) => psOutput(fake, args)),
      });
      assert.strictEqual(m.core.table.startPrecision, MAC_START_PRECISION);
      const report = await m.core.killer.kill(tree, outsider);
      assert.strictEqual(
        m.signaller.calls.some((c) => c.to === 'group'),
        group,
      );
      if (group) assert.strictEqual(report.survivors, 0);
      else {
        assert.deepStrictEqual(m.signaller.calls, [], 'nothing proven, nothing signalled (macOS has no tags)');
        assert.match(report.groupDoubt ?? '', /started after the tree was tracked/);
      }
    });
  }
});

describe('core rules: the real uid on Linux', () => {
  it('comes from the Uid line of /proc/<pid>/status (its first field), not from who owns the /proc files', () => {
    // A set-uid program: real 1000, effective 0. /proc/<pid>/stat of a non-dumpable process belongs to root.
    const status = 'Name:\tssh-agent\nUmask:\t0077\nState:\tS (sleeping)\nPid:\t4242\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n';
    assert.strictEqual(parseStatusUid(status), 1000);
    assert.strictEqual(parseStatusUid('Name:\tx\n'), undefined);
  });
});

describe('core rules: each table declares its start-time precision', () => {
  it('Linux: clock ticks (the synthetic machines use the same bound); macOS: seconds; Windows: none', () => {
    assert.deepStrictEqual(new LinuxProcessTable().startPrecision, LINUX_PRECISION);
    assert.strictEqual(new MacProcessTable(() => '').startPrecision.unit, 'seconds');
    assert.ok(new MacProcessTable(() => '').startPrecision.errorMs >= 1000);
    assert.deepStrictEqual(new WindowsProcessTable(async () => []).startPrecision, { unit: 'none', errorMs: Infinity });
  });
});
