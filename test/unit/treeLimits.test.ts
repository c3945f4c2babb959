/**
 * The kernel's lines of a tree's budget (src/proc/cgroup/treeLimits.ts) and what the budget watch reads back. The
 * cgroup v2 path (`memory.max`, `memory.oom.group`, `pids.max`) is tested on a synthetic cgroup folder: this
 * machine's hybrid hierarchy offers no memory or pids controller to cgroup v2. Real processes stand for the trees.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../src/proc';
import { BudgetWatch } from '../../src/proc/budget/budgetWatch';
import { Breach } from '../../src/proc/budget/limits';
import { launchWithLimits, pidsV1Base, readKernelEvents, scopeProperties, setTreeLimitsV2 } from '../../src/proc/cgroup/treeLimits';
import { readPssBytes } from '../../src/proc/platform/procFiles';
import { register, table, tmpDir, waitFor } from './helpers';

const MB = 1024 * 1024;

/** A folder shaped like a cgroup v2 base offering memory and pids, with one tree cgroup in it. */
function syntheticCgroup(): { base: string; tree: string } {
  const base = tmpDir('agent-trees-cgroup2-');
  fs.writeFileSync(path.join(base, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma misc\n');
  fs.writeFileSync(path.join(base, 'cgroup.subtree_control'), 'cpu\n');
  const tree = path.join(base, 'tree-abc123');
  fs.mkdirSync(tree);
  const files: Record<string, string> = {
    'cgroup.procs': '',
    'memory.max': 'max\n',
    'memory.oom.group': '0\n',
    'memory.swap.max': 'max\n',
    'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
    'memory.peak': '0\n',
    'pids.max': 'max\n',
  };
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(tree, name), text);
  return { base, tree };
}

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
    const launch = launchWithLimits(
      {
        file: 'systemd-run',
        args: ['--user', '--scope', '--quiet', '--collect', '--unit=agent-trees-t1.scope', '--', 'claude'],
        treeId: 't1',
        tier: { kind: 'systemd-scope', base: '/sys/fs/cgroup/user.slice/app.slice', reason: 'test' },
        cgroupDir: '/sys/fs/cgroup/user.slice/app.slice/agent-trees-t1.scope',
      },
      { memoryBytes: 512 * MB },
    );
    assert.deepStrictEqual(launch.args, [
      '--user',
      '--scope',
      '--quiet',
      '--collect',
      '--unit=agent-trees-t1.scope',
      `--property=MemoryMax=${512 * MB}`,
      '--property=MemorySwapMax=0',
      '--',
      'claude',
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

describe('the budget watch reading the kernel back (synthetic cgroup v2, real processes)', () => {
  const owners: TreeOwner[] = [];
  afterEach(async () => {
    await Promise.all(owners.splice(0).map((o) => o.dispose(0)));
  });

  /** A real tree (a process running 4 threads besides its main one) to stand for the one the kernel holds, and a watch of its own over it. */
  function watched(onBreach: (id: string, breach: Breach) => void) {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    owners.push(owner);
    // Four threads besides its main one, and no more.
    const script =
      'import threading, time\nfor _ in range(4): threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\ntime.sleep(100)\n';
    const tree = owner.spawn({ command: 'python3', args: ['-c', script], stdio: 'ignore' });
    register(tree.child.pid!);
    const core = processCore();
    const watch = new BudgetWatch({ table: core.table, deps: core, readPss: readPssBytes, onBreach });
    return { watch, id: tree.record.id, query: owner.queryOf(tree.record.id)!, rootPid: tree.record.rootPid };
  }

  it("ends the tree as the memory limit's when the kernel's OOM killer ended its processes, with the kernel's count and peak", () => {
    const { tree } = syntheticCgroup();
    const breaches: Breach[] = [];
    const { watch, id, query } = watched((_id, b) => breaches.push(b));
    watch.watch(query, { maxMemoryMB: 300 }, { memory: tree });
    watch.look();
    assert.deepStrictEqual(breaches, [], 'no OOM kill yet');
    fs.writeFileSync(path.join(tree, 'memory.events'), 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 3\noom_group_kill 1\n');
    fs.writeFileSync(path.join(tree, 'memory.peak'), `${300 * MB}\n`);
    watch.checkKernel(id);
    assert.deepStrictEqual(breaches, [{ kind: 'memory', limitMB: 300, bytes: 300 * MB, kernelEnded: 3 }]);
    assert.strictEqual(watch.use(id), undefined, 'no longer watched');
    watch.dispose();
  });

  it('keeps pids.max at twice the limit plus the threads the tree runs besides one per process', async () => {
    const { tree } = syntheticCgroup();
    const { watch, id, query, rootPid } = watched(() => {});
    await waitFor('its four threads', () => table.read(rootPid)?.threads === 5);
    watch.watch(query, { maxProcesses: 10 }, { pids: tree });
    watch.look();
    assert.strictEqual(read(tree, 'pids.max'), '24', 'twice 10, and its 4 threads besides its main one');
    assert.deepStrictEqual(watch.use(id)!.kernel, { memory: false, processes: true });
    watch.dispose();
  });
});
