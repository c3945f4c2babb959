/**
 * What the budget watch reads back of the kernel's lines (src/proc/cgroup/treeLimits.ts), on a synthetic cgroup v2
 * folder (this machine's hybrid hierarchy offers no memory or pids controller to cgroup v2), with real processes
 * standing for the trees the kernel holds.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../../src/proc';
import { BudgetWatch } from '../../../src/proc/budget/budgetWatch';
import { Breach } from '../../../src/proc/budget/limits';
import { readPssBytes } from '../../../src/proc/platform/procFiles';
import { syntheticCgroup } from '../../support/cgroupFolder';
import { tmpDir } from '../../support/repo';
import { register } from '../../support/started';
import { waitFor } from '../../support/wait';

const table = processCore().table;

const MB = 1024 * 1024;

const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), 'utf8');

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
