/**
 * The `agent-trees` command line (src/cli/main.ts) on real processes: `run` passes its command's exit on and ends
 * whatever that left, on its timeout, on every catchable fatal signal, and when its own parent dies; `ps`, `kill`
 * and `sweep` on the trees it recorded.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn } from 'child_process';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { sleep, waitFor } from '../../support/wait';
import { fixturePids } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { runCli, startCli } from '../../support/cli';
import { writeCliLauncher } from '../../../src/extension/cliLauncher';

describe('agent-trees run', () => {
  it('passes the exit code through, kills what CMD left running, and leaves no record', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const r = await runCli(['run', '--records', records, '--grace', '1', '--', 'sh', '-c', `${FIXTURE} root-exits ${pidfile}; exit 7`]);
    assert.strictEqual(r.code, 7, r.stderr);
    const pids = await fixturePids(pidfile);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it('never loses the last line CMD printed to the kill', async () => {
    const records = tmpDir();
    const r = await runCli(['run', '--records', records, '--', 'sh', '-c', 'sleep 60 & printf "first\\nlast line, no newline"']);
    assert.strictEqual(r.code, 0);
    assert.strictEqual(r.stdout, 'first\nlast line, no newline');
    const t = await runCli([
      'run',
      '--records',
      records,
      '--timeout',
      '0.5',
      '--',
      'sh',
      '-c',
      'sleep 60 & printf "before the timeout"; sleep 60',
    ]);
    assert.strictEqual(t.code, 124);
    assert.strictEqual(t.stdout, 'before the timeout');
  });

  it('exits 124 on timeout with the whole tree dead', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const r = await runCli([
      'run',
      '--records',
      records,
      '--timeout',
      '1',
      '--grace',
      '0.3',
      '--no-cgroup',
      '--',
      FIXTURE,
      'ignore-term',
      pidfile,
    ]);
    assert.strictEqual(r.code, 124);
    assert.match(r.stderr, /timed out after 1 s: ended \d+ processes/);
    const pids = await fixturePids(pidfile);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`exits ${code} on ${signal} with the whole tree dead`, async () => {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const run = startCli(['run', '--records', records, '--grace', '1', '--', FIXTURE, 'daemon', pidfile]);
      const pids = await fixturePids(pidfile);
      run.child.kill(signal);
      const r = await run.done;
      assert.strictEqual(r.code, code);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });
  }

  it('ends the tree on a signal that comes the moment CMD starts, before the run is under way', async () => {
    // CMD signals this command first thing, so the signal often comes between the spawn and the moment the run
    // is supervised: it must end the run as any other, not this command alone (leaving the tree to the watchdog).
    for (const [signal, code] of [
      ['INT', 130],
      ['TERM', 143],
      ['INT', 130],
      ['TERM', 143],
      ['INT', 130],
      ['TERM', 143],
    ] as const) {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pids');
      const cmd = `echo $$ > ${pidfile}; kill -${signal} $PPID; sleep 60 & echo $! >> ${pidfile}; exec sleep 60`;
      const run = startCli(['run', '--records', records, '--grace', '1', '--', 'sh', '-c', cmd]);
      const r = await run.done;
      const pids = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').split('\n').filter(Boolean).map(Number) : [];
      pids.forEach(register);
      assert.strictEqual(run.child.signalCode, null, `SIG${signal} was handled, not left to end this command outright: ${r.stderr}`);
      assert.strictEqual(r.code, code, r.stderr);
      assert.deepStrictEqual(aliveOf(pids), [], 'the tree was ended by the time the command returned');
      assert.deepStrictEqual(fs.readdirSync(records), []);
    }
  });

  it('says so when CMD was ended by a signal it did not send (a kill from the view), on a line of its own', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pid');
    const run = startCli([
      'run',
      '--records',
      records,
      '--grace',
      '1',
      '--',
      'sh',
      '-c',
      `echo $$ > ${pidfile}; printf 'mid-line'; exec sleep 60`,
    ]);
    const pid = Number(await waitFor('the pid of CMD', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
    register(pid);
    process.kill(pid, 'SIGTERM');
    const r = await run.done;
    assert.strictEqual(r.code, 143);
    assert.strictEqual(r.stdout, 'mid-line');
    assert.match(r.stderr, /^agent-trees: sh was ended by SIGTERM$/m);
    assert.deepStrictEqual(fs.readdirSync(records), []);
    // Its own timeout is not such a signal: only the timeout's line.
    const t = await runCli(['run', '--records', records, '--timeout', '0.5', '--', 'sleep', '60']);
    assert.strictEqual(t.code, 124);
    assert.doesNotMatch(t.stderr, /was ended by/);
  });

  it('kills the tree when its own parent dies', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    // sh starts the CLI and waits; SIGKILL of sh re-parents the CLI, which must notice and clean up.
    const sh = spawn(
      'sh',
      ['-c', `"${process.execPath}" "${CLI}" run --records "${records}" --grace 1 -- "${FIXTURE}" deep "${pidfile}" & echo $!; wait`],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    register(sh.pid!);
    const cliPid = Number(await new Promise<string>((resolve) => sh.stdout!.once('data', (d) => resolve(String(d)))));
    register(cliPid);
    const pids = await fixturePids(pidfile);
    sh.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead([...pids.all, cliPid], 20_000), []);
  });

  it('with --mcp passes stdin on to CMD, and when stdin closes ends the whole tree at once, setsid grandchild too', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const server = path.join(REPO, 'test', 'fixtures', 'mcp-server.js');
    // The fixture ignores SIGTERM and stdin's end: only the wrapper's kill (after the 1 s grace) ends it.
    const run = startCli(['run', '--mcp', '--records', records, '--grace', '1', '--', process.execPath, server, pidfile], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    run.child.stdin!.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) + '\n');
    const { roles } = await fixturePids(pidfile);
    const members = ['server', 'root', 'setsid'].map((role) => roles.get(role)![0]);
    await waitFor('the server to read the request', () => fs.readFileSync(pidfile, 'utf8').includes('method tools/list'));
    run.child.stdin!.end();
    const r = await run.done;
    assert.strictEqual(r.code, 0, r.stderr);
    assert.match(r.stdout, /"tools":\[\{"name":"echo"/);
    assert.match(r.stderr, /stdin closed: ended \d+ processes/);
    assert.deepStrictEqual(await waitAllDead(members), []);
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  for (const kb of [300, 1000]) {
    it(`with --mcp ends the whole tree when stdin closes although the server left ${kb} KB of it unread`, async () => {
      const records = tmpDir();
      const pidfile = path.join(tmpDir(), 'pid');
      // A server that never reads stdin (hung), and a helper beside it.
      const run = startCli(
        ['run', '--mcp', '--records', records, '--grace', '0.3', '--', 'sh', '-c', `sleep 303 & echo $! > ${pidfile}; exec sleep 304`],
        {
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      run.child.stdin!.on('error', () => {});
      const helper = Number(await waitFor('the helper', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(helper);
      run.child.stdin!.end(Buffer.alloc(kb * 1000));
      try {
        const r = await Promise.race([run.done, sleep(10_000).then(() => undefined)]);
        assert.ok(r, 'run exited once stdin closed');
        assert.strictEqual(r.code, 0, r.stderr);
        assert.match(r.stderr, /stdin closed: ended \d+ processes/);
        assert.deepStrictEqual(await waitAllDead([helper]), []);
        assert.deepStrictEqual(fs.readdirSync(records), []);
      } finally {
        if (run.child.exitCode === null) run.child.kill('SIGTERM');
        await run.done;
      }
    });
  }

  it('with --keep-descendants leaves what CMD started running, unowned', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--keep-descendants', '--', FIXTURE, 'root-exits', pidfile]);
    await run.exited;
    assert.strictEqual(run.child.exitCode, 0);
    const pids = await fixturePids(pidfile);
    const children = pids.roles.get('child')!;
    try {
      assert.strictEqual(aliveOf(children).length, 2);
      assert.deepStrictEqual(fs.readdirSync(records), [], 'no longer owned, no record');
    } finally {
      for (const pid of aliveOf(children)) process.kill(pid, 'SIGKILL');
    }
  });

  it('exits 2 with a one-line error on bad arguments or a missing executable, spawning nothing', async () => {
    const records = tmpDir();
    for (const args of [
      ['run', '--records', records, '--', 'no-such-command-agent-trees'],
      ['run', '--records', records, '--', './missing/agent.sh'],
      ['run', '--records', records, '--timeout', 'soon', '--', 'true'],
      ['run', '--records', records],
      ['run', '--bogus', '--', 'true'],
      ['frobnicate'],
      ['kill'],
    ]) {
      const r = await runCli(args);
      assert.strictEqual(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.split('\n')[0], /^agent-trees: \S/);
      assert.strictEqual(r.stdout, '');
    }
    assert.deepStrictEqual(fs.readdirSync(records), []);
    const missing = await runCli(['run', '--records', records, '--', 'no-such-command-agent-trees']);
    assert.strictEqual(missing.stderr, 'agent-trees: no-such-command-agent-trees: command not found on PATH\n');
  });

  it('ps lists owned trees with their owner and members; kill ends one', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli(['run', '--records', records, '--', FIXTURE, 'deep', pidfile]);
    const pids = await fixturePids(pidfile);
    const listing = JSON.parse((await runCli(['ps', '--records', records, '--json'])).stdout);
    assert.strictEqual(listing.owners.length, 1);
    assert.strictEqual(listing.owners[0].owner.pid, run.child.pid);
    assert.strictEqual(listing.owners[0].owner.alive, true);
    const tree = listing.owners[0].trees[0];
    assert.deepStrictEqual(tree.members.map((m: { pid: number }) => m.pid).sort(), [...pids.all].sort());
    const human = await runCli(['ps', '--records', records]);
    assert.match(human.stdout, new RegExp(`tree ${tree.id} .* 3 live members\n`));
    const killed = await runCli(['kill', tree.id, '--records', records, '--grace', '1']);
    assert.strictEqual(killed.code, 0, killed.stderr);
    assert.match(killed.stdout, /ended 3 processes/);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.strictEqual((await run.done).code, 143, 'CMD died of SIGTERM');
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });
});

describe('agent-trees run with limits', function () {
  this.timeout(60_000);

  it('exits 125 past a limit, saying on stderr which limit and what was ended, with the whole tree dead', async () => {
    const records = tmpDir();
    const cases: [string[], string[], RegExp][] = [
      [
        ['--max-processes', '3', '--no-cgroup'],
        ['sh', '-c', 'sleep 60 & sleep 60 & sleep 60 & wait'],
        /process limit 3 exceeded \(4\): ended 4 processes/,
      ],
      [['--idle-timeout', '2'], ['sleep', '60'], /idle for 2 s: ended 1 process\n/],
      [
        ['--max-memory', '100'],
        ['python3', '-c', 'import time\nb = []\nwhile True:\n    b.append(bytearray(b"x") * (10 << 20))\n    time.sleep(0.1)\n'],
        /memory limit 100 MB exceeded \(\d+ MB\): ended 1 process\n/,
      ],
    ];
    for (const [options, cmd, line] of cases) {
      const r = await runCli(['run', '--records', records, '--grace', '1', ...options, '--', ...cmd]);
      assert.strictEqual(r.code, 125, r.stderr);
      assert.match(r.stderr, line);
      assert.strictEqual(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
      assert.deepStrictEqual(fs.readdirSync(records), [], 'the tree ended and its record went');
    }
  });

  it('ends the whole tree past a limit, and exits 125, even when SIGTERM comes while it is being ended', async () => {
    const records = tmpDir();
    const told = path.join(tmpDir(), 'told');
    // Four members under a limit of 2; the root outlasts SIGTERM (it notes it), so the end takes the grace.
    const root = `$SIG{TERM} = sub { open(my $f, '>>', '${told}'); print $f "TERM\\n"; close $f };
      for (1 .. 3) { exec('sleep', '60') unless fork } sleep 1 while 1`;
    const run = startCli(['run', '--records', records, '--no-watchdog', '--grace', '3', '--max-processes', '2', '--', 'perl', '-e', root]);
    await waitFor('the limit to end the tree (its root told SIGTERM)', () => fs.existsSync(told), 30_000);
    run.child.kill('SIGTERM');
    const r = await run.done;
    assert.strictEqual(r.code, 125, r.stderr);
    assert.match(r.stderr, /^agent-trees: warning: process limit 2 exceeded \(4\): ended 4 processes\n$/);
    assert.deepStrictEqual(fs.readdirSync(records), [], 'the tree ended and its record went');
  });

  it("ps shows a tree's limits and its use against them; the record carries them", async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const run = startCli([
      'run',
      '--records',
      records,
      '--max-memory',
      '512',
      '--max-processes',
      '10',
      '--idle-timeout',
      '600',
      '--',
      FIXTURE,
      'deep',
      pidfile,
    ]);
    const pids = await fixturePids(pidfile);
    const tree = JSON.parse((await runCli(['ps', '--records', records, '--json'])).stdout).owners[0].trees[0];
    assert.deepStrictEqual(tree.limits, { maxMemoryMB: 512, maxProcesses: 10, idleTimeoutSeconds: 600 });
    assert.strictEqual(tree.use.processes, 3);
    assert.strictEqual(tree.use.memory.measure, 'PSS');
    assert.ok(tree.use.memory.bytes > 0 && tree.use.memory.bytes < 512 * 1024 * 1024);
    const human = await runCli(['ps', '--records', records]);
    assert.match(human.stdout, /\n {4}limits: \d+ (KB|MB) of 512 MB, 3 of 10 processes, ends after 600 s idle \(memory: PSS\)\n/);
    run.child.kill('SIGTERM');
    assert.strictEqual((await run.done).code, 143);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });
});

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
      const run = spawn(
        'sh',
        [
          '-c',
          `${ignore}exec "$0" "$@"`,
          path.join(bin, 'agent-trees'),
          'run',
          '--records',
          records,
          '--verbose',
          '--grace',
          '1',
          '--',
          FIXTURE,
          'deep',
          pidfile,
        ],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      register(run.pid!);
      let stderr = '';
      run.stderr!.on('data', (d) => (stderr += d));
      const exited = new Promise<number>((resolve) =>
        run.on('exit', (code, signal) => resolve(code ?? 128 + os.constants.signals[signal!])),
      );
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
    assert.match(swept.stdout, /^swept 1 tree of dead owners, ended 3 processes; 0 live owners left alone$/m);
    assert.deepStrictEqual(await waitAllDead(orphans.all), []);
  });
});

describe('dist/cli.js, the command line and the core the extension loads', () => {
  it('loaded as a module it only exports the core: no command runs, no signal handler, the environment untouched', async () => {
    const probe = [
      `process.env.ELECTRON_RUN_AS_NODE = '1';`,
      `const core = require(${JSON.stringify(CLI)});`,
      `console.log(JSON.stringify({ processCore: typeof core.processCore, env: process.env.ELECTRON_RUN_AS_NODE,`,
      ` sigterm: process.listenerCount('SIGTERM'), sighup: process.listenerCount('SIGHUP') }));`,
    ].join('\n');
    const child = spawn(process.execPath, ['-e', probe], { stdio: ['ignore', 'pipe', 'pipe'] });
    register(child.pid!);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.strictEqual(code, 0, err);
    assert.deepStrictEqual(JSON.parse(out), { processCore: 'function', env: '1', sigterm: 0, sighup: 0 });
  });

  it('run from standard input (as the watchdog runs it) it is the command line', async () => {
    const script = fs.openSync(CLI, 'r');
    const child = spawn(process.execPath, ['-', '--help'], { stdio: [script, 'pipe', 'ignore'] });
    fs.closeSync(script);
    register(child.pid!);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.strictEqual(code, 0);
    assert.match(out, /^Usage:\n {2}agent-trees run /);
  });
});
