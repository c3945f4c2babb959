/**
 * The owner's record of other extensions' processes (src/proc/owner/treeOwner.ts `setHostProcesses`): written
 * only when it changes, at most once per interval, kept (with the watchdog it starts) past the owner's teardown.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../../src/proc';
import { parseRecord } from '../../../src/proc/records/schema';
import { tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';

describe("the owner's record of other extensions' processes", () => {
  it('the owner rewrites it only when it changes, at most once per interval, and keeps it past its teardown', async function () {
    this.timeout(10_000);
    const dir = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: dir, hostProcessesWriteMs: 300 });
    const file = path.join(dir, `${process.pid}.json`);
    const writes: number[] = [];
    const watcher = fs.watch(dir, () => writes.push(Date.now()));
    try {
      const hp = (n: number) => ({ mark: 'x', seen: [{ pid: n, startTicks: 1, extensionId: 'a.b' }], keep: [] });
      owner.setHostProcesses({ ...hp(1), mark: `${process.pid}:1` });
      const first = fs.readFileSync(file, 'utf8');
      owner.setHostProcesses({ ...hp(1), mark: `${process.pid}:1` }); // unchanged: no write
      owner.setHostProcesses({ ...hp(2), mark: `${process.pid}:1` }); // within the interval: later
      assert.strictEqual(fs.readFileSync(file, 'utf8'), first);
      await waitFor('the deferred write', () => parseRecord(fs.readFileSync(file, 'utf8')).hostProcesses?.seen[0].pid === 2);
      await owner.dispose(0);
      assert.ok(fs.existsSync(file), 'the record stays past the teardown, for the watchdog to act on once this process is gone');
      owner.setHostProcesses(undefined);
      assert.ok(!fs.existsSync(file));
    } finally {
      watcher.close();
    }
  });
});
