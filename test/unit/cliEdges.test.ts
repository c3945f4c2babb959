/**
 * The CLI at its edges (issue 10, items 11–13 and 16), on real processes: timeouts past setTimeout's limit,
 * every catchable fatal signal, records paths that cannot hold records, `ps` that never probes cgroups, and
 * `--verbose` for `sweep` and `kill`.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn, spawnSync } from 'child_process';
import { aliveOf, CLI, FIXTURE, fixturePids, register, REPO, tmpDir, waitAllDead, waitFor } from './helpers';
import { writeCliLauncher } from '../../src/extension/cliLauncher';
import { OTHER_UID, runCli, startCli } from './cliHelpers';

const isRoot = process.getuid?.() === 0;

/** A folder an ordinary user can use (tmpDir makes 0700 folders owned by root). */
function dirFor(uid: number, mode = 0o755): string {
  const dir = tmpDir();
  fs.chownSync(dir, uid, uid);
  fs.chmodSync(dir, mode);
  return dir;
}

describe('agent-trees run --timeout past 2^31-1 ms', () => {
  it('a timeout of 25.5 days does not fire at once', async () => {
    const records = tmpDir();
    const r = await runCli(['run', '--records', records, '--timeout', '2200000', '--', 'sh', '-c', 'sleep 0.5; exit 3']);
    assert.strictEqual(r.code, 3, r.stderr);
    assert.doesNotMatch(r.stderr, /TimeoutOverflowWarning|timed out/);
  });

  it('a timeout too large to keep exits 2 with a one-line error, spawning nothing', async () => {
    const records = tmpDir();
    const marker = path.join(tmpDir(), 'spawned');
    for (const timeout of ['99999999999999999999', '1'.repeat(400)]) {
      const r = await runCli(['run', '--records', records, '--timeout', timeout, '--', 'sh', '-c', `touch ${marker}`]);
      assert.strictEqual(r.code, 2, r.stderr);
      assert.match(r.stderr, /^agent-trees: --timeout .*at most/);
      assert.strictEqual(r.stderr.trim().split('\n').length, 2, 'the error and the usage hint');
    }
    assert.ok(!fs.existsSync(marker));
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });
});

describe('agent-trees run on every catchable fatal signal', () => {
  // The signals whose default action ends a Node process and that Node lets us catch. SIGUSR1 is Node's
  // debugger signal, but a run ends on it as any program would; SIGSEGV, SIGBUS, SIGFPE and SIGILL are left
  // to the default (a real fault cannot run JavaScript); SIGPIPE Node ignores.
  const fatal = [
    'SIGQUIT',
    'SIGABRT',
    'SIGTRAP',
    'SIGUSR1',
    'SIGUSR2',
    'SIGALRM',
    'SIGVTALRM',
    'SIGXCPU',
    'SIGXFSZ',
    'SIGPROF',
    'SIGSYS',
    'SIGIO',
    'SIGPWR',
    'SIGSTKFLT',
  ] as const;
  for (const signal of fatal) {
    const code = 128 + os.constants.signals[signal];
    it(`${signal}: ends the tree and exits ${code}`, async () => {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const run = startCli(['run', '--records', records, '--grace', '1', '--', FIXTURE, 'daemon', pidfile]);
      const pids = await fixturePids(pidfile);
      run.child.kill(signal);
      const r = await run.done;
      assert.strictEqual(r.code, code, r.stderr);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });
  }

  it('SIGPIPE does not end it (Node ignores SIGPIPE), so nothing is orphaned', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--grace', '1', '--', FIXTURE, 'deep', pidfile]);
    const pids = await fixturePids(pidfile);
    run.child.kill('SIGPIPE');
    run.child.kill('SIGTERM');
    const r = await run.done;
    assert.strictEqual(r.code, 143);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});

describe('agent-trees run started with SIGHUP ignored (nohup)', () => {
  for (const how of ['nohup', 'the agent-trees launcher alone'] as const) {
    it(`${how === 'nohup' ? 'through the agent-trees launcher: a hang-up leaves run and its tree running' : 'a hang-up still ends the tree when SIGHUP was not ignored'}`, async () => {
      const bin = writeCliLauncher(tmpDir(), { execPath: process.execPath, cliScript: CLI, platform: 'linux', electron: false });
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const ignore = how === 'nohup' ? `trap '' HUP; ` : '';
      const run = spawn('sh', ['-c', `${ignore}exec "$0" "$@"`, path.join(bin, 'agent-trees'), 'run', '--records', records, '--verbose', '--grace', '1', '--', FIXTURE, 'deep', pidfile], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      register(run.pid!);
      let stderr = '';
      run.stderr!.on('data', (d) => (stderr += d));
      const exited = new Promise<number>((resolve) => run.on('exit', (code, signal) => resolve(code ?? 128 + os.constants.signals[signal!])));
      const pids = await fixturePids(pidfile);
      run.kill('SIGHUP');
      if (how === 'nohup') {
        await Promise.race([
          waitFor('run to say it ignored the hang-up', () => /hung up: ignored/.test(stderr)),
          exited.then((c) => assert.fail(`run exited ${c} on the hang-up: ${stderr}`)),
        ]);
        assert.deepStrictEqual(aliveOf(pids.all), pids.all, 'the tree lives on');
        run.kill('SIGTERM');
      }
      const code = await exited;
      assert.strictEqual(code, how === 'nohup' ? 143 : 129, stderr);
      assert.match(stderr, how === 'nohup' ? /terminated: ended \d+ processes/ : /hung up: ended \d+ processes/);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });
  }
});

describe('agent-trees with a records path that cannot hold records', () => {
  /** Runs the CLI; a run that does not end by itself is ended and fails the test (it hung). */
  async function runBounded(args: string[], options: { asUid?: number } = {}) {
    const run = startCli(args, options);
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 20_000);
    const r = await run.done;
    clearTimeout(timer);
    assert.notStrictEqual(run.child.signalCode, 'SIGKILL', `${args.join(' ')}: hung`);
    return r;
  }

  const cases: { what: string; make: () => string; asUid?: number; problem: RegExp }[] = [
    {
      what: 'a file',
      make: () => {
        const f = path.join(tmpDir(), 'file');
        fs.writeFileSync(f, '');
        return f;
      },
      problem: /is not a folder/,
    },
    {
      what: 'a dangling symlink',
      make: () => {
        const l = path.join(tmpDir(), 'link');
        fs.symlinkSync('/nonexistent/agent-trees', l);
        return l;
      },
      problem: /symlink to .* which does not exist/,
    },
    {
      what: 'a FIFO',
      make: () => {
        const f = path.join(tmpDir(), 'fifo');
        spawnSyncOk('mkfifo', [f]);
        return f;
      },
      problem: /is not a folder/,
    },
    { what: 'a path under /proc', make: () => '/proc/x', problem: /cannot be created|not writable/ },
    {
      what: "a symbolic link of another user's (to a folder of ours)",
      make: () => {
        const l = path.join(dirFor(OTHER_UID, 0o777), 'link');
        fs.symlinkSync(tmpDir(), l);
        fs.lchownSync(l, OTHER_UID, OTHER_UID);
        return l;
      },
      problem: /a symbolic link of uid 12345: only links of this user or root are followed/,
    },
    { what: 'a read-only folder', make: () => dirFor(OTHER_UID, 0o555), asUid: OTHER_UID, problem: /not writable/ },
    {
      // Its owner could move the records away and put a folder of theirs in their place: a watchdog would then find
      // no record to end the tree by.
      what: "a folder inside another user's folder",
      make: () => path.join(dirFor(OTHER_UID, 0o755), 'records'),
      problem: /goes through .*, a folder of uid 12345: only folders of this user or root are trusted to hold it/,
    },
    {
      what: 'a folder inside a folder anyone can write to (no sticky bit)',
      make: () => path.join(dirFor(0, 0o777), 'records'),
      problem: /goes through .*, which any user can write to \(no sticky bit\)/,
    },
  ];
  for (const c of cases) {
    it(`${c.what}: a one-line error, exit 2, nothing spawned`, async function () {
      if (c.asUid !== undefined && !isRoot) this.skip();
      const records = c.make();
      const marker = path.join(dirFor(OTHER_UID, 0o777), 'spawned');
      const r = await runBounded(['run', '--records', records, '--', 'sh', '-c', `touch ${marker}`], { asUid: c.asUid });
      assert.strictEqual(r.code, 2, r.stderr);
      assert.strictEqual(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^agent-trees: records folder /);
      assert.match(r.stderr, c.problem);
      assert.strictEqual(r.stdout, '');
      assert.ok(!fs.existsSync(marker), 'nothing was spawned');
    });
  }

  it("a symbolic link of this user's is followed once, at the start: a link changed while run works changes nothing", async () => {
    const first = tmpDir();
    const second = tmpDir();
    const link = path.join(tmpDir(), 'records');
    fs.symlinkSync(first, link);
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', link, '--', FIXTURE, 'deep', pidfile]);
    const pids = await fixturePids(pidfile);
    await waitFor('the record in the folder the link named', () => fs.existsSync(path.join(first, `${run.child.pid}.json`)));
    fs.rmSync(link);
    fs.symlinkSync(second, link);
    run.child.kill('SIGTERM');
    assert.strictEqual((await run.done).code, 143);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(first), [], 'its record removed where it was written');
    assert.deepStrictEqual(fs.readdirSync(second), [], 'nothing written where the link points now');
  });

  it('ps, sweep and kill say the same for a records path that is a file', async () => {
    const file = path.join(tmpDir(), 'file');
    fs.writeFileSync(file, '');
    for (const args of [['ps'], ['sweep'], ['kill', 'abc']]) {
      const r = await runBounded([...args, '--records', file]);
      assert.strictEqual(r.code, 2, r.stderr);
      assert.match(r.stderr, /^agent-trees: records folder .* is not a folder\n$/);
    }
  });
});

function spawnSyncOk(file: string, args: string[]): void {
  const r = spawnSync(file, args);
  assert.strictEqual(r.status, 0, `${file} ${args.join(' ')}`);
}

describe('the cgroup probe', () => {
  before(function () {
    if (!isRoot) this.skip(); // needs an ordinary user to run the systemd-run path
  });

  /** A fake `systemd-run` first on PATH that notes each call in `calls`. */
  function fakeSystemdRun(): { bin: string; calls: string } {
    const bin = dirFor(0);
    const calls = path.join(dirFor(OTHER_UID, 0o777), 'calls');
    fs.writeFileSync(path.join(bin, 'systemd-run'), `#!/bin/sh\necho "$*" >> "${calls}"\nexit 0\n`, { mode: 0o755 });
    return { bin, calls };
  }

  it('`agent-trees ps` never runs it', async () => {
    const { bin, calls } = fakeSystemdRun();
    const records = dirFor(OTHER_UID);
    for (const args of [['ps'], ['ps', '--json']]) {
      const r = await runCli([...args, '--records', records], {
        asUid: OTHER_UID,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      });
      assert.strictEqual(r.code, 0, r.stderr);
    }
    assert.ok(!fs.existsSync(calls), `systemd-run ran: ${fs.existsSync(calls) && fs.readFileSync(calls, 'utf8')}`);
  });

  it('never holds the event loop while systemd-run runs', async () => {
    // The fake systemd-run waits (up to 5 s) for a file that only a timer of the probing process writes: if the
    // probe held the event loop, the timer could not run until systemd-run gave up.
    const bin = dirFor(0);
    const dir = dirFor(OTHER_UID, 0o777);
    fs.writeFileSync(
      path.join(bin, 'systemd-run'),
      `#!/bin/sh\ni=0\nwhile [ ! -e "${dir}/loop" ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done\n` +
        `if [ -e "${dir}/loop" ]; then echo saw-loop > "${dir}/result"; else echo no-loop > "${dir}/result"; fi\nexit 1\n`,
      { mode: 0o755 },
    );
    const script = `
      const { createCore } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'proc', 'core'))});
      const core = createCore();
      const now = core.cgroupTier('auto');
      setTimeout(() => require('fs').writeFileSync(${JSON.stringify(path.join(dir, 'loop'))}, ''), 0);
      core.cgroupProber.probe('auto').then((r) => console.log(JSON.stringify({ now, later: r })));`;
    const child = spawn('setpriv', [`--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, '--clear-groups', process.execPath, '-e', script], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    register(child.pid!);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    await new Promise((resolve) => child.on('close', resolve));
    assert.strictEqual(fs.readFileSync(path.join(dir, 'result'), 'utf8').trim(), 'saw-loop');
    const { now, later } = JSON.parse(out);
    assert.match(now.unavailable, /has not finished/);
    assert.match(later.unavailable, /systemd-run --user --scope does not work here/);
  });
});

describe('--verbose', () => {
  it('makes `kill` and `sweep` say what they do', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--', FIXTURE, 'deep', pidfile]);
    await fixturePids(pidfile);
    const treeId = await waitFor('the record', () => {
      const f = fs.readdirSync(records).find((n) => n.endsWith('.json'));
      return f && (JSON.parse(fs.readFileSync(path.join(records, f), 'utf8')).trees[0].id as string);
    });
    const killed = await runCli(['kill', treeId, '--records', records, '--grace', '1', '--verbose']);
    assert.strictEqual(killed.code, 0, killed.stderr);
    assert.match(killed.stderr, new RegExp(`tree ${treeId}: ended 3 processes in \\d+ ms`));
    await run.done;

    // A tree whose owner was SIGKILLed, swept.
    const ownerPids = path.join(tmpDir(), 'pids');
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, 'deep', ownerPids, 'off'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    register(owner.pid!);
    const [orphanId] = (await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d))))).trim().split(' ');
    const orphans = await fixturePids(ownerPids);
    owner.kill('SIGKILL');
    await new Promise((resolve) => owner.once('exit', resolve));
    const swept = await runCli(['sweep', '--records', records, '--grace', '1', '--verbose']);
    assert.strictEqual(swept.code, 0, swept.stderr);
    assert.match(swept.stderr, new RegExp(`tree ${orphanId}: ended 3 processes in \\d+ ms`));
    assert.deepStrictEqual(await waitAllDead(orphans.all), []);
  });
});
