/** One tree's cgroup (src/proc/cgroup/treeCgroup.ts) on a stand-in folder: the kill where the kernel has no cgroup.kill. */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { killCgroup } from '../../../src/proc/cgroup/treeCgroup';
import { tmpDir } from '../../support/repo';

describe("a tree's cgroup, on a stand-in folder", () => {
  it('without cgroup.kill (before Linux 5.14), freezes the cgroup, SIGKILLs each member, then thaws it', () => {
    // A stand-in folder: cgroup.kill cannot be written (a directory), so the freeze path runs.
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), '1234\n5678\n');
    fs.mkdirSync(path.join(dir, 'cgroup.kill'));
    fs.writeFileSync(path.join(dir, 'cgroup.freeze'), '0');
    const seen: { pid: number; frozen: string }[] = [];
    const pids = killCgroup(dir, (pid) => seen.push({ pid, frozen: fs.readFileSync(path.join(dir, 'cgroup.freeze'), 'utf8') }));
    assert.deepStrictEqual(pids, [1234, 5678]);
    assert.deepStrictEqual(
      seen,
      [
        { pid: 1234, frozen: '1' },
        { pid: 5678, frozen: '1' },
      ],
      'signalled while frozen',
    );
    assert.strictEqual(fs.readFileSync(path.join(dir, 'cgroup.freeze'), 'utf8'), '0', 'thawed afterwards');
  });
});
