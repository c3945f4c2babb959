/**
 * Agent runs on real processes (src/agents/runs.ts): what a launch runs, deadlines, endings and input, on pipes
 * and on a pseudo-terminal.
 */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { commandLineDefinition, resolveDefinition } from '../../../src/agents/resolveDefinition';
import { AgentRuns, Clock, RunSettings } from '../../../src/agents/runs';
import { processCore, PtyRoot, RecordStore, SpawnError, TreeOwner } from '../../../src/proc';
import { FIXTURE, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { probeEvent, PROBE, PYTHON, reportFile } from '../../support/tty';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

describe('what a launch runs, on real processes', () => {
  const marker = path.join(os.tmpdir(), `agent-trees-launch-pwn-${process.pid}`);
  const env = { HOLDS_SHELL: `$(touch ${marker})\`touch ${marker}\``, EMPTY: '' };
  const context = { workspaceFolders: ['/ws/one', '/ws/two'], userHome: '/home/u', env };

  it('a $(...) value passed as an argument runs no shell when launched', async () => {
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), () => ({
      defaultTimeoutSeconds: 0,
      killGraceSeconds: 0.3,
      killDescendantsOnExit: true,
    }));
    const def = resolveDefinition({ name: 'echo', command: 'echo', args: ['${env:HOLDS_SHELL}'], terminal: 'pipe' }, context).definition;
    const run = runs.launch(def);
    register(run.tree.child.pid!);
    try {
      await waitFor('the echo to end', () => !run.live);
      assert.match(run.output.text(), /\$\(touch /);
      assert.strictEqual(fs.existsSync(marker), false, 'nothing was run by a shell');
    } finally {
      await runs.owner.dispose(300);
    }
  });

  describe('a cwd that is no folder: a clear error, nothing spawned', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'a-file');
    const fifo = path.join(dir, 'a-fifo');
    before(() => {
      fs.writeFileSync(file, '');
      execFileSync('mkfifo', [fifo]);
    });
    const cases: [string, () => string, RegExp][] = [
      ['missing', () => path.join(dir, 'missing'), /working folder .*missing does not exist/],
      ['a file', () => file, /working folder .*a-file is not a folder/],
      ['a FIFO', () => fifo, /working folder .*a-fifo is not a folder/],
      ['empty after expansion (${env:EMPTY})', () => '${env:EMPTY}', /working folder .*empty/],
    ];
    for (const [title, cwdOf, message] of cases) {
      it(title, () => {
        const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
        const runs = new AgentRuns(owner, () => ({ defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true }));
        const started = path.join(dir, `started-${title.length}`);
        const resolved = resolveDefinition(
          { name: 'x', command: '/bin/sh', args: ['-c', `touch ${started}`], cwd: cwdOf(), terminal: 'pipe' },
          { workspaceFolders: [dir], userHome: dir, env },
        );
        assert.throws(
          () => runs.launch(resolved.definition, { defaultCwd: resolved.defaultCwd }),
          (e: Error) => e instanceof SpawnError && message.test(e.message),
        );
        assert.strictEqual(owner.list().length, 0, 'nothing owned');
        assert.strictEqual(fs.existsSync(started), false, 'nothing ran');
      });
    }
  });

  it('typed command lines (POSIX): quotes and backslashes reach the shell unchanged', () => {
    const line = `  printf '%s|' "a b" 'c\\d' e\\ f "\\$HOME" '$(x)'  `;
    const def = commandLineDefinition(line, 'linux', {});
    assert.deepStrictEqual(def, { name: 'printf', command: '/bin/sh', args: ['-c', line.trim()] });
    assert.strictEqual(execFileSync(def.command, def.args!, { encoding: 'utf8' }), 'a b|c\\d|e f|$HOME|$(x)|');
  });
});

/** A clock the test moves by hand: its timers fire only in advance(), in the order they are due. */
class ManualClock implements Clock {
  private time = Date.now();
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;
  now(): number {
    return this.time;
  }
  schedule(fn: () => void, ms: number): number {
    this.timers.set(this.nextId, { at: this.time + ms, fn });
    return this.nextId++;
  }
  cancel(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at);
  }
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = [...this.timers].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
    }
    this.time = until;
  }
}

describe('agent runs on pipes (real processes)', () => {
  const settings: RunSettings = { defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true };
  const newRuns = (s = settings) => new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), () => s);

  it('kills the whole tree at the deadline and says so', async () => {
    const runs = newRuns();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = runs.launch({ name: 'slow', command: FIXTURE, args: ['daemon', pidfile], timeoutSeconds: 0.5, terminal: 'pipe' });
    register(run.tree.child.pid!);
    const pids = await fixturePids(pidfile);
    assert.ok(run.deadline && run.deadline > Date.now());
    await waitFor('timeout', () => !run.live, 8000);
    assert.strictEqual(run.state, 'timed out');
    assert.match(run.endingText(), /^timed out after 0.5 s: ended [1-9]\d* processes$/);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.strictEqual(run.deadline, undefined);
  });

  it('extends a deadline: nothing happens at the old one, the tree ends at the new one', async () => {
    const clock = new ManualClock();
    const runs = new AgentRuns(
      new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }),
      () => settings,
      undefined,
      clock,
    );
    const run = runs.launch({ name: 'sleeper', command: 'sleep', args: ['30'], timeoutSeconds: 0.4, terminal: 'pipe' });
    register(run.tree.child.pid!);
    const before = run.deadline!;
    assert.strictEqual(before, clock.now() + 400);
    runs.extend(run.id, 60);
    assert.strictEqual(run.deadline, before + 60_000);
    assert.deepStrictEqual(clock.pending(), [before + 60_000], 'one check, at the new deadline');
    clock.advance(700);
    assert.strictEqual(run.state, 'running', 'not killed at the old deadline');
    assert.strictEqual(run.live, true);
    clock.advance(60_000);
    assert.strictEqual(run.state, 'timed out', 'killed at the new deadline');
    await waitFor('ended', () => !run.live, 8000);
    assert.strictEqual(run.deadline, undefined);
  });

  it('on exit, ends what the agent left running, keeps its output and says how it ended', async () => {
    const runs = newRuns();
    const run = runs.launch({
      name: 'leaver',
      command: 'sh',
      args: ['-c', 'sleep 30 & echo hello; echo bye >&2; exit 3'],
      terminal: 'pipe',
    });
    register(run.tree.child.pid!);
    await waitFor('ended', () => !run.live, 8000);
    assert.strictEqual(run.state, 'exited');
    assert.strictEqual(run.exitCode, 3);
    assert.match(run.output.text(), /hello\n/);
    assert.match(run.output.text(), /bye\n/);
    assert.strictEqual(run.endingText(), 'exited with code 3; ended 1 process it left running');
  });

  it('sends typed input to the agent and interrupts its group on Ctrl-C', async () => {
    const runs = newRuns();
    const run = runs.launch({
      name: 'cat',
      command: 'sh',
      args: ['-c', 'trap "echo got-INT; exit 130" INT; while read line; do echo "you said $line"; done'],
      terminal: 'pipe',
    });
    register(run.tree.child.pid!);
    run.write('hi\n');
    await waitFor('echo', () => run.output.text().includes('you said hi'));
    assert.strictEqual(runs.interrupt(run.id), true);
    await waitFor('interrupted', () => !run.live, 8000);
    assert.match(run.output.text(), /got-INT/);
  });

  it("ends a run past its process limit, the default's or its own, and says which limit in its ending line", async () => {
    const runs = newRuns({ ...settings, limits: { maxProcesses: 2 } });
    const finished: string[] = [];
    runs.on('finished', (r: { endingText(): string }) => finished.push(r.endingText()));
    const run = runs.launch({ name: 'forks', command: 'sh', args: ['-c', 'sleep 30 & sleep 30 & wait'], terminal: 'pipe' });
    register(run.tree.child.pid!);
    await waitFor('ended', () => run.finished, 15_000);
    assert.strictEqual(run.state, 'over limit');
    assert.deepStrictEqual(run.breach, { kind: 'processes', limit: 2, count: 3 });
    assert.strictEqual(run.endingText(), 'process limit 2 exceeded (3): ended 3 processes');
    assert.deepStrictEqual(finished, [run.endingText()], 'told once, with that line');
    // Its own 0 turns the default off.
    const own = runs.launch({ name: 'no-limit', command: 'sleep', args: ['30'], terminal: 'pipe', maxProcesses: 0 });
    register(own.tree.child.pid!);
    assert.strictEqual(own.tree.record.limits, undefined);
    await runs.kill(own.id);
  });

  it('keeps a run whose input and output go on from its idle timeout, and ends it once they stop', async () => {
    const runs = newRuns();
    const run = runs.launch({ name: 'cat', command: 'cat', terminal: 'pipe', idleTimeoutSeconds: 2 });
    register(run.tree.child.pid!);
    const started = performance.now();
    // A line each quarter second for three idle timeouts: bytes through its stdio, however little CPU cat uses. It
    // may end only after a gap of 2 s between two lines (a machine that stalls this process makes one).
    let last = started;
    let widestGap = 0;
    while (performance.now() - started < 6000) {
      run.write('line\n');
      await new Promise((r) => setTimeout(r, 250));
      widestGap = Math.max(widestGap, performance.now() - last);
      last = performance.now();
      assert.ok(run.state === 'running' || widestGap >= 2000, `ended as "${run.endingText()}" with lines at most ${widestGap} ms apart`);
    }
    await waitFor('ended as idle', () => run.finished, 15_000);
    assert.strictEqual(run.endingText(), 'idle for 2 s: ended 1 process');
  });
});
describe('agent runs on a terminal (real processes)', () => {
  const settings = { defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true };
  const all: AgentRuns[] = [];
  const newRuns = () => {
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' }), () => settings);
    all.push(runs);
    return runs;
  };
  afterEach(async () => {
    for (const runs of all.splice(0)) {
      runs.dispose();
      await runs.owner.dispose(300);
    }
  });

  it('puts agents on a terminal by default, MCP servers on pipes, and follows "terminal"', async () => {
    const runs = newRuns();
    const agent = runs.launch({ name: 'a', command: 'sleep', args: ['30'] }, { size: { cols: 90, rows: 20 } });
    const mcp = runs.launch({ name: 'm', command: 'sleep', args: ['30'], kind: 'mcp' });
    const piped = runs.launch({ name: 'p', command: 'sleep', args: ['30'], terminal: 'pipe' });
    const ptyMcp = runs.launch({ name: 'q', command: 'sleep', args: ['30'], kind: 'mcp', terminal: 'pty' });
    for (const r of [agent, mcp, piped, ptyMcp]) register(r.tree.record.rootPid);
    assert.deepStrictEqual([agent.io, mcp.io, piped.io, ptyMcp.io], ['pty', 'pipe', 'pipe', 'pty']);
    assert.ok(agent.pty instanceof PtyRoot);
    assert.deepStrictEqual([agent.pty!.cols, agent.pty!.rows], [90, 20]);
    assert.strictEqual(mcp.pty, undefined);
  });

  it('sets TERM and COLORTERM as VS Code does, unless the definition says otherwise', async () => {
    const runs = newRuns();
    const file = reportFile();
    const run = runs.launch({ name: 't', command: PYTHON, args: [PROBE, file, 'wait'], env: { COLORTERM: 'no' } });
    register(run.tree.record.rootPid);
    const start = await probeEvent(file, (e) => e.event === 'start', 'start');
    assert.deepStrictEqual([start.term, start.colorterm], ['xterm-256color', 'no']);
  });

  it('tells the ending once, after the kill reported, with the count the kill reported', async () => {
    const runs = newRuns();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = runs.launch({ name: 'k', command: FIXTURE, args: ['setsid', pidfile] });
    register(run.tree.record.rootPid);
    const pids = await fixturePids(pidfile);
    const told: string[] = [];
    runs.on('finished', (r) => r === run && told.push(r.endingText()));
    // A kill and the leftover kill that the root's exit starts join: one report, counted once.
    const report = await runs.kill(run.id);
    await waitFor('told', () => told.length > 0);
    assert.ok(report.signalled >= 2);
    assert.deepStrictEqual(told, [`killed: ended ${report.signalled} processes`]);
    assert.strictEqual(run.processesEnded, report.signalled);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('says how an agent that exited ended, with what it left running, once', async () => {
    const runs = newRuns();
    const flag = path.join(tmpDir(), 'left');
    // The child is in a session of its own before the root exits (else the root's exit hangs it up, as in any terminal).
    const script = `setsid sh -c 'echo $$ > "$0"; exec sleep 30' "${flag}" & while [ ! -s "${flag}" ]; do :; done; echo hello; exit 3`;
    const run = runs.launch({ name: 'leaver', command: 'sh', args: ['-c', script] });
    register(run.tree.record.rootPid);
    const told: string[] = [];
    runs.on('finished', (r) => r === run && told.push(r.endingText()));
    await waitFor('finished', () => run.finished && told.length > 0, 8000);
    register(Number(fs.readFileSync(flag, 'utf8')));
    assert.deepStrictEqual(told, ['exited with code 3; ended 1 process it left running']);
    assert.match(run.output.text(), /^hello\r\n/, "output unchanged but for the tty's own \\r\\n");
  });

  it('interrupts a terminal run through its tty, and forgets only finished runs when pruning', async () => {
    const runs = newRuns();
    const file = reportFile();
    const run = runs.launch({ name: 'i', command: PYTHON, args: [PROBE, file, 'wait'] });
    register(run.tree.record.rootPid);
    await probeEvent(file, (e) => e.event === 'waiting', 'waiting');
    assert.strictEqual(runs.interrupt(run.id), true);
    await probeEvent(file, (e) => e.event === 'sigint', 'SIGINT');
    const pruned: string[] = [];
    runs.on('pruned', (r) => pruned.push(r.id));
    runs.prune(0);
    assert.deepStrictEqual(pruned, [], 'a live run stays');
    run.write('q\r');
    await waitFor('finished', () => run.finished, 8000);
    runs.prune(0);
    assert.deepStrictEqual(pruned, [run.id]);
    assert.strictEqual(runs.get(run.id), undefined);
    assert.deepStrictEqual(aliveOf([run.tree.record.rootPid]), []);
  });

  it('keeps a pty tree recorded until its last member is gone, and leaves no record after', async () => {
    const runs = newRuns();
    const run = runs.launch({ name: 'r', command: 'sleep', args: ['30'] });
    register(run.tree.record.rootPid);
    const store = new RecordStore(runs.owner.store.dir);
    assert.ok(store.read(process.pid)!.trees.some((t) => t.id === run.id));
    await runs.kill(run.id);
    await waitFor('record gone', () => !fs.existsSync(store.fileOf(process.pid)));
    assert.strictEqual(table.read(run.tree.record.rootPid), undefined);
  });
});
