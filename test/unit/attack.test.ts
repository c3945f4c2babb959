/**
 * Adversarial probes of the records, sweep, CLI and terminal-tree changes (issues 10, 12, 13), each on real
 * processes: what a probe broke is pinned here, so it stays fixed.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { CLI, tmpDir } from './helpers';
import { hasTool, runBounded } from './recordHelpers';

const node = process.execPath;
const isRoot = process.getuid?.() === 0;

describe('attack probes', () => {
  describe('an owner in a pid namespace that reads the host /proc (unshare -p without --mount-proc)', () => {
    before(function () {
      if (!isRoot || !hasTool('unshare')) this.skip();
    });

    // Probed: such an owner recorded its namespace pid, which a host sweep found "gone" and killed the live
    // tree; and its own timeout "ended 0 processes" and exited 124 with the whole tree still running.
    it('refuses to start a tree (one line, exit 2): it could neither be seen nor ended from there', async () => {
      const records = tmpDir();
      const marker = path.join(tmpDir(), 'started');
      const ran = await runBounded('unshare', [
        '-pf',
        'sh',
        '-c',
        `"${node}" "${CLI}" run --records "${records}" --timeout 2 -- sh -c 'touch "${marker}"; setsid sleep 60 & exec sleep 60'; echo "exit $?"; sleep 1`,
      ]);
      assert.strictEqual(ran.timedOut, false);
      assert.match(ran.stdout, /^exit 2$/m, ran.stdout + ran.stderr);
      assert.match(ran.stderr, /^agent-trees: .*another pid namespace.*\n$/);
      assert.strictEqual(fs.existsSync(marker), false, 'nothing was started');
      assert.deepStrictEqual(fs.readdirSync(records), [], 'nothing was recorded');
    });
  });
});
