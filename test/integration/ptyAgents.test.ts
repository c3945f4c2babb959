// Agents on a terminal of their own, in a real extension host, driven through a real terminal program
// (test/fixtures/ttyprobe.py) that reports what it sees: a tty on 0, 1 and 2, the foreground group, the size and
// every SIGWINCH, keys in cbreak mode, SIGINT from Ctrl-C, end of input from Ctrl-D, and 10,000 lines of output.
// Then ownership (kill, ending line = notification), terminals that do not pile up, pipes for MCP servers.
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { log } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, pidFile, shortKillGrace, testHooks } from './fixtures';
import { FIXTURE } from '../support/repo';
import { fixturePids } from '../support/fixtures';
import { aliveOf } from '../support/started';
import { events, ProbeEvent, PROBE, PYTHON } from '../support/ttyProbe';

function reportFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-tty-')), 'report');
}

async function event(file: string, match: (e: ProbeEvent) => boolean, what: string, timeoutMs = 10_000): Promise<ProbeEvent> {
  let found: ProbeEvent | undefined;
  await waitFor(
    () => `no ${what} in ${JSON.stringify(events(file))}`,
    () => (found = events(file).find(match)) !== undefined,
    timeoutMs,
  );
  return found!;
}

async function terminalOf(name: string): Promise<vscode.Terminal> {
  let t: vscode.Terminal | undefined;
  await waitFor(
    () => `terminal of ${name}`,
    () => (t = vscode.window.terminals.find((x) => x.name === `Agent: ${name}`)) !== undefined,
  );
  return t!;
}

describe('Agent Trees: agents on a terminal of their own', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;

  before(async () => {
    trees = await api();
    hooks = await testHooks();
  });
  shortKillGrace();

  it("sees a tty on 0, 1 and 2, leads the foreground group, gets the real size and VS Code's TERM", async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-report', command: PYTHON, args: [PROBE, file, 'wait'], timeoutSeconds: 0 });
    const start = await event(file, (e) => e.event === 'start', 'start');
    const state = hooks.terminalState(id)!;
    const tree = trees.list().find((t) => t.id === id)!;
    try {
      assert.deepStrictEqual(start.tty, [true, true, true]);
      assert.strictEqual(start.foreground, true, 'tcgetpgrp(0) == getpgrp()');
      assert.strictEqual(start.sid, start.pid, 'the agent leads its own session');
      assert.strictEqual(start.pgrp, tree.pgid, 'its group is the recorded one');
      assert.strictEqual(start.tag, id, 'the exact tag');
      assert.match(String(start.ttyname), /^\/dev\/pts\/\d+$/);
      assert.strictEqual(start.term, 'xterm-256color');
      assert.strictEqual(start.colorterm, 'truecolor');
      assert.strictEqual(state.io, 'pty');
      assert.ok(state.size && state.size.cols > 0 && state.size.rows > 0, `terminal size ${JSON.stringify(state.size)}`);
      const [cols, rows] = start.size as number[];
      assert.ok(cols > 0 && rows > 0, `the program sees ${cols}x${rows}`);
      // The panel may settle its layout after the start: then a SIGWINCH brought the final size.
      const last =
        events(file)
          .filter((e) => e.event === 'winch')
          .pop()?.size ?? start.size;
      await waitFor(
        () => `program size ${JSON.stringify(last)} vs terminal ${JSON.stringify(hooks.terminalState(id)!.size)}`,
        () => {
          const now = hooks.terminalState(id)!.size!;
          const seen = (events(file)
            .filter((e) => e.event === 'winch')
            .pop()?.size ?? start.size) as number[];
          return seen[0] === now.cols && seen[1] === now.rows;
        },
      );
    } finally {
      await trees.kill(id);
    }
  });

  it('passes one key without Enter to a cbreak program, Ctrl-C as SIGINT through the tty; the terminal says how it ended', async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-keys', command: PYTHON, args: [PROBE, file, 'cbreak'], timeoutSeconds: 0 });
    await event(file, (e) => e.event === 'cbreak', 'cbreak mode');
    const terminal = await terminalOf('tty-keys');
    terminal.sendText('a', false);
    await event(file, (e) => e.event === 'key' && e.key === 'a', 'the key a');
    terminal.sendText('\x1b[A', false); // arrow up, raw
    await event(file, (e) => e.event === 'key' && e.key === '[', 'an escape sequence');
    terminal.sendText('\x03', false);
    await event(file, (e) => e.event === 'sigint', 'SIGINT');
    assert.ok(!events(file).some((e) => e.event === 'key' && e.key === '\x03'), 'Ctrl-C is a signal, not a key, in cbreak mode');
    assert.strictEqual(trees.list().find((t) => t.id === id)?.state, 'running', 'SIGINT went to the program, not to a kill');
    terminal.sendText('q', false);
    await waitFor(
      () => `ending: ${hooks.terminalState(id)?.ending}`,
      () => hooks.terminalState(id)?.ending === 'exited with code 0',
      10_000,
    );
  });

  it('ends input for a line-mode reader on Ctrl-D', async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-lines', command: PYTHON, args: [PROBE, file, 'lines'], timeoutSeconds: 0 });
    await event(file, (e) => e.event === 'reading', 'reading');
    const terminal = await terminalOf('tty-lines');
    terminal.sendText('hello there', true);
    await event(file, (e) => e.event === 'line' && e.line === 'hello there', 'the line');
    terminal.sendText('\x04', false);
    await event(file, (e) => e.event === 'eof', 'end of input');
    await waitFor(
      'the terminal to say the agent exited with code 0',
      () => hooks.terminalState(id)?.ending === 'exited with code 0',
      10_000,
    );
  });

  it('passes a resize of the panel on as SIGWINCH with the new size', async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-resize', command: PYTHON, args: [PROBE, file, 'wait'], timeoutSeconds: 0 });
    await event(file, (e) => e.event === 'waiting', 'waiting');
    const terminal = await terminalOf('tty-resize');
    terminal.show(false);
    await waitFor('the terminal to report its size', () => hooks.terminalState(id)?.size !== null);
    const before = hooks.terminalState(id)!.size!;
    try {
      await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
      await waitFor(
        () => `the terminal kept ${JSON.stringify(before)}`,
        () => {
          const now = hooks.terminalState(id)!.size!;
          return now.rows !== before.rows || now.cols !== before.cols;
        },
      );
      const after = hooks.terminalState(id)!.size!;
      await event(
        file,
        (e) => e.event === 'winch' && (e.size as number[])[0] === after.cols && (e.size as number[])[1] === after.rows,
        `SIGWINCH with ${after.cols}x${after.rows}`,
      );
    } finally {
      await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
      await trees.kill(id);
    }
  });

  it('delivers 10,000 lines whole and in order, and the terminal acknowledges parsing all of it', async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-flood', command: PYTHON, args: [PROBE, file, 'flood', '10000'], timeoutSeconds: 0 });
    await event(file, (e) => e.event === 'flooded', 'flooded');
    await waitFor(
      () => `ending: ${hooks.terminalState(id)?.ending}`,
      () => hooks.terminalState(id)?.ending === 'exited with code 0',
      20_000,
    );
    const expected = Array.from({ length: 10_000 }, (_, i) => `line ${i}\r\n`).join('');
    const output = hooks.output(id)!;
    assert.strictEqual(output.length, expected.length, 'nothing lost, nothing added');
    assert.ok(output === expected, 'in order, unchanged (the tty turned \\n into \\r\\n, nothing else did)');
    const state = hooks.terminalState(id)!;
    assert.strictEqual(state.written, expected.length, 'all of it went to the terminal');
    await waitFor(
      () => `acknowledged ${hooks.terminalState(id)!.acked} of ${expected.length}`,
      () => hooks.terminalState(id)!.acked === expected.length,
      10_000,
    );
  });

  it('shows output written before its terminal opened when it opens', async () => {
    const id = await trees.launch({
      name: 'tty-later',
      command: 'sh',
      args: ['-c', 'echo early-bird; exec sleep 60'],
      showTerminal: false,
      timeoutSeconds: 0,
    });
    await waitFor('the early output', () => (hooks.output(id) ?? '').includes('early-bird'));
    assert.strictEqual(hooks.terminalState(id), undefined, 'no terminal was asked for');
    assert.ok(!vscode.window.terminals.some((t) => t.name === 'Agent: tty-later'));
    await vscode.commands.executeCommand('agentTrees.showTerminal', id);
    await terminalOf('tty-later');
    await waitFor('the backlog went to the terminal', () => (hooks.terminalState(id)?.written ?? 0) >= 'early-bird\r\n'.length);
    assert.strictEqual(hooks.terminalState(id)!.io, 'pty');
    await trees.kill(id);
  });

  it("kills a terminal agent with its helpers; the terminal's ending line and the notification agree", async () => {
    const pids = pidFile();
    const id = await trees.launch({ name: 'tty-kill', command: FIXTURE, args: ['setsid', pids], timeoutSeconds: 0 });
    const { all } = await fixturePids(pids);
    assert.strictEqual(hooks.terminalState(id)?.io, 'pty');
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', id);
    assert.strictEqual(result?.survivors, 0);
    await waitFor(
      () => `alive: ${aliveOf(all)}`,
      () => aliveOf(all).length === 0,
    );
    await waitFor('an ending line', () => hooks.terminalState(id)?.ending !== null);
    assert.strictEqual(hooks.terminalState(id)!.ending, `killed: ended ${result!.signalled} processes`);
  });

  it("closing a terminal agent's terminal ends its whole tree", async () => {
    const pids = pidFile();
    const id = await trees.launch({ name: 'tty-close', command: FIXTURE, args: ['deep', pids], timeoutSeconds: 0 });
    const { all } = await fixturePids(pids);
    (await terminalOf('tty-close')).dispose();
    await waitFor(
      () => `alive: ${aliveOf(all)}`,
      () => aliveOf(all).length === 0,
      10_000,
    );
    await waitFor('the run to show killed', () => trees.list().find((t) => t.id === id)?.state === 'killed');
  });

  it("reuses an ended run's terminal for the next run of the same agent", async () => {
    const before = hooks.terminalCount();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = await trees.launch({ name: 'tty-again', command: 'sleep', args: ['60'], timeoutSeconds: 0 });
      ids.push(id);
      await trees.kill(id);
      await waitFor('ended', () => hooks.terminalState(id)?.ending !== null && hooks.terminalState(id)?.ending !== undefined);
    }
    assert.strictEqual(vscode.window.terminals.filter((t) => t.name === 'Agent: tty-again').length, 1);
    // At most one more: older ended runs the view forgets meanwhile (it keeps 20) take their terminals along.
    assert.ok(hooks.terminalCount() <= before + 1, `${hooks.terminalCount()} agent terminals, ${before} before`);
    assert.strictEqual(hooks.terminalState(ids[3])!.ending, 'killed: ended 1 process');
  });

  it('does not pile up terminals: a forgotten run takes its terminal along', async function () {
    this.timeout(180_000);
    const kept = 20;
    for (let i = 0; i < kept + 15; i++) {
      const id = await trees.launch({ name: `tty-many-${i}`, command: 'sleep', args: ['60'], timeoutSeconds: 0 });
      await trees.kill(id);
    }
    // One more may stay: the terminal in front of the user is never closed under them.
    const open = () => vscode.window.terminals.filter((t) => t.name.startsWith('Agent: tty-many-'));
    await waitFor(
      () =>
        `open: ${open()
          .map((t) => t.name)
          .join(', ')}; active: ${vscode.window.activeTerminal?.name}; runs: ${trees
          .list()
          .map((t) => `${t.name}:${t.state}`)
          .join(', ')}`,
      () => open().length <= kept + 1,
      10_000,
    );
    log(
      `[pty] agent terminals open after ${kept + 15} runs: ${vscode.window.terminals.filter((t) => t.name.startsWith('Agent: tty-many-')).length}`,
    );
  });

  it('runs MCP servers and "terminal": "pipe" agents on pipes; names a bad "terminal" value', async () => {
    const file = reportFile();
    const id = await trees.launch({ name: 'tty-piped', command: PYTHON, args: [PROBE, file, 'wait'], terminal: 'pipe', timeoutSeconds: 0 });
    const start = await event(file, (e) => e.event === 'start', 'start');
    assert.deepStrictEqual(start.tty, [false, false, false]);
    assert.strictEqual(hooks.terminalState(id)!.io, 'pipe');
    await trees.kill(id);
    const mcp = await trees.launch({
      name: 'tty-mcp',
      command: PYTHON,
      args: [PROBE, reportFile(), 'wait'],
      kind: 'mcp',
      timeoutSeconds: 0,
    });
    assert.strictEqual(hooks.terminalState(mcp), undefined);
    await trees.kill(mcp);
    await assert.rejects(trees.launch({ name: 'bad', command: 'sleep', terminal: 'tty' } as never), /"terminal" must be "pty"/);
    await assert.rejects(
      trees.launch({ name: 'bad', command: 'sleep', showTerminal: 'no' } as never),
      /"showTerminal" must be true or false/,
    );
  });

  it('agent-trees run typed in a terminal of the window gives the agent a terminal of its own; Ctrl-C reaches only the agent', async () => {
    const file = reportFile();
    const terminal = vscode.window.createTerminal({ name: 'it-relay', shellPath: '/bin/bash', shellArgs: ['--norc', '--noprofile'] });
    try {
      terminal.show(false);
      terminal.sendText(`agent-trees run -- ${PYTHON} ${PROBE} ${file} wait; echo "relay-exit=$?" > ${file}.exit`, true);
      const start = await event(file, (e) => e.event === 'start', 'start', 20_000);
      assert.deepStrictEqual(start.tty, [true, true, true]);
      assert.strictEqual(start.foreground, true, 'tcgetpgrp(0) == getpgrp(): its own controlling terminal');
      assert.strictEqual(start.sid, start.pid);
      const size = start.size as number[];
      assert.ok(size[0] > 0 && size[1] > 0, `the terminal's size: ${size}`);
      await event(file, (e) => e.event === 'waiting', 'waiting');
      terminal.sendText('\x03', false);
      await event(file, (e) => e.event === 'sigint', 'SIGINT in the agent');
      terminal.sendText('q', true);
      // The shell creates the file at the redirection, before echo writes to it: wait for the whole line.
      const exitLine = () => (fs.existsSync(`${file}.exit`) ? fs.readFileSync(`${file}.exit`, 'utf8') : '');
      await waitFor('run ended with its agent', () => exitLine().endsWith('\n'), 10_000);
      assert.strictEqual(exitLine().trim(), 'relay-exit=0', "the agent's exit code, not an interrupted run's 130");
    } finally {
      terminal.dispose();
    }
  });

  it('ends a terminal agent at its timeout', async () => {
    const pids = pidFile();
    const id = await trees.launch({ name: 'tty-timeout', command: FIXTURE, args: ['ignore-term', pids], timeoutSeconds: 3 });
    const { all } = await fixturePids(pids);
    await waitFor('the run to show timed out', () => trees.list().find((t) => t.id === id)?.state === 'timed out', 15_000);
    await waitFor(
      () => `the tree to end; alive: ${aliveOf(all)}`,
      () => aliveOf(all).length === 0,
      10_000,
    );
    await waitFor(
      () => `ending: ${hooks.terminalState(id)?.ending}`,
      () => /^timed out after 3 s: ended [1-9]\d* processes$/.test(hooks.terminalState(id)?.ending ?? ''),
      10_000,
    );
    assert.ok(all.every((p) => !processes.isAlive(p)));
  });
});
