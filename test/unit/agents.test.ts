import * as assert from 'assert';
import * as path from 'path';
import { expandVariables, validateDefinition, validateDefinitions } from '../../src/agents/definition';
import { chooseDefinitions } from '../../src/agents/definitionSource';
import { AgentRuns, Clock, RunSettings } from '../../src/agents/runs';
import { processCore, TreeMembersSource, TreeOwner } from '../../src/proc';
import { MemberTracker, refreshMembers } from '../../src/proc/tracking/memberTracker';
import { FIXTURE, fixturePids, REPO, register, tmpDir, waitAllDead, waitFor, aliveOf } from './helpers';

describe('agent definitions', () => {
  it('names the entry and the field that is wrong, and keeps the good entries', () => {
    const { agents, errors } = validateDefinitions([
      { name: 'good', command: 'claude', args: ['--print'], timeoutSeconds: 60, kind: 'agent' },
      { name: 'bad-timeout', command: 'x', timeoutSeconds: -1 },
      { command: 'no-name' },
      { name: 'bad-args', command: 'x', args: 'not an array' },
      { name: 'bad-kind', command: 'x', kind: 'daemon' },
      { name: 'typo', command: 'x', timeout: 5 },
      { name: 'good', command: 'duplicate' },
      'not an object',
    ]);
    assert.deepStrictEqual(agents.map((a) => a.name), ['good']);
    assert.deepStrictEqual(errors.map((e) => e.message), [
      'agentTrees.agents[1] ("bad-timeout"): "timeoutSeconds" must be a number of seconds, 0 or more (0 = no timeout)',
      'agentTrees.agents[2]: "name" must be a non-empty string',
      'agentTrees.agents[3] ("bad-args"): "args" must be an array of strings',
      'agentTrees.agents[4] ("bad-kind"): "kind" must be "agent" or "mcp"',
      'agentTrees.agents[5] ("typo"): "timeout" is not a known field (known: name, command, args, cwd, env, timeoutSeconds, kind, terminal, showTerminal, maxMemoryMB, maxProcesses, idleTimeoutSeconds)',
      'agentTrees.agents[6] ("good"): "name" is used by an earlier entry',
      'agentTrees.agents[7]: "(entry)" must be an object with at least "name" and "command"',
    ]);
    assert.throws(() => validateDefinition({ name: 'e', command: 'x', env: { A: 1 } }, 'arg'), /"env.A" must be a string/);
    assert.match(validateDefinitions({}).errors[0].message, /must be an array/);
  });
});

describe('variables in agent definitions', () => {
  it('expands ${workspaceFolder}, ${userHome} and ${env:NAME}, and leaves unknown ones', () => {
    const def = expandVariables(
      { name: 'a', command: '${userHome}/bin/agent', args: ['${workspaceFolder}/x', '${env:TOKEN}', '${unknown}'], cwd: '${workspaceFolder}', env: { P: '${env:TOKEN}-1' } },
      { workspaceFolder: '/ws', userHome: '/home/me', env: { TOKEN: 't' } },
    );
    assert.deepStrictEqual(def, { name: 'a', command: '/home/me/bin/agent', args: ['/ws/x', 't', '${unknown}'], cwd: '/ws', env: { P: 't-1' } });
    assert.strictEqual(expandVariables({ name: 'b', command: '${workspaceFolder}/a' }, { userHome: '/h', env: {} }).command, '${workspaceFolder}/a');
  });
});

describe('where agent definitions come from (workspace trust)', () => {
  const user = [{ name: 'u', command: 'user-cli' }];
  const workspace = [{ name: 'w', command: 'repo-cli' }];
  const folder = [{ name: 'f', command: 'folder-cli' }];
  const cases: { title: string; inspected: Parameters<typeof chooseDefinitions>[0]; trusted: boolean; value: unknown; source: string; ignored: boolean }[] = [
    { title: 'trusted: the workspace wins over the user', inspected: { defaultValue: [], globalValue: user, workspaceValue: workspace }, trusted: true, value: workspace, source: 'workspace', ignored: false },
    { title: 'trusted: a folder wins over the workspace', inspected: { globalValue: user, workspaceValue: workspace, workspaceFolderValue: folder }, trusted: true, value: folder, source: 'workspace', ignored: false },
    { title: 'untrusted: the user value, the workspace one left out', inspected: { defaultValue: [], globalValue: user, workspaceValue: workspace }, trusted: false, value: user, source: 'user', ignored: true },
    { title: 'untrusted: a folder value left out too', inspected: { globalValue: user, workspaceFolderValue: folder }, trusted: false, value: user, source: 'user', ignored: true },
    { title: 'untrusted, no user value: the default, never the workspace', inspected: { defaultValue: [], workspaceValue: workspace }, trusted: false, value: [], source: 'default', ignored: true },
    { title: 'untrusted, nothing from the workspace', inspected: { defaultValue: [], globalValue: user }, trusted: false, value: user, source: 'user', ignored: false },
    { title: 'nothing set at all', inspected: undefined, trusted: true, value: undefined, source: 'default', ignored: false },
  ];
  for (const c of cases) {
    it(c.title, () => {
      assert.deepStrictEqual(chooseDefinitions(c.inspected, c.trusted), { value: c.value, source: c.source, ignoredWorkspaceValue: c.ignored });
    });
  }
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
    const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), () => settings, undefined, clock);
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
    const run = runs.launch({ name: 'leaver', command: 'sh', args: ['-c', 'sleep 30 & echo hello; echo bye >&2; exit 3'], terminal: 'pipe' });
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
    const run = runs.launch({ name: 'cat', command: 'sh', args: ['-c', 'trap "echo got-INT; exit 130" INT; while read line; do echo "you said $line"; done'], terminal: 'pipe' });
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

describe('memberships off the main thread', () => {
  it('gives the same members in the worker as on this thread', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['setsid', pidfile], stdio: 'ignore' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    const query = [{ ...tree.record, continuouslyOwned: true, cgroupVerified: false }];
    const local = new TreeMembersSource(processCore());
    const worker = new TreeMembersSource(processCore(), { workerScript: path.join(REPO, 'out', 'src', 'proc', 'tracking', 'snapshotWorker.js'), workerThreshold: -1 }); // always the worker
    try {
      const [a, b] = [await local.query(query), await worker.query(query)];
      assert.strictEqual(worker.lastInWorker, true);
      assert.strictEqual(local.lastInWorker, false);
      const pidsOf = (r: typeof a) => r.trees[0].members.map((m) => m.pid).sort();
      assert.deepStrictEqual(pidsOf(a), [...pids.all].sort());
      assert.deepStrictEqual(pidsOf(b), pidsOf(a));
      assert.ok(b.trees[0].members.every((m) => m.command.length > 0));
    } finally {
      worker.dispose();
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});

describe('memberships of cgroup trees', () => {
  it('reads only the cgroup, and finds what a full resolution finds', async function () {
    if (!processCore().cgroupTier('auto').tier) this.skip();
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({ command: FIXTURE, args: ['daemon-scrubbed', pidfile], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    const pids = await fixturePids(pidfile);
    try {
      assert.strictEqual(tree.tier, 'cgroup');
      const trees = [{ ...tree.record, continuouslyOwned: true, cgroupVerified: true }];
      const fast = refreshMembers(processCore().table, new MemberTracker(processCore()).next(trees), processCore());
      assert.ok(fast.processCount < 10, 'no full scan');
      const full = owner.members(tree.record.id).map((p) => p.pid).sort();
      assert.deepStrictEqual(fast.trees[0].members.map((m) => m.pid).sort(), full);
      assert.deepStrictEqual(full, [...pids.all].sort(), 'the scrubbed daemon too');
    } finally {
      await owner.dispose(300);
    }
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});

describe('killing one process and its children', () => {
  it('ends the subtree and leaves the rest of the tree running', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    // root (sleep, after exec) -> middle sh -> two sleeps
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sh -c "sleep 30 & sleep 30" & exec sleep 30'], stdio: 'ignore' });
    register(tree.child.pid!);
    const root = tree.record.rootPid;
    const members = await waitFor('four members', () => {
      const m = owner.members(tree.record.id);
      return m.length === 4 && m.filter((p) => p.ppid !== root && p.pid !== root).length === 2 ? m : undefined;
    });
    for (const m of members) register(m.pid);
    const middle = members.find((p) => p.ppid === root)!;
    const report = await owner.killProcess(middle.pid, middle.startKey, 300);
    assert.strictEqual(report.signalled, 3, 'the middle shell and its two children');
    assert.deepStrictEqual(await waitAllDead(members.filter((p) => p.pid !== root).map((p) => p.pid)), []);
    assert.strictEqual(aliveOf([root]).length, 1, 'the root lives on');
    const stale = await owner.killProcess(root, processCore().table.read(root)!.startKey + 99999, 300);
    assert.strictEqual(stale.signalled, 0, 'a pid whose start time does not match is not touched');
    assert.strictEqual(aliveOf([root]).length, 1);
    await owner.dispose(300);
    assert.deepStrictEqual(await waitAllDead([root]), []);
  });
});
