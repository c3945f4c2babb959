/**
 * The kernel's lines of a tree's budget (src/proc/cgroup/treeLimits.ts). The cgroup v2 path (`memory.max`,
 * `memory.oom.group`, `pids.max`) is tested on a synthetic cgroup folder: this machine's hybrid hierarchy offers
 * no memory or pids controller to cgroup v2. Pure.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { launchWithLimits, pidsV1Base, readKernelEvents, scopeProperties, setTreeLimitsV2 } from '../../../src/proc/cgroup/treeLimits';
import { syntheticCgroup } from '../../support/cgroupFolder';

const MB = 1024 * 1024;

const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), 'utf8');

describe('the kernel lines of a budget (cgroup/treeLimits.ts)', () => {
  it('sets memory.max with memory.oom.group and no swap, and pids.max at twice the limit, in a cgroup v2 tree', () => {
    const { base, tree } = syntheticCgroup();
    const lines = setTreeLimitsV2(tree, { memoryBytes: 300 * MB, processes: 50 });
    assert.deepStrictEqual(lines, { memory: tree, pids: tree });
    assert.strictEqual(read(base, 'cgroup.subtree_control'), '+memory +pids', 'the controllers enabled for the tree cgroups');
    assert.strictEqual(read(tree, 'memory.max'), String(300 * MB));
    assert.strictEqual(read(tree, 'memory.oom.group'), '1');
    assert.strictEqual(read(tree, 'memory.swap.max'), '0');
    assert.strictEqual(read(tree, 'pids.max'), '100');
  });

  it('leaves a line to the watch where the hierarchy offers no controller (no file: none is made)', () => {
    const { tree } = syntheticCgroup();
    fs.unlinkSync(path.join(tree, 'memory.max'));
    fs.unlinkSync(path.join(tree, 'pids.max'));
    assert.deepStrictEqual(setTreeLimitsV2(tree, { memoryBytes: MB, processes: 5 }), {});
    assert.ok(!fs.existsSync(path.join(tree, 'memory.max')) && !fs.existsSync(path.join(tree, 'pids.max')));
  });

  it('puts the same lines in a systemd user scope as its properties, before the command', () => {
    assert.deepStrictEqual(scopeProperties({ memoryBytes: 512 * MB, processes: 200 }), [
      `--property=MemoryMax=${512 * MB}`,
      '--property=MemorySwapMax=0',
      '--property=TasksMax=400',
    ]);
    const dir = '/sys/fs/cgroup/user.slice/app.slice/agent-trees-t1.scope';
    const launch = launchWithLimits(
      {
        treeId: 't1',
        tier: { kind: 'systemd-scope', base: '/sys/fs/cgroup/user.slice/app.slice', reason: 'test' },
        entry: { dir, prefix: ['systemd-run', '--user', '--scope', '--quiet', '--collect', '--unit=agent-trees-t1.scope', '--'] },
      },
      { memoryBytes: 512 * MB },
    );
    assert.deepStrictEqual(launch.entry?.prefix, [
      'systemd-run',
      '--user',
      '--scope',
      '--quiet',
      '--collect',
      '--unit=agent-trees-t1.scope',
      `--property=MemoryMax=${512 * MB}`,
      '--property=MemorySwapMax=0',
      '--',
    ]);
    assert.deepStrictEqual(launch.lines, { memory: '/sys/fs/cgroup/user.slice/app.slice/agent-trees-t1.scope', pids: undefined });
  });

  it('reads what the kernel did: its OOM kills and the memory peak', () => {
    const { tree } = syntheticCgroup();
    assert.deepStrictEqual(readKernelEvents(tree), { oomKills: 0, memoryPeak: undefined });
    fs.writeFileSync(path.join(tree, 'memory.events'), 'low 0\nhigh 0\nmax 40\noom 1\noom_kill 7\noom_group_kill 1\n');
    fs.writeFileSync(path.join(tree, 'memory.peak'), `${300 * MB}\n`);
    assert.deepStrictEqual(readKernelEvents(tree), { oomKills: 7, memoryPeak: 300 * MB });
    assert.deepStrictEqual(readKernelEvents('/nonexistent'), { oomKills: 0, memoryPeak: undefined });
  });

  it("finds the cgroup v1 pids hierarchy below this process's own pids cgroup", () => {
    const hybrid =
      '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n' +
      '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n' +
      '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n' +
      '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n';
    const sources = (mountinfo: string, cgroup: string) => ({ readMountinfo: () => mountinfo, readSelfCgroup: () => cgroup });
    assert.strictEqual(pidsV1Base(sources(hybrid, '9:name=systemd:/\n8:pids:/\n4:memory:/x\n0::/\n')), '/sys/fs/cgroup/pids/agent-trees');
    assert.strictEqual(
      pidsV1Base(sources(hybrid, '8:pids:/user.slice/user-1000.slice/session-2.scope\n')),
      '/sys/fs/cgroup/pids/user.slice/user-1000.slice/session-2.scope/agent-trees',
    );
    const container = '39 31 0:36 /docker/abc /sys/fs/cgroup/pids ro,relatime - cgroup cgroup rw,pids\n';
    assert.strictEqual(pidsV1Base(sources(container, '8:pids:/docker/abc\n')), '/sys/fs/cgroup/pids/agent-trees');
    assert.strictEqual(pidsV1Base(sources(container, '8:pids:/elsewhere\n')), undefined, 'our cgroup is outside the mounted part');
    assert.strictEqual(pidsV1Base(sources('41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n', '0::/\n')), undefined, 'pure v2');
  });
});
