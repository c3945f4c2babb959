// `agent-trees run` typed in a terminal: run in a real outer terminal (a pseudo-terminal of the test's own), the
// CLI relays a terminal of the agent's own (src/cli/relay.ts).
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { CLI, FIXTURE, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { runCli } from '../../support/cli';
import { RESTORE_TERMINAL_MODES } from '../../../src/proc';
import { events, OuterTerminal, probeEvent, PROBE, PYTHON, reportFile } from '../../support/tty';

/**
 * A shell line in the outer terminal: `run` on the probe, then its exit code and the terminal's mode. With
 * `holdOpen` the shell then waits for a line (see `endHeldLine`) instead of exiting: node-pty drops what its
 * reader has not taken 200 ms after the shell exits, and a test that let output pile up may take longer than
 * that to read it on a loaded machine, losing the line's end.
 */
function inTerminal(runArgs: string, size = { cols: 100, rows: 30 }, cli = CLI, holdOpen = false): OuterTerminal {
  const line = `"${process.execPath}" "${cli}" run ${runArgs}; echo "exit=$?"; stty -a | tr -s ' \\n' ' '; echo; echo done${holdOpen ? '; read reply' : ''}`;
  return new OuterTerminal('/bin/sh', ['-c', line], size);
}

/** Ends a shell line started with `holdOpen`, once its output has been read: the line it waits for. */
async function endHeldLine(t: OuterTerminal): Promise<void> {
  let exited = false;
  void t.exited.then(() => (exited = true));
  t.pty.write('\n');
  await waitFor('the shell to exit', () => exited, SHELL_LINE_MS);
}

/**
 * How long a whole shell line may take: node starts the CLI, which runs its agent on a terminal of its own, then stty
 * and two echoes. Under a loaded machine's scheduling that can take a while; only a failure waits this long.
 */
const SHELL_LINE_MS = 30_000;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const modeAfter = (t: OuterTerminal) => t.output.slice(t.output.lastIndexOf('exit='));

describe('agent-trees run in a terminal', function () {
  this.timeout(30_000);

  it("gives the agent a terminal of its own: tty on 0, 1 and 2, foreground group, the caller's size; resizes pass on", async () => {
    const records = tmpDir();
    const file = reportFile();
    const t = inTerminal(`--records "${records}" -- ${PYTHON} ${PROBE} ${file} cbreak`, { cols: 101, rows: 33 });
    const start = await probeEvent(file, (e) => e.event === 'start', 'start');
    assert.deepStrictEqual(start.tty, [true, true, true]);
    assert.strictEqual(start.foreground, true, 'tcgetpgrp(0) == getpgrp(): the controlling terminal is its own');
    assert.strictEqual(start.sid, start.pid);
    assert.deepStrictEqual(start.size, [101, 33]);
    assert.strictEqual(start.term, 'xterm-256color', "the caller's TERM");
    register(start.pid as number);
    await probeEvent(file, (e) => e.event === 'cbreak', 'cbreak');
    t.pty.resize(120, 40);
    const winch = await probeEvent(file, (e) => e.event === 'winch', 'SIGWINCH');
    assert.deepStrictEqual(winch.size, [120, 40]);
    t.pty.write('x');
    await probeEvent(file, (e) => e.event === 'key' && e.key === 'x', 'a key without Enter');
    t.pty.write('q');
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    assert.match(modeAfter(t), /exit=0/);
    assert.match(modeAfter(t), / icanon /, 'line mode restored');
    assert.match(modeAfter(t), / echo /, 'echo restored');
    assert.match(modeAfter(t), / opost /, 'output processing restored');
    assert.deepStrictEqual(fs.readdirSync(records), [], 'no record left');
  });

  it('sends Ctrl-C to the agent only: it is interrupted, run is not', async () => {
    const records = tmpDir();
    const file = reportFile();
    const t = inTerminal(`--records "${records}" -- ${PYTHON} ${PROBE} ${file} cbreak`);
    await probeEvent(file, (e) => e.event === 'cbreak', 'cbreak');
    register(events(file)[0].pid as number);
    t.pty.write('\x03');
    await probeEvent(file, (e) => e.event === 'sigint', 'SIGINT in the agent');
    t.pty.write('q');
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    assert.match(modeAfter(t), /exit=0/, "run exited with the agent's code, not 130");
  });

  it("passes output through unchanged: no \\r added to what the agent's terminal already turned into \\r\\n", async () => {
    const records = tmpDir();
    const t = inTerminal(`--records "${records}" -- printf 'a\\nb\\033[1mc\\n'`);
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    assert.ok(t.output.startsWith('a\r\nb\x1b[1mc\r\n'), JSON.stringify(t.output.slice(0, 40)));
  });

  for (const [how, runArgs, code] of [
    ['a timeout', '--timeout 1 --grace 0.3', 124],
    ['SIGTERM to run', '--grace 0.3', 143],
  ] as const) {
    it(`restores the caller's terminal and ends the whole tree on ${how}`, async () => {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const t = inTerminal(`${runArgs} --records "${records}" -- ${FIXTURE} daemon ${pidfile}`);
      const pids = await fixturePids(pidfile);
      if (code === 143) {
        const runPid = await waitFor('run in the record', () =>
          fs
            .readdirSync(records)
            .map((f) => parseInt(f, 10))
            .find((n) => n > 0),
        );
        process.kill(runPid, 'SIGTERM');
      }
      await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
      assert.match(modeAfter(t), new RegExp(`exit=${code}`));
      assert.match(modeAfter(t), / icanon .* echo /);
      assert.match(
        t.output,
        // At the start of a line, or right after the modes the relay restored (the agent left the cursor there).
        new RegExp(
          `(^|\r\n|${escapeRegExp(RESTORE_TERMINAL_MODES)})agent-trees: warning: (timed out after 1 s|terminated): ended \\d+ processes\r\n`,
        ),
        'printed after the terminal was restored',
      );
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });
  }

  for (const how of ['a timeout', 'SIGTERM to run'] as const) {
    it(`ends the whole tree on ${how} while the caller's terminal has stopped reading (its writes would block)`, async function () {
      // Longer than its waits together, so that on a loaded machine a slow step fails with its own message.
      this.timeout(5 * 10_000 + 2 * SHELL_LINE_MS);
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pid');
      // An agent that floods its terminal, and a helper that outlives it unless the tree is ended.
      const runArgs = `${how === 'a timeout' ? '--timeout 2 ' : ''}--grace 0.3 --records "${records}" -- sh -c 'sleep 371 & echo $! > ${pidfile}; exec yes'`;
      const t = inTerminal(runArgs, undefined, CLI, true);
      const helper = Number(await waitFor('the helper', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(helper);
      const runPid = await waitFor('run in the record', () =>
        fs
          .readdirSync(records)
          .map((f) => parseInt(f, 10))
          .find((n) => n > 0),
      );
      register(runPid);
      await t.waitOutput(/(y\r\n){100}/, 'the flood');
      // The terminal stops reading (an ssh stall, scroll lock): the kernel's buffer fills up.
      (t.pty as unknown as { pause(): void }).pause();
      try {
        if (how === 'SIGTERM to run') process.kill(runPid, 'SIGTERM');
        assert.deepStrictEqual(await waitAllDead([helper], 10_000), [], 'the tree ended while the terminal read nothing');
        assert.deepStrictEqual(await waitAllDead([runPid], 10_000), [], 'run exited while the terminal read nothing');
        assert.deepStrictEqual(fs.readdirSync(records), [], 'no record left');
      } finally {
        (t.pty as unknown as { resume(): void }).resume();
      }
      try {
        // What the stalled terminal holds comes first: on a loaded machine that takes a while.
        await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
        assert.match(modeAfter(t), new RegExp(`exit=${how === 'a timeout' ? 124 : 143}`));
        assert.match(modeAfter(t), / icanon .* echo /, "the caller's terminal restored");
      } finally {
        await endHeldLine(t);
      }
    });
  }

  it('an agent killed from outside (the view) leaves no keyboard protocol or hidden cursor on, and run says how it ended', async () => {
    const records = tmpDir();
    const dir = tmpDir();
    const pidfile = path.join(dir, 'pid');
    // A full-screen agent's set-up (kitty's keyboard protocol, cursor hidden), then killed before it can undo it.
    const agent = path.join(dir, 'agent.sh');
    fs.writeFileSync(agent, `printf '\\033[>1u\\033[?25lagent up'; echo $$ > ${pidfile}; exec sleep 60\n`);
    const t = inTerminal(`--grace 0.3 --records "${records}" -- sh ${agent}`);
    const pid = Number(await waitFor('the agent', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
    register(pid);
    await t.waitOutput(/agent up/, "the agent's set-up");
    process.kill(pid, 'SIGKILL');
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    const after = t.output.slice(t.output.indexOf('agent up'));
    assert.ok(after.includes(RESTORE_TERMINAL_MODES), `modes restored after the agent's output: ${JSON.stringify(after.slice(0, 200))}`);
    assert.ok(RESTORE_TERMINAL_MODES.includes('\x1b[<99u') && RESTORE_TERMINAL_MODES.includes('\x1b[?25h'));
    assert.match(after, /\r\nagent-trees: sh was ended by SIGKILL\r\n/);
    assert.match(modeAfter(t), /exit=137/);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it('as a background job (run ... &) leaves the terminal alone and passes it on, as before', async () => {
    const records = tmpDir();
    const file = reportFile();
    // Job control on: the background job gets a process group of its own, not the terminal's foreground.
    const line = `set -m; "${process.execPath}" "${CLI}" run --records "${records}" -- ${PYTHON} ${PROBE} ${file} flood 3 & wait $!; echo "exit=$?"; stty -a | tr -s ' \\n' ' '; echo; echo done`;
    const t = new OuterTerminal('/bin/bash', ['-c', line]);
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    const start = events(file)[0];
    assert.deepStrictEqual(start.tty, [true, true, true], "the terminal's own file descriptors");
    assert.match(String(start.foreground), /Inappropriate ioctl/, 'no terminal of its own: the old behaviour');
    assert.match(modeAfter(t), /exit=0/, 'not stopped for touching the terminal');
    assert.match(modeAfter(t), / icanon .* echo /);
  });

  it('keeps pipes when its stdin is not a terminal', async () => {
    const records = tmpDir();
    const file = reportFile();
    const r = await runCli(['run', '--records', records, '--', PYTHON, PROBE, file, 'flood', '3']);
    assert.strictEqual(r.code, 0, r.stderr);
    assert.strictEqual(r.stdout, 'line 0\nline 1\nline 2\n');
    const start = events(file)[0];
    assert.deepStrictEqual(start.tty, [false, false, false]);
  });

  it('without @lydell/node-pty: says why, and passes its terminal on as before', async () => {
    const bare = tmpDir();
    fs.copyFileSync(CLI, path.join(bare, 'cli.js'));
    const records = tmpDir();
    const file = reportFile();
    const t = inTerminal(`--records "${records}" -- ${PYTHON} ${PROBE} ${file} wait`, undefined, path.join(bare, 'cli.js'));
    const start = await probeEvent(file, (e) => e.event === 'start', 'start');
    register(start.pid as number);
    await t.waitOutput(
      /cannot load @lydell\/node-pty \(linux-\w+\): Cannot find module '@lydell\/node-pty'.*gets this terminal without being its controlling terminal/,
      'the reason',
    );
    assert.deepStrictEqual(start.tty, [true, true, true]);
    assert.match(String(start.foreground), /Inappropriate ioctl|False|false/, 'no controlling terminal: the old behaviour');
    t.pty.write('q\r');
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    assert.match(modeAfter(t), /exit=0/);
  });

  it("a pty tree whose run was SIGKILLed is swept: the terminal's hangup does not stop the sweep finding its daemon", async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    // No watchdog: it would end the tree within 2 s of the SIGKILL itself; this is the sweep's case.
    const t = inTerminal(`--records "${records}" --no-cgroup --no-watchdog -- ${FIXTURE} daemon ${pidfile}`);
    const pids = await fixturePids(pidfile);
    const runPid = await waitFor('run in the record', () =>
      fs
        .readdirSync(records)
        .map((f) => parseInt(f, 10))
        .find((n) => n > 0),
    );
    process.kill(runPid, 'SIGKILL');
    await t.waitOutput(/done/, 'the shell line to finish', SHELL_LINE_MS);
    const daemon = pids.roles.get('daemon')!;
    assert.strictEqual(aliveOf(daemon).length, 1, 'the daemon outlived its owner and the hangup');
    const swept = await runCli(['sweep', '--records', records, '--json', '--grace', '1']);
    assert.strictEqual(swept.code, 0, swept.stderr);
    assert.strictEqual(JSON.parse(swept.stdout).trees[0].outcome, 'killed');
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});
