// The boot clock's "now" (`/proc/uptime`, read through a file kept open): each call reads the file afresh.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { readUptimeTicks } from '../../../src/proc/platform/bootClock';
import { tmpDir } from '../../support/repo';
import { sleep } from '../../support/wait';

describe('the boot clock', () => {
  it('reads /proc/uptime afresh at each call, through the one file it keeps open', async () => {
    const first = readUptimeTicks();
    await sleep(50);
    const second = readUptimeTicks();
    // Ticks are hundredths of a second: 50 ms is at least 4 of them.
    assert.ok(second - first >= 4, `uptime moved ${second - first} ticks in 50 ms`);
  });

  it('reads a file under another root afresh: one replaced since is what it reads', () => {
    const root = tmpDir();
    const file = path.join(root, 'uptime');
    fs.writeFileSync(file, '100.00 50.00\n');
    assert.strictEqual(readUptimeTicks(root), 10_000);
    fs.writeFileSync(`${file}.new`, '200.00 50.00\n');
    fs.renameSync(`${file}.new`, file);
    assert.strictEqual(readUptimeTicks(root), 20_000);
  });

  it('says which file it could not read', () => {
    const root = path.join(tmpDir(), 'no-proc');
    assert.throws(
      () => readUptimeTicks(root),
      (e: Error) => e.message === `cannot read ${root}/uptime`,
    );
  });
});
