/**
 * Terminal trees on real processes (src/proc/terminals): a shell in its own session with a setsid child, a
 * SIGHUP-ignoring child and a double-forked daemon; what it leaves when it gets SIGHUP as a closing terminal sends;
 * ending that, and ending everything under a live shell but the shell; and a wall-clock step between looks.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as path from 'path';
import {
  endLeftovers,
  endTerminalTree,
  liveOwnership,
  processCore,
  processKey,
  readShell,
  settleLeftovers,
  terminalLeftovers,
  TerminalQuery,
  WINDOW_TAG_VARIABLE,
} from '../../../src/proc';
import { resolveTerminalTrees } from '../../../src/proc/terminals/membership';
import { tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { clock } from '../../support/records';
import { alive, aliveOf, register, waitAllDead } from '../../support/started';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

/**
 * A shell in a session of its own (as a terminal's is), tagged with the window, that starts a setsid child, a
 * child that ignores SIGHUP, and a double-forked daemon, then waits.
 */
function startShell(pidfile: string, tag: string): number {
  const script = `
    echo "shell $$" >> "$1"
    setsid sh -c 'echo "setsid $$" >> "$1"; exec sleep 120' x "$1" &
    sh -c 'trap "" HUP; echo "nohup $$" >> "$1"; exec sleep 120' x "$1" &
    setsid -f sh -c 'echo "daemon $$" >> "$1"; exec sleep 120' x "$1"
    sleep 0.2
    echo "ready $$" >> "$1"
    exec sleep 120`;
  const child = spawn('bash', ['-c', script, 'shell', pidfile], {
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag },
  });
  child.unref();
  register(child.pid!);
  return child.pid!;
}

describe('terminal trees on real processes', function () {
  this.timeout(30_000);
  const tag = `test-window-${process.pid}`;

  it('finds the setsid child, the SIGHUP-ignoring child and the double-forked daemon under the shell; after SIGHUP, ends what it left and nothing else', async () => {
    const pidfile = path.join(tmpDir(), 'pids');
    const shellPid = startShell(pidfile, tag);
    const { roles, all } = await fixturePids(pidfile);
    const shell = readShell(shellPid, processCore().table)!;
    const query: TerminalQuery = { windowTags: [tag], shells: [shell], seen: {}, kept: [], editorRoot: undefined };
    const [m] = resolveTerminalTrees(table.snapshot(), query, { deps: processCore() });
    const daemon = roles.get('daemon')![0];
    for (const pid of all)
      assert.ok(
        m.members.some((p) => p.pid === pid),
        `${pid} (${[...roles].find(([, p]) => p.includes(pid))?.[0]}) is a member`,
      );
    assert.ok(m.unclaimed.includes(daemon), 'the daemon is found by the window tag alone');
    query.seen[shell.key] = m.members.filter((p) => p.pid !== shellPid).map(processKey);

    // The terminal closes: its shell gets SIGHUP.
    process.kill(shellPid, 'SIGHUP');
    const owners = liveOwnership([]);
    const left = await settleLeftovers(shell, (snap) => terminalLeftovers(snap, query, shell.key, { owners, deps: processCore() }), {
      table: processCore().table,
      quietMs: 200,
    });
    assert.ok(!alive(shellPid), 'the shell exited');
    assert.deepStrictEqual(left.map((p) => p.pid).sort(), [roles.get('setsid')![0], roles.get('nohup')![0], daemon].sort());

    const report = await endLeftovers(processCore().killer, { shell, left, graceMs: 2000 });
    assert.strictEqual(report.survivors, 0);
    assert.deepStrictEqual(await waitAllDead(all), []);
  });

  it('"End Everything Under This Terminal" ends every member but the shell, which keeps running', async () => {
    const pidfile = path.join(tmpDir(), 'pids');
    const shellPid = startShell(pidfile, tag);
    const { all } = await fixturePids(pidfile);
    const shell = readShell(shellPid, processCore().table)!;
    try {
      const report = await endTerminalTree(processCore().killer, {
        query: { windowTags: [tag], shells: [shell], seen: {}, kept: [], editorRoot: undefined },
        shellKey: shell.key,
        graceMs: 2000,
      });
      assert.strictEqual(report.survivors, 0);
      assert.deepStrictEqual(await waitAllDead(all.filter((p) => p !== shellPid)), []);
      assert.ok(alive(shellPid), 'the shell was spared');
      assert.strictEqual(readShell(shellPid, processCore().table)!.key, shell.key);
    } finally {
      process.kill(shellPid, 'SIGKILL');
      await waitAllDead([shellPid]);
    }
  });

  // A tagged daemon that a terminal's shell could not have started (it started before that shell) must not count
  // as that terminal's leftover when the clock steps forward between the shell's first look and the close: closing
  // that terminal ("end") would end a process of another terminal. Start order is compared in boot ticks, which no
  // clock step moves.
  it("a tagged daemon older than a terminal's shell is not that terminal's after the clock steps forward", async () => {
    const tag = 'a77ac0ffee000001';
    const daemon = spawn('sleep', ['60'], { detached: true, stdio: 'ignore', env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag } });
    register(daemon.pid!);
    const d = await waitFor('the daemon', () => table.read(daemon.pid!));
    // The terminal's shell starts at least one tick later than the daemon.
    await waitFor('a tick to pass', () => clock().nowTicks() > d.startKey + 2);
    const sh = spawn('sh', ['-c', 'sleep 60; :'], { detached: true, stdio: 'ignore' });
    register(sh.pid!);
    const shChild = await waitFor("the shell's child", () => table.snapshot().children().get(sh.pid!)?.[0]);
    register(shChild.pid);
    try {
      const seenBeforeStep = await waitFor('the shell', () => readShell(sh.pid!, table));
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
