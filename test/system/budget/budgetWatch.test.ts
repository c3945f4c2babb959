/**
 * Budgets on real processes: a tree past its memory, process or idle limit is ended by its owner's budget watch
 * (src/proc/budget/), where the kernel can hold a line it does (src/proc/cgroup/treeLimits.ts), and the ending says
 * which limit. Each tree here is ended as the front ends end one: on the owner's `limit` event.
 */
import * as assert from 'assert';
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { KillReport, listOwnedTrees, OwnedTree, processCore, RecordStore, TreeOwner } from '../../../src/proc';
import { sameProcess } from '../../../src/proc/identity/ownerIdentity';
import { BudgetWatch } from '../../../src/proc/budget/budgetWatch';
import { Breach, breachText } from '../../../src/proc/budget/limits';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { COMMAND_SETTLES_MS, ProcessTable } from '../../../src/proc/platform/processTable';
import { KeptCgroupActivity } from '../../../src/proc/cgroup/cgroupActivity';
import { TreeLimits } from '../../../src/proc/records/schema';
import { OwnerSpawnOptions } from '../../../src/proc/owner/treeOwner';
import { deadPid, identity, nowTicks, sweep } from '../../support/records';
import { REPO, tmpDir } from '../../support/repo';
import { register } from '../../support/started';
import { fixturePids } from '../../support/fixtures';
import { sleep, waitFor } from '../../support/wait';
import { requireCgroupTier, requireEnvironment, requireRoot, skipBecause } from '../../support/environment';

const table = processCore().table;

/** Allocates 10 MB (written, so resident) every 100 ms: about 100 MB/s, for ever. */
const ALLOCATOR = 'import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(b"x") * (10 * 1024 * 1024))\n    time.sleep(0.1)\n';
const SAMPLER = path.join(REPO, 'test', 'fixtures', 'countSampler.py');

interface Ended {
  tree: OwnedTree;
  breach: Breach;
  report: KillReport;
  /** ms from the spawn until the owner saw the tree past its limit. */
  seenAfterMs: number;
}

/** Spawns a tree with limits and ends it as `endPastLimit` does. */
async function runPastLimit(owner: TreeOwner, options: OwnerSpawnOptions): Promise<Ended> {
  const tree = owner.spawn({ stdio: 'ignore', ...options });
  register(tree.child.pid!);
  return endPastLimit(owner, tree);
}

/**
 * As the front ends do, kills a tree when its owner says it went past a limit; resolves once it has ended (no
 * member left, no longer recorded).
 */
async function endPastLimit(owner: TreeOwner, tree: OwnedTree): Promise<Ended> {
  const started = Date.now();
  let breach: Breach | undefined;
  let seenAfterMs = 0;
  let kill: Promise<KillReport> | undefined;
  owner.on('limit', (t: OwnedTree, b: Breach) => {
    if (t !== tree) return;
    breach = b;
    seenAfterMs = Date.now() - started;
    kill = owner.kill(t.record.id, 500);
  });
  await waitFor('the tree to go past its limit', () => breach, 30_000);
  const report = await kill!;
  await waitFor('the tree to end', () => !owner.get(tree.record.id), 15_000);
  return { tree, breach: breach!, report, seenAfterMs };
}

/** Whether the kernel holds a process line for this owner's trees (cgroup/treeLimits.ts): a tree is spawned to see. */
async function kernelHoldsProcesses(owner: TreeOwner): Promise<boolean> {
  const tree = owner.spawn({ command: 'sleep', args: ['0'], stdio: 'ignore', limits: { maxProcesses: 50 } });
  register(tree.child.pid!);
  const { cgroup, pidsCgroup } = tree.record;
  const holds = pidsCgroup !== undefined || (cgroup !== null && fs.existsSync(path.join(cgroup, 'pids.max')));
  await waitFor('the probe tree to end', () => !owner.get(tree.record.id));
  return holds;
}

/**
 * Starts a loop tree under `limits` with the count sampler on its cgroup (or session) from before it forks: the
 * root waits for a line on stdin, which it gets once the sampler has counted once. `stop()` resolves with the
 * largest count the sampler saw and how many samples it took.
 */
async function sampledLoop(owner: TreeOwner, loop: string, cgroups: 'auto' | 'off') {
  const tree = owner.spawn({
    command: 'sh',
    args: ['-c', `read go; exec bash -c '${loop}'`],
    stdio: ['pipe', 'ignore', 'ignore'],
    limits: { maxProcesses: 50 },
  });
  register(tree.child.pid!);
  const stopFile = path.join(tmpDir(), 'stop');
  const [mode, arg] = cgroups === 'auto' ? ['cgroup', tree.record.cgroup ?? tree.record.pidsCgroup!] : ['session', String(tree.record.sid)];
  const sampler = spawn('python3', [SAMPLER, mode, arg, stopFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  register(sampler.pid!);
  let out = '';
  sampler.stdout!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => sampler.on('exit', () => resolve()));
  await waitFor('the sampler to count once', () => out.startsWith('ready\n'));
  tree.child.stdin!.end('go\n');
  return {
    tree,
    async stop() {
      fs.writeFileSync(stopFile, '');
      await exited;
      const [peak, samples] = out.slice('ready\n'.length).trim().split(' ').map(Number);
      return { peak, samples };
    },
  };
}

const owners: TreeOwner[] = [];
function newOwner(cgroups: 'auto' | 'off'): TreeOwner {
  const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
  owners.push(owner);
  return owner;
}

describe('budgets: a tree past a limit is ended (real processes)', function () {
  this.timeout(60_000);
  afterEach(async () => {
    await Promise.all(owners.splice(0).map((o) => o.dispose(0)));
  });

  for (const cgroups of ['off', 'auto'] as const) {
    it(`ends a tree allocating about 100 MB/s at its 300 MB memory limit and says how far past it was (cgroups ${cgroups})`, async () => {
      const owner = newOwner(cgroups);
      const { breach, report, tree, seenAfterMs } = await runPastLimit(owner, {
        command: 'python3',
        args: ['-c', ALLOCATOR],
        limits: { maxMemoryMB: 300 },
      });
      assert.strictEqual(breach.kind, 'memory');
      if (breach.kind !== 'memory') return;
      assert.strictEqual(breach.limitMB, 300);
      assert.ok(breach.bytes > 300 * 1024 * 1024, `seen at ${breach.bytes} bytes, past the limit`);
      assert.match(breachText(breach), /^memory limit 300 MB exceeded \(\d+ MB\)$/);
      assert.ok(report.signalled >= 1, 'the allocator was ended');
      assert.strictEqual(report.survivors, 0);
      assert.strictEqual(table.read(tree.record.rootPid), undefined, 'nothing of the tree is left');
      console.log(`      ${breachText(breach)}, seen ${seenAfterMs} ms after the spawn`);
    });
  }

  it('keeps a fork loop under maxProcesses 50 below twice the limit where the kernel holds pids.max, and ends it', async function () {
    const owner = newOwner('auto');
    // Without the kernel's line this loop would fill the machine: only where it holds.
    requireEnvironment(
      this,
      await kernelHoldsProcesses(owner),
      "the kernel's process line (pids.max: cgroup v2, a systemd scope, or cgroup v1 as root)",
    );
    const loop = await sampledLoop(owner, 'while :; do sleep 1000 & done', 'auto');
    const ended = await endPastLimit(owner, loop.tree);
    const { peak, samples } = await loop.stop();
    assert.strictEqual(ended.breach.kind, 'processes');
    if (ended.breach.kind !== 'processes') return;
    assert.ok(ended.breach.count > 50, `seen at ${ended.breach.count}`);
    assert.ok(samples > 1, `sampled ${samples} times`);
    assert.ok(peak <= 100, `never more than twice the limit alive: the sampler saw at most ${peak}`);
    assert.strictEqual(ended.report.survivors, 0);
    const { cgroup, pidsCgroup } = loop.tree.record;
    for (const dir of [cgroup, pidsCgroup]) if (dir) await waitFor(`${dir} to go`, () => !fs.existsSync(dir));
    console.log(`      ${breachText(ended.breach)}: ended ${ended.report.signalled}; at most ${peak} alive over ${samples} samples`);
  });

  it('holds a fork loop of about 20 a second under twice maxProcesses 50 with the watch alone (cgroups off), and ends it', async () => {
    const owner = newOwner('off');
    const loop = await sampledLoop(owner, 'while :; do sleep 1000 & sleep 0.05; done', 'off');
    const ended = await endPastLimit(owner, loop.tree);
    const { peak, samples } = await loop.stop();
    assert.strictEqual(ended.breach.kind, 'processes');
    assert.ok(samples > 1, `sampled ${samples} times`);
    assert.ok(peak <= 100, `never more than twice the limit alive: the sampler saw at most ${peak}`);
    assert.strictEqual(ended.report.survivors, 0);
    console.log(`      ${breachText(ended.breach)}: at most ${peak} alive over ${samples} samples`);
  });

  it('contains and ends a fast fork loop under maxProcesses 50 with the watch alone (cgroups off), leaving nothing', async () => {
    const owner = newOwner('off');
    // Bounded (600 sleeps at most) so that no failure here can fill the machine: the watch alone is no line.
    const loop = await sampledLoop(owner, 'for i in $(seq 600); do sleep 1000 & done; wait', 'off');
    const ended = await endPastLimit(owner, loop.tree);
    const { peak } = await loop.stop();
    assert.strictEqual(ended.breach.kind, 'processes');
    assert.strictEqual(ended.report.survivors, 0);
    const left = [...table.snapshot().processes.values()].filter((p) => p.sid === loop.tree.record.sid);
    assert.deepStrictEqual(left, [], 'nothing of the loop is left');
    console.log(`      ${breachText(ended.breach)}: at most ${peak} alive (the watch alone cannot hold a loop this fast)`);
  });

  it('ends a sleep under a 3 s idle timeout after about 3 s, as idle', async () => {
    const owner = newOwner('off');
    const ended = await runPastLimit(owner, { command: 'sleep', args: ['100'], limits: { idleTimeoutSeconds: 3 } });
    assert.deepStrictEqual(ended.breach, { kind: 'idle', seconds: 3 });
    assert.strictEqual(breachText(ended.breach), 'idle for 3 s');
    assert.strictEqual(ended.report.signalled, 1);
    console.log(`      idle for 3 s: seen ${ended.seenAfterMs} ms after the spawn`);
  });

  it('never ends a busy loop under a 3 s idle timeout', async () => {
    const owner = newOwner('off');
    let breach: Breach | undefined;
    owner.on('limit', (_t: OwnedTree, b: Breach) => (breach = b));
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'while :; do :; done'], stdio: 'ignore', limits: { idleTimeoutSeconds: 3 } });
    register(tree.child.pid!);
    const started = performance.now();
    // Three idle timeouts of watching, however slowly the machine lets the watch look.
    await waitFor('three idle timeouts to pass', () => performance.now() - started > 9000 && owner.budgetUse(tree.record.id), 30_000);
    assert.strictEqual(breach, undefined, `ended as ${breach && breachText(breach)}`);
    assert.ok(owner.budgetUse(tree.record.id)!.idleSeconds! < 3);
    await owner.kill(tree.record.id, 0);
  });

  it('never ends as idle a process that writes a line a second, though each uses less CPU than a clock tick', async () => {
    const owner = newOwner('off');
    let breach: Breach | undefined;
    owner.on('limit', (_t: OwnedTree, b: Breach) => (breach = b));
    // Its output goes nowhere the owner sees (as an `agent-trees run` whose stdio is inherited): only CPU time tells.
    const writer = '$| = 1; for (1 .. 7) { print "working\\n"; sleep 1 }';
    const tree = owner.spawn({ command: 'perl', args: ['-e', writer], stdio: 'ignore', limits: { idleTimeoutSeconds: 2 } });
    register(tree.child.pid!);
    await waitFor('the writer to finish its 7 lines', () => tree.rootExit, 30_000);
    assert.strictEqual(breach, undefined, `ended as ${breach && breachText(breach)}`);
    await owner.kill(tree.record.id, 0);
  });

  it("counts a member that left its tree's cgroup", async function () {
    const owner = newOwner('auto');
    // Moving a process between cgroups needs root.
    requireRoot(this, 'to move a member out of its cgroup');
    const tier = requireCgroupTier(this, 'directory');
    const elsewhere = path.join(tier.base, `elsewhere-${process.pid}`);
    fs.mkdirSync(elsewhere);
    try {
      // Four members, one of which moves itself out of the tree's cgroup before the first look.
      const script = `sh -c 'echo $$ > ${elsewhere}/cgroup.procs; exec sleep 1000' & sleep 1000 & sleep 1000 & wait`;
      const ended = await runPastLimit(owner, { command: 'sh', args: ['-c', script], limits: { maxProcesses: 3 } });
      assert.deepStrictEqual(ended.breach, { kind: 'processes', limit: 3, count: 4 });
      assert.strictEqual(ended.report.survivors, 0);
    } finally {
      await owner.dispose(0);
      await waitFor('the moved member to be gone', () => fs.readFileSync(path.join(elsewhere, 'cgroup.procs'), 'utf8') === '');
      fs.rmdirSync(elsewhere);
    }
  });

  it('says what it reads and costs nothing for a tree without limits', async () => {
    const owner = newOwner('off');
    const tree = owner.spawn({ command: 'sleep', args: ['100'], stdio: 'ignore' });
    register(tree.child.pid!);
    assert.strictEqual(tree.record.limits, undefined);
    await new Promise((r) => setTimeout(r, 300));
    assert.strictEqual(owner.budgetUse(tree.record.id), undefined, 'never looked at');
    await owner.kill(tree.record.id, 0);
  });
});

/**
 * Python that waits for `signals` with `sigwait`, then runs `then` (its body, indented by 4, `sig` the signal). Not a
 * handler: a Python handler that forks misses a later signal now and then (13 of 60 members missed their second or
 * third SIGUSR1 here, with nothing pending and the handler installed); sigwait missed none.
 */
function onSignals(setup: string, signals: string[], then: string): string {
  const set = `{${signals.map((s) => `signal.${s}`).join(', ')}}`;
  return (
    `import os, signal, sys, time\n${setup}` +
    `signal.pthread_sigmask(signal.SIG_BLOCK, ${set})\nprint("ready", flush=True)\n` +
    `while True:\n    sig = signal.sigwait(${set})\n${then}`
  );
}

/** A member that forks a child (sleeping) at each SIGUSR1, as a tree grows between two looks. */
const FORKER = onSignals('', ['SIGUSR1'], '    if os.fork() == 0:\n        time.sleep(1000)\n        os._exit(0)\n');

describe('the budget watch between births: each look reads the members it knows while none of them had a child', function () {
  this.timeout(30_000);
  let owner: TreeOwner;
  let watch: BudgetWatch | undefined;
  beforeEach(() => {
    owner = newOwner('off');
  });
  afterEach(async () => {
    watch?.dispose();
    watch = undefined;
    await owner.dispose(0);
  });

  /** A tree of one forking member, owned without limits (its owner does not look); `fork()` adds a child and waits for it. */
  async function forkingTree() {
    const tree = owner.spawn({ command: 'python3', args: ['-c', FORKER], stdio: ['ignore', 'pipe', 'ignore'] });
    register(tree.child.pid!);
    await new Promise((r) => tree.child.stdout!.once('data', r));
    const pid = tree.child.pid!;
    const children = () => fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
    return {
      tree,
      children,
      async fork() {
        const before = children().length;
        process.kill(pid, 'SIGUSR1');
        await waitFor('the member to fork', () => children().length > before).catch((e: Error) => {
          const status = fs.readFileSync(`/proc/${pid}/status`, 'latin1').split('\n');
          throw new Error(`${e.message}; the member: ${status.filter((l) => /^(State|Sig|Shd)/.test(l)).join(', ')}`);
        });
        for (const child of children()) register(child);
      },
    };
  }

  function watchOf(tree: OwnedTree, t: ProcessTable, clock: () => number) {
    const core = processCore();
    const w = new BudgetWatch({ table: t, deps: core, onBreach: () => {}, now: clock });
    w.watch(owner.queryOf(tree.record.id)!, { maxProcesses: 100 });
    return w;
  }

  it('counts a child born since the last look at the next look, with no resolve due (the newest pid moved)', async () => {
    const { tree, fork } = await forkingTree();
    watch = watchOf(tree, table, () => 0); // a clock that stands still: no resolve ever falls due by time
    watch.look();
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 1);
    await fork();
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 2, 'the newborn counted at once');
    await fork();
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 3);
  });

  it('reads one stat per member while the newest pid stands still, drops one that died, and resolves again within 30 s', async () => {
    const { tree, fork, children } = await forkingTree();
    await fork();
    await fork();
    await sleep(COMMAND_SETTLES_MS); // a member younger than that is resolved at each look (it may exec)
    // A table whose newest pid never moves: every look but the resolves is one between births. Without run stamps,
    // as for members that run (a member that did not run since the last look is not read at all: see below).
    const still = Object.assign(
      Object.create(table) as LinuxProcessTable,
      {
        newestPid: () => 7,
        runStamp: undefined,
      } as Partial<LinuxProcessTable>,
    );
    let clock = 0;
    watch = watchOf(tree, still, () => clock);
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 3);
    let reads = still.reads;
    watch.look();
    assert.strictEqual(still.reads - reads, 3, 'one stat for each of the 3 members, nothing else');
    const [first] = children();
    process.kill(first, 'SIGKILL');
    await waitFor('the child to die', () => table.read(first) === undefined);
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 2, 'the dead member is no longer counted');
    // A birth the newest pid does not tell (root can move pid allocation back) counts at the next resolve.
    await fork();
    clock += 29_000;
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 2, 'between births as far as this table can tell');
    clock += 1_000;
    reads = still.reads;
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 3, 'resolved by the member rules 30 s after the last resolve');
    assert.ok(still.reads - reads > 3, 'the resolve walked the members');
  });

  it("reads the parents of processes born elsewhere since the last look, not the members' children; its own newborn resolves", async () => {
    const { tree, fork } = await forkingTree();
    await fork();
    await sleep(COMMAND_SETTLES_MS);
    const real = table as LinuxProcessTable;
    let newest = real.newestPid()!;
    let parentReads = 0;
    let walks = 0;
    const counted = Object.assign(
      Object.create(table) as LinuxProcessTable,
      {
        runStamp: undefined, // as for members that run
        newestPid: () => newest,
        parentOf: (pid: number) => (parentReads++, real.parentOf(pid)),
        snapshotOf: (...a: Parameters<LinuxProcessTable['snapshotOf']>) => (walks++, real.snapshotOf(...a)),
        snapshotOfNewcomers: (...a: Parameters<LinuxProcessTable['snapshotOfNewcomers']>) => (walks++, real.snapshotOfNewcomers(...a)),
      } as Partial<LinuxProcessTable>,
    );
    watch = watchOf(tree, counted, () => 0);
    watch.look();
    watch.look();
    assert.strictEqual(watch.use(tree.record.id)?.processes, 2);
    // Three processes born elsewhere (children of this test, no member's), and any other the machine had since the
    // newest pid the watch last saw.
    const from = newest;
    const others = [0, 1, 2].map(() => spawn('sleep', ['100'], { stdio: 'ignore' }));
    others.forEach((c) => register(c.pid!));
    newest = real.newestPid()!;
    assert.ok(newest - from >= 3 && newest - from <= 16, `births between the looks: ${newest - from}`);
    [parentReads, walks] = [0, 0];
    watch.look();
    assert.strictEqual(walks, 0, 'no walk, no resolve');
    assert.strictEqual(parentReads, newest - from, 'one parent read for each pid handed out since');
    assert.strictEqual(watch.use(tree.record.id)?.processes, 2);
    // A child of a member among the newborns: resolved at once.
    await fork();
    newest = real.newestPid()!;
    watch.look();
    assert.ok(walks > 0, 'resolved by the rules');
    assert.strictEqual(watch.use(tree.record.id)?.processes, 3, 'the newborn counted at the next look');
    // Once the newborn is settled, more births than are worth checking one by one: resolved.
    await sleep(COMMAND_SETTLES_MS);
    newest = real.newestPid()!;
    watch.look(); // resolves once more: the newborn was young at the last resolve
    walks = 0;
    watch.look();
    assert.strictEqual(walks, 0, 'settled, and no birth: no walk');
    newest += 17;
    walks = 0;
    watch.look();
    assert.ok(walks > 0, 'resolved past 16 births');
    others.forEach((c) => c.kill('SIGKILL'));
  });

  it("counts at the next look a child of a member's spared watchdog (a walk from the members meets it; its parent is no member)", async () => {
    // The member forks a process that is what a watchdog is (its own session, AGENT_TREES_WATCHDOG naming the
    // member, alive): spared, no member. Its child carries the tree's tag: a member, born to no member.
    const script = onSignals(
      'me = os.getpid()\nstart = open(f"/proc/{me}/stat").read().rsplit(")", 1)[1].split()[19]\n',
      ['SIGUSR1'],
      '    if os.fork() == 0:\n' +
        '        os.setsid()\n' +
        '        env = dict(os.environ, AGENT_TREES_WATCHDOG=f"{me}:{start}")\n' +
        `        os.execve(sys.executable, [sys.executable, "-c", ${JSON.stringify(FORKER)}], env)\n`,
    );
    const tree = owner.spawn({ command: 'python3', args: ['-c', script], stdio: ['ignore', 'pipe', 'ignore'] });
    register(tree.child.pid!);
    let out = '';
    tree.child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor('the member', () => out.includes('ready\n'));
    const pid = tree.child.pid!;
    const childrenOf = (p: number) => fs.readFileSync(`/proc/${p}/task/${p}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
    watch = watchOf(tree, table, () => 0); // a clock that stands still: no census nor resolve falls due by time
    watch.look();
    process.kill(pid, 'SIGUSR1');
    await waitFor('the watchdog', () => out.split('ready\n').length > 2);
    const [dog] = childrenOf(pid);
    register(dog);
    try {
      watch.look();
      watch.look();
      assert.strictEqual(watch.use(tree.record.id)?.processes, 1, 'the watchdog spared');
      process.kill(dog, 'SIGUSR1');
      await waitFor("the watchdog's child", () => childrenOf(dog).length > 0);
      childrenOf(dog).forEach((c) => register(c));
      watch.look();
      assert.strictEqual(watch.use(tree.record.id)?.processes, 2, "the watchdog's child counted at the next look");
    } finally {
      process.kill(-dog, 'SIGKILL'); // its own session and group: the tree's kill spares it
    }
  });

  it('finds a member that left the parent chain (a setsid daemon) by the census 10 s after the last, births since or not', async () => {
    // The member double-forks at SIGUSR1: the middle process exits at once, the daemon (a session of its own,
    // re-parented away from the tree) prints its pid and sleeps. Only a census (a full scan) can find it.
    const daemonizer = onSignals(
      '',
      ['SIGUSR1'],
      '    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n' +
        '            print(os.getpid(), flush=True)\n            time.sleep(1000)\n        os._exit(0)\n',
    );
    const tree = owner.spawn({ command: 'python3', args: ['-c', daemonizer], stdio: ['ignore', 'pipe', 'ignore'] });
    register(tree.child.pid!);
    let out = '';
    tree.child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor('the member to start', () => out.startsWith('ready\n'));
    // The newest pid moves when this test says a process was born, and only then: the machine's other births
    // would make every look resolve.
    let newest = 1;
    const counted = Object.assign(Object.create(table) as LinuxProcessTable, { newestPid: () => newest });
    let clock = 0;
    watch = watchOf(tree, counted, () => clock);
    watch.look(); // the first look scans every process
    assert.strictEqual(watch.use(tree.record.id)?.processes, 1);
    process.kill(tree.child.pid!, 'SIGUSR1');
    await waitFor('the daemon', () => /^ready\n\d+\n/.test(out));
    const daemonPid = Number(out.split('\n')[1]);
    register(daemonPid);
    newest = 2;
    const seen: number[] = [];
    for (clock = 1000; clock <= 10_000; clock += 1000) {
      watch.look();
      seen.push(watch.use(tree.record.id)!.processes);
    }
    assert.strictEqual(seen[seen.length - 1], 2, `the daemon counted by the census due 10 s after the last (counts by look: ${seen})`);
  });
});

/**
 * A tree of one member that maps 128 MB it never touches and sleeps, and `write(mb)`: the test writes into that
 * memory through /proc/<pid>/mem (as a process sharing it, khugepaged or a debugger might make it resident), so the
 * member's RSS grows while it does not run. `close()` once done.
 */
async function quietMemberWithMemory(owner: TreeOwner, settleMs: number) {
  const mapper =
    'import ctypes, mmap, time\nm = mmap.mmap(-1, 128 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n' +
    'print(ctypes.addressof(ctypes.c_char.from_buffer(m)), flush=True)\ntime.sleep(1000)\n';
  const tree = owner.spawn({ command: 'python3', args: ['-c', mapper], stdio: ['ignore', 'pipe', 'ignore'] });
  register(tree.child.pid!);
  const address = Number(await new Promise<string>((r) => tree.child.stdout!.once('data', (d: Buffer) => r(d.toString()))));
  await sleep(settleMs);
  const mem = fs.openSync(`/proc/${tree.child.pid}/mem`, 'r+');
  let written = 0;
  return {
    tree,
    write(mb: number) {
      const chunk = Buffer.alloc(1 << 20, 1);
      for (const end = written + mb; written < end; written++) fs.writeSync(mem, chunk, 0, chunk.length, address + written * chunk.length);
    },
    close: () => fs.closeSync(mem),
  };
}

/** Near its limit (80 % of 70 MB), a tree's members are read at every look: 30 MB more written ends it at the next. */
function assertEndedAtNextLookNearLimit(near: { w: BudgetWatch; breaches: Breach[] }, tree: OwnedTree, write: (mb: number) => void) {
  for (let i = 0; i < 3; i++) near.w.look();
  assert.ok(near.w.use(tree.record.id)!.memory.bytes >= 56 * 1024 * 1024, 'the tree is near its limit');
  write(30);
  near.w.look();
  assert.strictEqual(near.breaches[0]?.kind, 'memory', 'past its limit at the next look');
}

/** A member that forks a sleeping child at SIGUSR1 and takes 50 MB more (written, so resident) at SIGUSR2. */
const FORKER_GROWER = onSignals(
  'chunks = []\n',
  ['SIGUSR1', 'SIGUSR2'],
  '    if sig == signal.SIGUSR2:\n        chunks.append(bytearray(b"x") * (50 * 1024 * 1024))\n' +
    '    elif os.fork() == 0:\n        time.sleep(1000)\n        os._exit(0)\n',
);

describe('the budget watch on a tree in its own cgroup: a look at a quiet tree reads its cgroup, not its members', function () {
  this.timeout(30_000);
  let owner: TreeOwner;
  let watch: BudgetWatch | undefined;
  beforeEach(function () {
    requireCgroupTier(this);
    owner = newOwner('auto');
  });
  afterEach(async () => {
    watch?.dispose();
    watch = undefined;
    await Promise.all(owners.splice(0).map((o) => o.dispose(0)));
  });

  /** A table whose newest pid stands still: only the cgroup can tell this watch that something changed. */
  const still = () => Object.assign(Object.create(table) as LinuxProcessTable, { newestPid: () => 7 });

  /**
   * A watch counting its cgroup reads, with a clock that stands still unless one is given (no resolve ever falls
   * due by time then), and the breaches it saw.
   */
  function watchOf(tree: OwnedTree, t: ProcessTable, limits: TreeLimits = { maxProcesses: 100 }, now = () => 0) {
    const kept = new KeptCgroupActivity();
    const counted = {
      reads: 0,
      read: (dir: string) => (counted.reads++, kept.read(dir)),
      forget: (dir: string) => kept.forget(dir),
      close: () => kept.close(),
    };
    const breaches: Breach[] = [];
    const w = new BudgetWatch({ table: t, deps: processCore(), cgroupActivity: counted, onBreach: (_, b) => breaches.push(b), now });
    w.watch(owner.queryOf(tree.record.id)!, limits);
    return { w, counted, breaches };
  }

  async function growingTree() {
    const tree = owner.spawn({ command: 'python3', args: ['-c', FORKER_GROWER], stdio: ['ignore', 'pipe', 'ignore'] });
    register(tree.child.pid!);
    await new Promise((r) => tree.child.stdout!.once('data', r));
    assert.ok(tree.record.cgroup, 'the tree has a cgroup of its own');
    await sleep(COMMAND_SETTLES_MS); // a younger member is resolved at each look (it may exec)
    return tree;
  }

  it('reads no member while none ran, and reads them again once one ran (it grew 50 MB) or forked', async () => {
    const tree = await growingTree();
    const t = still();
    const { w, counted } = watchOf(tree, t, { maxProcesses: 100, maxMemoryMB: 4096 });
    watch = w;
    w.look(); // resolves
    w.look(); // reads the members again: the cgroup was not read before
    const rss = w.use(tree.record.id)!.memory.bytes;
    let reads = t.reads;
    const cgroupReads = counted.reads;
    w.look();
    w.look();
    assert.strictEqual(t.reads - reads, 0, 'no read of a member while the cgroup shows none ran');
    assert.strictEqual(counted.reads - cgroupReads, 2, 'one look at the cgroup per look');
    process.kill(tree.child.pid!, 'SIGUSR2');
    await waitFor('the member to grow', () => (table.read(tree.child.pid!)?.rssBytes ?? 0) > rss + 40 * 1024 * 1024);
    reads = t.reads;
    w.look();
    assert.strictEqual(t.reads - reads, 1, 'the member read again: its cgroup used CPU time');
    assert.ok(w.use(tree.record.id)!.memory.bytes > rss + 40 * 1024 * 1024, 'what it took is counted at once');
    process.kill(tree.child.pid!, 'SIGUSR1');
    await waitFor(
      'the member to fork',
      () => fs.readFileSync(path.join(tree.record.cgroup!, 'cgroup.procs'), 'latin1').trim().split('\n').length === 2,
    );
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'the newborn counted at the next look, though the newest pid stood still');
  });

  it('counts a process another moved into the cgroup at the next look', async function () {
    requireCgroupTier(this, 'directory'); // moving a process in takes root (a scope of the user's own would too)
    const tree = await growingTree();
    const { w } = watchOf(tree, still());
    watch = w;
    w.look();
    w.look();
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 1);
    const outsider = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true }); // not of our group, which is never a member
    register(outsider.pid!);
    fs.writeFileSync(path.join(tree.record.cgroup!, 'cgroup.procs'), String(outsider.pid));
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'the process moved in is a member from the next look on');
  });

  it("counts a process born outside the cgroup with the tree's tag at the census 10 s after the last, the tree quiet", async () => {
    const tree = await growingTree();
    let clock = 0;
    const { w } = watchOf(tree, table, { maxProcesses: 100 }, () => clock);
    watch = w;
    w.look(); // resolves, by a census
    w.look();
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 1);
    // A member by the rules wherever it runs (a tmux server's new window inherits the tag, say): only a census finds it.
    const tagged = spawn('sleep', ['1000'], {
      stdio: 'ignore',
      detached: true,
      env: { ...process.env, AGENT_TREES_TREE_ID: tree.record.id },
    });
    register(tagged.pid!);
    await waitFor('the tagged process to run sleep', () => table.read(tagged.pid!)?.name === 'sleep');
    clock = 10_000;
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'the tagged process counted by the census, though the cgroup stood still');
  });

  it("counts a process another moved into a cgroup below the quiet tree's own at the resolve 30 s after the last", async function () {
    requireCgroupTier(this, 'directory'); // moving a process in takes root
    const tree = await growingTree();
    let clock = 0;
    const { w } = watchOf(tree, still(), { maxProcesses: 100 }, () => clock);
    watch = w;
    w.look();
    w.look();
    w.look();
    const outsider = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true });
    register(outsider.pid!);
    const below = path.join(tree.record.cgroup!, 'below');
    fs.mkdirSync(below);
    try {
      fs.writeFileSync(path.join(below, 'cgroup.procs'), String(outsider.pid));
      clock = 29_000;
      w.look();
      assert.strictEqual(w.use(tree.record.id)?.processes, 1, 'neither its list nor its CPU time told');
      clock = 30_000;
      w.look();
      assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'a member from the resolve 30 s after the last on');
    } finally {
      outsider.kill('SIGKILL');
      await waitFor('the outsider to end', () => fs.readFileSync(path.join(below, 'cgroup.procs'), 'latin1') === '');
      fs.rmdirSync(below);
    }
  });

  it('counts memory another process wrote into a quiet member within 10 s, and at the next look once near a limit', async () => {
    // The test writes from outside the tree's cgroup: the member's RSS grows while nothing in its cgroup runs.
    const { tree, write, close } = await quietMemberWithMemory(owner, COMMAND_SETTLES_MS);
    try {
      let clock = 0;
      const far = watchOf(tree, table, { maxMemoryMB: 4096 }, () => clock);
      watch = far.w;
      for (let i = 0; i < 3; i++) far.w.look();
      const before = far.w.use(tree.record.id)!.memory.bytes;
      write(50);
      clock = 10_000;
      far.w.look();
      assert.ok(far.w.use(tree.record.id)!.memory.bytes >= before + 45 * 1024 * 1024, 'the 50 MB counted once the figures are 10 s old');
      far.w.dispose();
      const near = watchOf(tree, table, { maxMemoryMB: 70 }, () => clock);
      watch = near.w;
      assertEndedAtNextLookNearLimit(near, tree, write);
    } finally {
      close();
    }
  });

  it("closes a tree's cgroup files once it is no longer watched, while other trees are", async () => {
    const [one, other] = [await growingTree(), await growingTree()];
    const w = new BudgetWatch({ table, deps: processCore(), cgroupActivity: new KeptCgroupActivity(), onBreach: () => {}, now: () => 0 });
    watch = w;
    for (const t of [one, other]) w.watch(owner.queryOf(t.record.id)!, { maxProcesses: 100 });
    w.look();
    w.look();
    const kept = (tree: OwnedTree) =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${tree.record.cgroup}/`);
        } catch {
          return false; // the directory's own descriptor, closed as it was read
        }
      }).length;
    assert.strictEqual(kept(one), 2, 'its cpu.stat and cgroup.procs kept open while it is watched');
    w.unwatch(one.record.id);
    assert.strictEqual(kept(one), 0, 'an open file would keep its cgroup, once removed, among the dying');
    assert.strictEqual(kept(other), 2);
  });

  it('ends a quiet tree as idle, through its owner', async () => {
    const ended = await runPastLimit(owner, { command: 'sleep', args: ['100'], limits: { idleTimeoutSeconds: 2 } });
    assert.ok(ended.tree.record.cgroup, 'the tree had a cgroup of its own');
    assert.deepStrictEqual(ended.breach, { kind: 'idle', seconds: 2 });
  });
});

describe('the budget watch on a tree without a cgroup: a look at a quiet tree reads one run stamp per member', function () {
  this.timeout(30_000);
  let owner: TreeOwner;
  let watch: BudgetWatch | undefined;
  const started: { kill(signal: NodeJS.Signals): boolean }[] = [];
  beforeEach(() => {
    owner = newOwner('off');
  });
  afterEach(async () => {
    watch?.dispose();
    watch = undefined;
    started.splice(0).forEach((c) => c.kill('SIGKILL'));
    await Promise.all(owners.splice(0).map((o) => o.dispose(0)));
  });

  /** The real table, each of its reads that a look may make counted by kind. */
  function countedTable() {
    const real = table as LinuxProcessTable;
    const calls = { runStamp: 0, reread: 0, walks: 0, parentOf: 0 };
    const t = Object.assign(Object.create(real) as LinuxProcessTable, {
      runStamp: (p: { pid: number; startKey: number }) => (calls.runStamp++, real.runStamp(p)),
      reread: (ps: Parameters<LinuxProcessTable['reread']>[0]) => (calls.reread++, real.reread(ps)),
      parentOf: (pid: number) => (calls.parentOf++, real.parentOf(pid)),
      snapshotOf: (...a: Parameters<LinuxProcessTable['snapshotOf']>) => (calls.walks++, real.snapshotOf(...a)),
      snapshotOfNewcomers: (...a: Parameters<LinuxProcessTable['snapshotOfNewcomers']>) => (calls.walks++, real.snapshotOfNewcomers(...a)),
    });
    const since = () => {
      const now = { ...calls };
      for (const k of Object.keys(calls) as (keyof typeof calls)[]) calls[k] = 0;
      return now;
    };
    return { t, since };
  }

  /** A watch with a clock that stands still unless one is given (no resolve falls due by time), and its breaches. */
  function watchOf(tree: OwnedTree, t: ProcessTable, limits: TreeLimits = { maxProcesses: 100, maxMemoryMB: 4096 }, now = () => 0) {
    const breaches: Breach[] = [];
    const w = new BudgetWatch({ table: t, deps: processCore(), onBreach: (_, b) => breaches.push(b), now });
    w.watch(owner.queryOf(tree.record.id)!, limits);
    return { w, breaches };
  }

  async function pythonTree(script: string) {
    const tree = owner.spawn({ command: 'python3', args: ['-c', script], stdio: ['ignore', 'pipe', 'ignore'] });
    register(tree.child.pid!);
    const out = await new Promise<string>((r) => tree.child.stdout!.once('data', (d: Buffer) => r(d.toString())));
    assert.strictEqual(tree.record.cgroup, null, 'no cgroup of its own');
    await sleep(COMMAND_SETTLES_MS);
    return { tree, out };
  }

  it('reads no member while none ran, whatever was born elsewhere, and reads them again once one ran (it grew 50 MB), forked or died', async () => {
    const { tree } = await pythonTree(FORKER_GROWER);
    const pid = tree.child.pid!;
    const children = () => fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
    process.kill(pid, 'SIGUSR1');
    await waitFor('the member to fork', () => children().length === 1);
    children().forEach(register);
    await sleep(COMMAND_SETTLES_MS); // settled (a younger member is resolved at each look: it may exec)
    const { t, since } = countedTable();
    const { w } = watchOf(tree, t);
    watch = w;
    w.look(); // resolves
    w.look(); // the first run stamps, and the members read again
    assert.strictEqual(w.use(tree.record.id)?.processes, 2);
    const rss = w.use(tree.record.id)!.memory.bytes;
    since();
    w.look();
    assert.deepStrictEqual(
      since(),
      { runStamp: 0, reread: 1, walks: 0, parentOf: 0 },
      'no birth: a stat per member (they bring the figures)',
    );
    const others = [0, 1, 2].map(() => spawn('sleep', ['100'], { stdio: 'ignore' }));
    others.forEach((c) => (register(c.pid!), started.push(c)));
    w.look();
    spawnSync('true');
    w.look();
    assert.deepStrictEqual(
      since(),
      { runStamp: 4, reread: 0, walks: 0, parentOf: 0 },
      'births elsewhere: one run stamp per member per look, nothing else',
    );
    process.kill(pid, 'SIGUSR2');
    await waitFor('the member to grow', () => (table.read(pid)?.rssBytes ?? 0) > rss + 40 * 1024 * 1024);
    w.look();
    // The clock stands still: its figures are never 10 s old, so only a run stamp that moved gets them read again.
    assert.ok(w.use(tree.record.id)!.memory.bytes > rss + 40 * 1024 * 1024, 'what it took is counted at once');
    w.look();
    process.kill(pid, 'SIGUSR1');
    await waitFor('the member to fork', () => children().length === 2);
    children().forEach(register);
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 3, 'the newborn counted at the next look');
    w.look();
    const [first] = children();
    process.kill(first, 'SIGKILL');
    await waitFor('the child to die', () => table.read(first) === undefined);
    w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'the dead member no longer counted');
  });

  it('counts a child a member forked after the look read the newest pid and before it read the stamps, at that look', async () => {
    const { tree } = await pythonTree(FORKER_GROWER);
    const pid = tree.child.pid!;
    const children = () => fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
    const real = table as LinuxProcessTable;
    let armed = false;
    // The look asks for the member's stamp: it forks now, and is asleep again before the stamp is read.
    const t = Object.assign(Object.create(real) as LinuxProcessTable, {
      runStamp: (p: { pid: number; startKey: number }) => {
        if (armed && p.pid === pid) {
          armed = false;
          process.kill(pid, 'SIGUSR1');
          const until = performance.now() + 5000;
          while (performance.now() < until && (children().length === 0 || !/\) S /.test(fs.readFileSync(`/proc/${pid}/stat`, 'latin1')))) {
            /* the fork, and the member back in its sleep */
          }
          children().forEach(register);
        }
        return real.runStamp(p);
      },
    });
    const { w } = watchOf(tree, t);
    watch = w;
    for (let i = 0; i < 3; i++) w.look();
    assert.strictEqual(w.use(tree.record.id)?.processes, 1);
    spawnSync('true'); // a birth elsewhere: the look reads the stamps
    armed = true;
    w.look();
    assert.strictEqual(children().length, 1, 'the member forked during the look');
    assert.strictEqual(w.use(tree.record.id)?.processes, 2, 'the child counted');
  });

  it('reads its members at every look where one has more than one thread (a run stamp follows one thread)', async () => {
    const threaded =
      'import threading, time\nthreading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\nprint("ready", flush=True)\ntime.sleep(1000)\n';
    const { tree } = await pythonTree(threaded);
    const { t, since } = countedTable();
    const { w } = watchOf(tree, t);
    watch = w;
    for (let i = 0; i < 4; i++) w.look();
    const calls = since();
    assert.strictEqual(calls.runStamp, 0, 'no run stamp read');
    assert.strictEqual(calls.reread, 3, 'the member read again at each look after the first');
  });

  it('counts memory another process wrote into a quiet member at the next look (its run stamp carries its memory size)', async () => {
    // As a process sharing its memory (a CLONE_VM sibling born outside the tree) might.
    const { tree, write, close } = await quietMemberWithMemory(owner, COMMAND_SETTLES_MS);
    try {
      const clock = 0; // stands still: the figures never get 10 s old
      const { t, since } = countedTable();
      const far = watchOf(tree, t, { maxMemoryMB: 4096 }, () => clock);
      watch = far.w;
      for (let i = 0; i < 3; i++) far.w.look();
      const before = far.w.use(tree.record.id)!.memory.bytes;
      since();
      spawnSync('true'); // a birth elsewhere: the look reads run stamps
      far.w.look();
      assert.strictEqual(since().reread, 0, 'quiet: the member did not run');
      write(50);
      spawnSync('true');
      far.w.look();
      assert.strictEqual(since().reread, 1, 'read again: its resident size moved');
      assert.ok(far.w.use(tree.record.id)!.memory.bytes >= before + 45 * 1024 * 1024, 'the 50 MB counted at the next look');
      far.w.dispose();
      const near = watchOf(tree, t, { maxMemoryMB: 70 }, () => clock);
      watch = near.w;
      assertEndedAtNextLookNearLimit(near, tree, write);
    } finally {
      close();
    }
  });

  it("reads a run stamp only from the process it stands for: never another's at its pid, none once it is gone", async () => {
    const real = table as LinuxProcessTable;
    const child = spawn('sleep', ['100'], { stdio: 'ignore' });
    register(child.pid!);
    started.push(child);
    const exited = new Promise((r) => child.once('exit', r));
    // Asleep: exec'd and in its sleep (the state of a process that is neither running nor waiting to run).
    await waitFor('the sleep', () => /\(sleep\) S /.test(fs.readFileSync(`/proc/${child.pid}/stat`, 'latin1')));
    const me = real.read(child.pid!)!;
    assert.strictEqual(real.runStamp({ pid: me.pid, startKey: me.startKey + 1 }), undefined, 'another start key: not read');
    const stamp = real.runStamp(me);
    assert.match(stamp ?? '', /^[1-9]\d* \d+ \d+\n(\d+ ){6}\d+\n$/, 'run time, wait time, time slices; the memory sizes (statm)');
    assert.strictEqual(real.runStamp(me), stamp, 'a sleep does not run');
    child.kill('SIGKILL');
    await exited; // reaped: a zombie still has its figures
    assert.strictEqual(real.runStamp(me), undefined, 'gone');
  });

  it('gives no run stamp where the kernel keeps no scheduler statistics ("0 0 0")', () => {
    const root = tmpDir('agent-trees-schedstat-');
    const me = table.read(process.pid)!;
    fs.mkdirSync(path.join(root, String(me.pid)));
    fs.writeFileSync(path.join(root, String(me.pid), 'stat'), fs.readFileSync(`/proc/${me.pid}/stat`));
    fs.writeFileSync(path.join(root, String(me.pid), 'schedstat'), '0 0 0\n');
    const synthetic = new LinuxProcessTable(root);
    assert.strictEqual(synthetic.runStamp(me), undefined);
    fs.writeFileSync(path.join(root, String(me.pid), 'schedstat'), '1234 5 6\n');
    fs.writeFileSync(path.join(root, String(me.pid), 'statm'), '7 6 5 4 3 2 1\n');
    assert.strictEqual(new LinuxProcessTable(root).runStamp(me), '1234 5 6\n7 6 5 4 3 2 1\n', 'figures it keeps are read');
  });

  it("closes a tree's run stamp files once it is no longer watched, or the watch is disposed", async () => {
    const [one, other] = [(await pythonTree(FORKER_GROWER)).tree, (await pythonTree(FORKER_GROWER)).tree];
    const held = (tree: OwnedTree) =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return (
            /^\/proc\/\d+\/(schedstat|statm)$/.test(fs.readlinkSync(`/proc/self/fd/${fd}`)) &&
            fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(`/proc/${tree.child.pid}/`)
          );
        } catch {
          return false;
        }
      }).length;
    const w = new BudgetWatch({ table, deps: processCore(), onBreach: () => {}, now: () => 0 });
    watch = w;
    for (const t of [one, other]) w.watch(owner.queryOf(t.record.id)!, { maxProcesses: 100 });
    for (let i = 0; i < 3; i++) w.look();
    assert.strictEqual(held(one), 2, 'its schedstat and statm kept open while it is watched');
    w.unwatch(one.record.id);
    assert.strictEqual(held(one), 0);
    assert.strictEqual(held(other), 2);
    w.dispose();
    assert.strictEqual(held(other), 0);
  });

  it("tells a process's age on the boot clock", async () => {
    const child = spawn('sleep', ['100'], { stdio: 'ignore' });
    register(child.pid!);
    started.push(child);
    await waitFor('the sleep', () => table.read(child.pid!) !== undefined);
    const real = table as LinuxProcessTable;
    assert.ok(real.ageMs(real.read(child.pid!)!) < COMMAND_SETTLES_MS, 'a process just started is young');
    assert.ok(real.ageMs(real.read(1)!) > 60_000, 'PID 1 is as old as the machine');
  });
});

describe("a tree's limits in its record, through claims and sweeps", () => {
  const owners: TreeOwner[] = [];
  afterEach(async () => {
    await Promise.all(owners.splice(0).map((o) => o.dispose(0)));
  });

  it('are read by another reader, and come back unchanged when a racing sweeper gives a live owner its record back', async () => {
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: 'auto' });
    owners.push(owner);
    const limits = { maxMemoryMB: 512, maxProcesses: 40, idleTimeoutSeconds: 900 };
    const tree = owner.spawn({ command: 'sleep', args: ['100'], stdio: 'ignore', limits });
    register(tree.child.pid!);
    const store = new RecordStore(records);
    const listed = (await listOwnedTrees(store, processCore())).owners[0].trees[0];
    assert.deepStrictEqual([listed.limits, listed.pidsCgroup], [limits, tree.record.pidsCgroup]);
    // A sweeper that judged the owner a moment too early, then saw it alive: the record goes back.
    const claim = store.claim(owner.self.pid, identity(process.pid, nowTicks()))!;
    assert.strictEqual(store.restoreClaim(claim, store.readClaim(claim), sameProcess, true), 'restored');
    const back = store.read(owner.self.pid)!.trees[0];
    assert.deepStrictEqual([back.limits, back.pidsCgroup], [limits, tree.record.pidsCgroup]);
  });

  it("leave no cgroup v1 pids cgroup behind once a dead owner's sweep ended the tree", async function () {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    // An owner of its own, SIGKILLed without a watchdog: its record names the tree and its cgroups, and nobody
    // else does.
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, 'deep', pidfile, 'auto'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LIMITS: JSON.stringify({ maxProcesses: 5 }) },
    });
    register(owner.pid!);
    const exited = new Promise((resolve) => owner.once('exit', resolve));
    await new Promise((resolve) => owner.stdout!.once('data', resolve));
    const pids = await fixturePids(pidfile);
    pids.all.forEach(register);
    const store = new RecordStore(records);
    const recorded = await waitFor('the record', () => store.list().records[0]?.record.trees[0]);
    const dir = recorded.pidsCgroup;
    owner.kill('SIGKILL');
    await exited;
    if (dir === undefined) {
      await sweep(store, {});
      skipBecause(this, 'no cgroup v1 pids cgroup of its own here (cgroup v2 holds pids, or not root)');
    }
    assert.ok(fs.existsSync(dir!), 'the dead owner left it');
    const result = await sweep(store, { cgroups: 'auto' });
    assert.deepStrictEqual(
      result.trees.map((t) => t.outcome),
      ['killed'],
    );
    await waitFor(`${dir} to go with the tree`, () => !fs.existsSync(dir!), 15_000);
  });

  it("leave alone a pids cgroup a record names that is not the tree's own", async () => {
    const store = new RecordStore(tmpDir());
    const dead = identity(deadPid(), nowTicks() - 1);
    const stranger = fs.mkdtempSync(path.join(tmpDir(), 'tree-'));
    const gone = { pid: deadPid(), startTicks: nowTicks() - 1 };
    store.write(dead, [
      {
        id: 'forged',
        label: 'sleep',
        command: ['sleep'],
        rootPid: gone.pid,
        pgid: gone.pid,
        sid: gone.pid,
        rootStartTime: Date.now() - 10,
        rootStartTicks: gone.startTicks,
        trackedAt: Date.now(),
        trackedAtTicks: nowTicks(),
        envTag: 'AGENT_TREES_TREE_ID=forged',
        cgroup: null,
        limits: { maxProcesses: 5 },
        pidsCgroup: stranger,
      },
    ]);
    const result = await sweep(store, { onlyOwner: dead, cgroups: 'auto' });
    assert.deepStrictEqual(
      result.trees.map((t) => t.outcome),
      ['gone'],
    );
    assert.ok(fs.existsSync(stranger), 'a directory that is not its pids cgroup is never removed');
  });

  it("are kept unchanged by the watchdog's sweep of a dead owner when its tree stays recorded (refused)", async () => {
    const store = new RecordStore(tmpDir());
    const ancestor = table.read(process.ppid)!;
    const ownerPid = deadPid();
    const owner = identity(ownerPid, nowTicks() - 1);
    const limits = { maxMemoryMB: 2048, idleTimeoutSeconds: 60 };
    store.write(owner, [
      {
        id: 'limited',
        label: 'claude',
        command: ['claude'],
        // The sweeper's own ancestor: a tree it may never signal, so the sweep keeps it recorded.
        rootPid: ancestor.pid,
        pgid: ancestor.pgid || ancestor.pid,
        sid: ancestor.sid || ancestor.pid,
        rootStartTime: ancestor.startTime,
        rootStartTicks: ancestor.startKey,
        trackedAt: Date.now(),
        trackedAtTicks: nowTicks(),
        envTag: 'AGENT_TREES_TREE_ID=limited',
        cgroup: null,
        limits,
        pidsCgroup: '/sys/fs/cgroup/pids/agent-trees/tree-limited',
      },
    ]);
    const result = await sweep(store, { onlyOwner: owner });
    assert.deepStrictEqual(
      result.trees.map((t) => t.outcome),
      ['refused'],
    );
    const kept = store.read(ownerPid)!.trees[0];
    assert.deepStrictEqual([kept.limits, kept.pidsCgroup], [limits, '/sys/fs/cgroup/pids/agent-trees/tree-limited']);
  });
});
