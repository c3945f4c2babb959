// Every way a tree ends removes its cgroup: `agent-trees run` when its command exits, on its timeout, on SIGINT
// and SIGTERM; a tree owner's kill and its teardown; an owner ended without cleaning up (its watchdog ends the
// tree); and the end of a host run (the demo's Ctrl-C), which ends its owners and then kills what carries its
// marker (scripts/host/marker.js).
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../../src/proc';
import { isOurCgroup, removeCgroup, removeUnnamedEmptyCgroups, treeCgroupPath } from '../../../src/proc/cgroup/treeCgroup';
import { pidsV1Base } from '../../../src/proc/cgroup/treeLimits';
import { runBounded, startCli } from '../../support/cli';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { requireCgroupTier, requireTools } from '../../support/environment';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain JavaScript of the host scripts, by path
const marker: { MARKER_VAR: string; endMarked(value: string): Promise<{ killed: number[]; cgroupsRemoved: string[] }> } = require(
  path.join(REPO, 'scripts', 'host', 'marker.js'),
);

const tier = processCore().cgroupTier('auto');
const cgroupOf = (treeId: string) => treeCgroupPath(tier.tier!, treeId);

/** `agent-trees run --verbose ...`: its tree id (from its log) once it runs, and its exit. */
async function cliRun(args: string[]) {
  const run = startCli(['run', '--records', tmpDir(), '--verbose', ...args]);
  let stderr = '';
  run.child.stderr!.on('data', (d) => (stderr += d));
  const id = await waitFor('the tree to start', () => /tree ([0-9a-f]{12}): tier cgroup/.exec(stderr)?.[1]);
  return { ...run, id };
}

/** Spawns test/fixtures/owner.js (with a watchdog) on the `daemon` fixture; resolves with its tree id and the fixture's pids. */
async function ownerWithWatchdog(env: NodeJS.ProcessEnv = {}) {
  const pidfile = path.join(tmpDir(), 'pids');
  const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), tmpDir(), 'daemon', pidfile, 'auto'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, WATCHDOG_CLI: CLI, ...env },
  });
  register(owner.pid!);
  const [id, gotTier, watchdog] = (await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d)))))
    .trim()
    .split(' ');
  assert.strictEqual(gotTier, 'cgroup');
  register(Number(watchdog));
  const pids = await fixturePids(pidfile);
  assert.ok(fs.existsSync(cgroupOf(id)), 'the tree has its cgroup');
  return { owner, id, pids: pids.all, watchdog: Number(watchdog) };
}

describe('every way a tree ends removes its cgroup', function () {
  this.timeout(60_000);
  before(function () {
    requireCgroupTier(this, 'directory'); // systemd collects the scopes of a user's trees itself
  });

  it('agent-trees run: its command exits, leaving a helper (ended)', async () => {
    const run = await cliRun(['--', 'sh', '-c', 'sleep 60 & sleep 0.5']);
    assert.strictEqual((await run.done).code, 0);
    assert.ok(!fs.existsSync(cgroupOf(run.id)), 'removed by the time the command returns');
  });

  it('agent-trees run: its timeout', async () => {
    const run = await cliRun(['--timeout', '1', '--', 'sh', '-c', 'sleep 60 & exec sleep 60']);
    assert.strictEqual((await run.done).code, 124);
    assert.ok(!fs.existsSync(cgroupOf(run.id)), 'removed by the time the command returns');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`agent-trees run: ${signal} to it`, async () => {
      const run = await cliRun(['--', 'sh', '-c', 'sleep 60 & exec sleep 60']);
      run.child.kill(signal);
      assert.strictEqual((await run.done).code, signal === 'SIGINT' ? 130 : 143);
      assert.strictEqual(run.child.signalCode, null, `it ended the run on ${signal}, not ended by it outright`);
      assert.ok(!fs.existsSync(cgroupOf(run.id)), 'removed by the time the command returns');
    });
  }

  it('agent-trees run --keep-descendants: what it keeps moves to the cgroup run runs in, and the cgroup is removed', async () => {
    const pidfile = path.join(tmpDir(), 'pids');
    const mount = path.dirname(tier.tier!.base);
    // Two kept helpers: one in the tree's cgroup, one in a cgroup it made below it. The root exits once both are in place.
    const script =
      'sleep 30 >/dev/null 2>&1 & echo $! >> "$0"; cg="$1$(sed -n "s/^0:://p" /proc/self/cgroup)"; mkdir "$cg/sub"; ' +
      'sh -c \'echo $$ > "$0/sub/cgroup.procs"; exec sleep 30\' "$cg" >/dev/null 2>&1 & echo $! >> "$0"; ' +
      'while ! grep -q . "$cg/sub/cgroup.procs"; do sleep 0.05; done';
    const run = await cliRun(['--keep-descendants', '--', 'sh', '-c', script, pidfile, mount]);
    assert.strictEqual((await run.done).code, 0);
    const kept = fs.readFileSync(pidfile, 'utf8').split('\n').filter(Boolean).map(Number);
    kept.forEach(register);
    const v2 = (pid: number | 'self') => /^0::(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1];
    try {
      assert.deepStrictEqual(aliveOf(kept), kept, 'kept running');
      assert.ok(!fs.existsSync(cgroupOf(run.id)), `${cgroupOf(run.id)} is left behind`);
      // run is a child of this process, in its cgroup.
      for (const pid of kept) assert.strictEqual(v2(pid), v2('self'), `${pid} in the cgroup run ran in`);
    } finally {
      for (const pid of aliveOf(kept)) process.kill(pid, 'SIGKILL');
    }
  });

  it('agent-trees run --keep-descendants: a kept process whose main thread has ended moves out too, of both its cgroups', async () => {
    const pidfile = path.join(tmpDir(), 'pid');
    // Its main thread ends (a zombie that the kernel keeps listed in the cgroup), another thread runs on.
    const python =
      'import ctypes, threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()\nctypes.CDLL(None).pthread_exit(None)\n';
    const script =
      'python3 -c "$1" >/dev/null 2>&1 & echo $! > "$0"; ' +
      'while ! grep -q "^State:.*Z" /proc/$!/status || [ "$(ls /proc/$!/task | wc -l)" != 2 ]; do sleep 0.05; done';
    // A process limit gives the tree a v1 pids cgroup too, where the hierarchy has one.
    const run = await cliRun(['--keep-descendants', '--max-processes', '50', '--', 'sh', '-c', script, pidfile, python]);
    const { code, stderr } = await run.done;
    const pid = Number(fs.readFileSync(pidfile, 'utf8'));
    register(pid);
    const pidsBase = pidsV1Base();
    const dirs = [cgroupOf(run.id), ...(pidsBase ? [path.join(pidsBase, `tree-${run.id}`)] : [])];
    try {
      assert.strictEqual(code, 0, stderr);
      const thread = fs.readdirSync(`/proc/${pid}/task`).find((t) => t !== String(pid));
      assert.ok(thread, 'its thread runs on');
      const lines = (of: string) =>
        fs
          .readFileSync(`/proc/${of}/cgroup`, 'utf8')
          .split('\n')
          .filter((l) => /^\d+:(pids)?:/.test(l));
      assert.deepStrictEqual(lines(`${pid}/task/${thread}`), lines('self'), 'its thread is in the cgroups run ran in');
      for (const dir of dirs) assert.ok(!fs.existsSync(dir), `${dir} is left behind`);
      assert.doesNotMatch(stderr, /could not move/);
    } finally {
      process.kill(pid, 'SIGKILL');
      await waitAllDead([pid]);
      for (const dir of dirs) removeCgroup(dir, 0);
    }
  });

  it("agent-trees run --keep-descendants in a cgroup namespace that hides which cgroup it runs in: what it keeps stays in the tree's cgroup, and it says why", async function () {
    requireTools(this, 'unshare');
    const pidfile = path.join(tmpDir(), 'pid');
    // run in a cgroup of its own, in a cgroup namespace made there: the mount's root shows as "/..", its own cgroup as "/".
    const own = path.join(path.dirname(tier.tier!.base), `agent-trees-test-${crypto.randomBytes(6).toString('hex')}`);
    fs.mkdirSync(own);
    let pid: number | undefined;
    let id: string | undefined;
    try {
      const ran = await runBounded('sh', [
        '-c',
        'echo $$ > "$0/cgroup.procs" && exec unshare -C "$@"',
        own,
        process.execPath,
        CLI,
        'run',
        '--records',
        tmpDir(),
        '--verbose',
        '--keep-descendants',
        '--',
        'sh',
        '-c',
        'sleep 30 >/dev/null 2>&1 & echo $! > "$0"',
        pidfile,
      ]);
      id = /tree ([0-9a-f]{12}): tier cgroup/.exec(ran.stderr)?.[1];
      pid = Number(fs.readFileSync(pidfile, 'utf8'));
      register(pid);
      assert.strictEqual(ran.code, 0, ran.stderr);
      assert.ok(id, ran.stderr);
      const v2 = /^0::(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1];
      assert.strictEqual(v2, `/${path.relative(path.dirname(tier.tier!.base), cgroupOf(id))}`, 'not moved to the top of the hierarchy');
      assert.match(
        ran.stderr,
        /could not move what it let go out of its cgroup .* \(cannot tell which cgroup this process runs in\): 1 process still in it/,
      );
    } finally {
      if (pid) process.kill(pid, 'SIGKILL');
      if (pid) await waitAllDead([pid]);
      if (id) removeCgroup(cgroupOf(id), 0);
      await waitFor(`${own} removed`, () => removeCgroup(own, 0));
    }
  });

  it("a tree owner's kill, and its teardown", async () => {
    const owner = new TreeOwner({ recordsDir: tmpDir(), cgroups: 'auto', core: processCore() });
    const spawnOne = () => {
      const tree = owner.spawn({ command: FIXTURE, args: ['daemon', path.join(tmpDir(), 'pids')], stdio: 'ignore', cgroups: 'auto' });
      register(tree.child.pid!);
      assert.strictEqual(tree.tier, 'cgroup');
      return tree.record.id;
    };
    const killed = spawnOne();
    const disposed = spawnOne();
    await owner.kill(killed, 300);
    assert.ok(!fs.existsSync(cgroupOf(killed)), 'removed by the time the kill resolves');
    await owner.dispose(300);
    assert.ok(!fs.existsSync(cgroupOf(disposed)), 'removed by the time the teardown resolves');
  });

  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`an owner ended by ${signal}, without cleaning up: its watchdog ends the tree and removes the cgroup`, async () => {
      const { owner, id, pids } = await ownerWithWatchdog();
      owner.kill(signal);
      assert.deepStrictEqual(await waitAllDead(pids, 10_000), []);
      await waitFor('the cgroup to be removed', () => !fs.existsSync(cgroupOf(id)), 10_000);
    });
  }

  it('the end of a host run (the demo stopped with Ctrl-C): its owner ended, then what carries its marker', async () => {
    const value = `${process.pid}.0.${crypto.randomBytes(6).toString('hex')}`;
    const { owner, id, pids } = await ownerWithWatchdog({ [marker.MARKER_VAR]: value });
    // As code-server's SIGTERM ends an extension host: at once, and then the run's end follows right away.
    owner.kill('SIGTERM');
    await new Promise((resolve) => owner.once('exit', resolve));
    await marker.endMarked(value);
    assert.deepStrictEqual(await waitAllDead(pids, 1000), []);
    assert.ok(!fs.existsSync(cgroupOf(id)), `${cgroupOf(id)} is left behind`);
  });

  it('the end of a host run whose owner and watchdog were both killed: the kill by marker removes the cgroup', async () => {
    const value = `${process.pid}.0.${crypto.randomBytes(6).toString('hex')}`;
    const { owner, id, pids, watchdog } = await ownerWithWatchdog({ [marker.MARKER_VAR]: value });
    process.kill(watchdog, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead([watchdog]), []);
    owner.kill('SIGKILL');
    await new Promise((resolve) => owner.once('exit', resolve));
    const ended = await marker.endMarked(value);
    assert.deepStrictEqual(await waitAllDead(pids, 1000), []);
    assert.deepStrictEqual(ended.cgroupsRemoved, [cgroupOf(id)]);
    assert.ok(!fs.existsSync(cgroupOf(id)), `${cgroupOf(id)} is left behind`);
  });
});

describe('cgroup housekeeping', () => {
  it('a sweep removes empty cgroups of ours that no record names, and leaves named ones', function () {
    const tier = requireCgroupTier(this, 'directory'); // systemd collects the scopes of a user's trees itself
    const stale = treeCgroupPath(tier, `stale-${process.pid}`);
    const named = treeCgroupPath(tier, `named-${process.pid}`);
    fs.mkdirSync(stale);
    fs.mkdirSync(named);
    try {
      const removed = removeUnnamedEmptyCgroups(tier, new Set([named]), Date.now() + 120_000);
      assert.ok(removed.includes(stale));
      assert.ok(!fs.existsSync(stale));
      assert.ok(fs.existsSync(named));
      assert.deepStrictEqual(
        removeUnnamedEmptyCgroups(tier, new Set(), Date.now()).filter((d) => d === named),
        [],
        'a fresh one may be a tree being spawned',
      );
    } finally {
      for (const dir of [stale, named]) if (fs.existsSync(dir)) fs.rmdirSync(dir);
    }
  });

  it('uses a recorded cgroup only when it is ours and not made afresh', function () {
    const tier = requireCgroupTier(this);
    const id = `verify-${process.pid}`;
    const dir = treeCgroupPath(tier, id);
    fs.mkdirSync(dir);
    try {
      assert.strictEqual(isOurCgroup(tier, dir, id, Date.now()), true);
      assert.strictEqual(isOurCgroup(tier, dir, id, Date.now() - 60_000), false, 'created after the tree was tracked');
      assert.strictEqual(isOurCgroup(tier, dir, 'other-id', Date.now()), false, 'named for another tree');
      assert.strictEqual(isOurCgroup(tier, '/sys/fs/cgroup', id, Date.now()), false, 'outside our folder');
    } finally {
      fs.rmdirSync(dir);
    }
  });
});
