/** Whose record is whose (src/proc/records/judge.ts), with a real process as another live owner. */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import { classifyRecords, processCore, RecordStore, selfIdentity } from '../../../src/proc';
import { TREE_ID_VARIABLE } from '../../../src/proc/platform/processTable';
import { tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { register, waitAllDead } from '../../support/started';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

describe('records by owner', () => {
  it("sorts records into our own, a live owner's, and one whose pid now belongs to a newer process", async () => {
    const dir = tmpDir();
    const store = new RecordStore(dir);
    const self = selfIdentity(table);
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    register(other.pid!);
    await waitFor('the other owner to run', () => table.read(other.pid!));
    const tree = {
      id: 't1',
      label: 'x',
      command: ['x'],
      rootPid: 1,
      pgid: 1,
      sid: 1,
      rootStartTime: 0,
      trackedAt: 0,
      envTag: `${TREE_ID_VARIABLE}=t1`,
      cgroup: null,
    };
    store.write(self, [tree]);
    store.write({ ...self, pid: other.pid!, startTicks: table.read(other.pid!)!.startKey }, [
      { ...tree, id: 't2', envTag: `${TREE_ID_VARIABLE}=t2` },
    ]);
    try {
      const sorted = classifyRecords(store, self, table);
      assert.deepStrictEqual(
        sorted.own.map((r) => r.record.owner.pid),
        [process.pid],
      );
      assert.deepStrictEqual(
        sorted.live.map((r) => r.record.owner.pid),
        [other.pid],
      );
      assert.deepStrictEqual(sorted.gone, []);
      // Our pid, but recorded by a process that started before us: that owner is gone.
      const earlierStore = new RecordStore(tmpDir());
      earlierStore.write({ ...self, startTicks: self.startTicks! - 100 }, [tree]);
      const earlier = classifyRecords(earlierStore, self, table);
      assert.deepStrictEqual(earlier.own, []);
      assert.deepStrictEqual(
        earlier.gone.map((r) => [r.record.owner.pid, r.state]),
        [[process.pid, 'replaced']],
      );
    } finally {
      other.kill('SIGKILL');
      await waitAllDead([other.pid!]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
