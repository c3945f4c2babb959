/** Whether and where tree cgroups can be made (src/proc/cgroup/probe.ts), on recorded mountinfo and injected calls. */
import * as assert from 'assert';
import { cgroup2Mount, cgroupHierarchyOf, CgroupProbeDeps, CgroupProber, probeCgroupTier } from '../../../src/proc/cgroup/probe';

describe('the cgroup probe', () => {
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

  // Where a released tree's processes go: the cgroup this process runs in, on the hierarchy of the tree's cgroup.
  const hybridSelf = '8:pids:/user.slice\n4:freezer:/\n0::/user.slice/session-1.scope';
  for (const [title, dir, mountinfo, self, expected] of [
    [
      'hybrid: the cgroup2 tree, under the longest mount that holds it',
      '/sys/fs/cgroup/unified/agent-trees/tree-abc',
      hybrid,
      hybridSelf,
      { mountPoint: '/sys/fs/cgroup/unified', root: '/', controllers: '', ownDir: '/sys/fs/cgroup/unified/user.slice/session-1.scope' },
    ],
    [
      'hybrid: a v1 hierarchy, by its controllers',
      '/sys/fs/cgroup/freezer/agent-trees/tree-abc',
      hybrid,
      hybridSelf,
      { mountPoint: '/sys/fs/cgroup/freezer', root: '/', controllers: 'freezer', ownDir: '/sys/fs/cgroup/freezer' },
    ],
    [
      'pure v2, this process in the root cgroup',
      '/sys/fs/cgroup/agent-trees/tree-abc',
      pureV2,
      '0::/',
      { mountPoint: '/sys/fs/cgroup', root: '/', controllers: '', ownDir: '/sys/fs/cgroup' },
    ],
    [
      "a container's mount of a part of the hierarchy: our cgroup relative to it",
      '/sys/fs/cgroup/agent-trees/tree-abc',
      '29 23 0:26 /docker/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw',
      '0::/docker/c1/app',
      { mountPoint: '/sys/fs/cgroup', root: '/docker/c1', controllers: '', ownDir: '/sys/fs/cgroup/app' },
    ],
    [
      'our cgroup outside the part mounted',
      '/sys/fs/cgroup/agent-trees/tree-abc',
      '29 23 0:26 /docker/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw',
      '0::/other',
      undefined,
    ],
    [
      'in a cgroup namespace made below the mount: its root shows as "/..", which names no cgroup',
      '/sys/fs/cgroup/unified/agent-trees/tree-abc',
      '41 31 0:38 /.. /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
      '0::/',
      undefined,
    ],
    [
      'moved above its cgroup namespace: our own cgroup shows as "/../x"',
      '/sys/fs/cgroup/unified/agent-trees/tree-abc',
      hybrid,
      '0::/../x',
      undefined,
    ],
    ['no mount holds the folder', '/tmp/agent-trees/tree-abc', hybrid, hybridSelf, undefined],
    [
      'a mount point that is only a prefix of a name',
      '/sys/fs/cgroup/unifiedx/tree-abc',
      hybrid.split('\n').slice(2).join('\n'),
      hybridSelf,
      undefined,
    ],
    ['no line of ours for that hierarchy', '/sys/fs/cgroup/unified/agent-trees/tree-abc', hybrid, '4:freezer:/', undefined],
  ] as const) {
    it(`cgroupHierarchyOf: ${title}`, () => assert.deepStrictEqual(cgroupHierarchyOf(dir, mountinfo, self), expected));
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
