/**
 * Adversarial probes of the records, sweep, CLI and terminal-tree changes (issues 10, 12, 13), each on real
 * processes: what a probe broke is pinned here, so it stays fixed.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { liveOwnership, processCore, readShell, terminalLeftovers, WINDOW_TAG_VARIABLE } from '../../src/proc';
import { aliveOf, CLI, register, tmpDir, waitFor } from '../support/started';
import { hasTool, processTable, runBounded } from '../support/records';

const node = process.execPath;
const readNowTicks = () => Math.floor(parseFloat(fs.readFileSync('/proc/uptime', 'latin1')) * 100);
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

  describe('terminal trees across a wall-clock step', () => {
    // Probed: a tagged daemon that a terminal's shell could not have started (it started before that shell) was
    // counted as that terminal's leftover once the clock stepped forward between the shell's first look and the
    // close, so closing that terminal ("end") would end a process of another terminal. Start order is compared
    // in boot ticks, which no clock step moves.
    it("a tagged daemon older than a terminal's shell is not that terminal's after the clock steps forward", async () => {
      const tag = 'a77ac0ffee000001';
      const daemon = spawn('sleep', ['60'], { detached: true, stdio: 'ignore', env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag } });
      register(daemon.pid!);
      const table = processTable();
      const d = await waitFor('the daemon', () => table.read(daemon.pid!));
      // The terminal's shell starts at least one tick later than the daemon.
      await waitFor('a tick to pass', () => readNowTicks() > d.startKey + 2);
      const sh = spawn('sh', ['-c', 'sleep 60; :'], { detached: true, stdio: 'ignore' });
      register(sh.pid!);
      const shChild = await waitFor("the shell's child", () => processTable().snapshot().children().get(sh.pid!)?.[0]);
      register(shChild.pid);
      try {
        const seenBeforeStep = await waitFor('the shell', () => readShell(sh.pid!, processTable()));
        // Read before a +1 h step: every later snapshot puts start times an hour later than this one did.
        const shell = {
          ...seenBeforeStep,
          startTime: seenBeforeStep.startTime - 3_600_000,
          trackedAt: seenBeforeStep.trackedAt - 3_600_000,
        };
        const query = { windowTags: [tag], shells: [shell], seen: {}, kept: [] };
        const left = terminalLeftovers(table.snapshot(), query, shell.key, { owners: liveOwnership([]), deps: processCore() });
        assert.ok(
          !left.some((p) => p.pid === daemon.pid),
          `the daemon ${daemon.pid} started before the shell: it is not this terminal's (left: ${left.map((p) => p.pid)})`,
        );
      } finally {
        process.kill(-sh.pid!, 'SIGKILL');
        daemon.kill('SIGKILL');
        await waitFor('all gone', () => aliveOf([sh.pid!, shChild.pid, daemon.pid!]).length === 0);
      }
    });
  });

  describe('a records folder that passes every check but takes no files (fixed on main by recordsDir.ts)', () => {
    // Probed: `--records /proc` (root's, mode 555) logged "cannot write the owned-trees record" and ran the tree
    // unrecorded, exit 0: nothing could sweep it after a crash.
    it('run refuses with one line and exit 2, and starts nothing', async () => {
      const marker = path.join(tmpDir(), 'started');
      const ran = await runBounded(node, [CLI, 'run', '--records', '/proc', '--', 'sh', '-c', `touch "${marker}"`]);
      assert.strictEqual(ran.code, 2, ran.stderr);
      assert.match(ran.stderr, /^agent-trees: records folder \/proc is not writable: [^\n]*\n$/);
      assert.strictEqual(fs.existsSync(marker), false, 'nothing was started');
    });
  });
});
