/** The macOS and Windows paths, on recorded command output and an injected exec (they cannot run here). */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { ownerState } from '../../../src/proc/identity/ownerIdentity';
import { killWindows, TASKKILL_TIMEOUT_MS, WindowsKillDeps } from '../../../src/proc/kill/windowsKill';
import { ExecAsync } from '../../../src/proc/platform/execAsync';
import { MacProcessTable, parseCpuTime, parseMacPs } from '../../../src/proc/platform/macProcessTable';
import { envValue, parseProcStat } from '../../../src/proc/platform/procParsers';
import { fromPsList, WindowsProcessTable } from '../../../src/proc/platform/windowsProcessTable';
import { spawn } from 'child_process';
import { REPO, register, table, waitFor } from '../../support/started';

const recorded = fs.readFileSync(path.join(REPO, 'test', 'fixtures', 'recorded', 'macos-ps.txt'), 'utf8');

describe('macOS process table (recorded ps output)', () => {
  it('parses groups, sessions, start times, commands with spaces, and drops zombies', () => {
    const procs = parseMacPs(recorded);
    assert.deepStrictEqual([...procs.keys()], [1, 501, 812, 813, 815]);
    const claude = procs.get(813)!;
    assert.deepStrictEqual([claude.ppid, claude.pgid, claude.sid, claude.state, claude.uid], [812, 812, 812, 'S', 501]);
    assert.strictEqual(claude.rssBytes, 204800 * 1024);
    assert.strictEqual(claude.cpuMs, (3600 + 2 * 60 + 3) * 1000);
    assert.strictEqual(claude.startTime, new Date('Mon Nov 30 10:01:01 2026').getTime());
    assert.strictEqual(procs.get(501)!.command, '/Applications/Visual Studio Code.app/Contents/MacOS/Electron --type=utility');
    assert.strictEqual(procs.get(815)!.command, 'npx -y @modelcontextprotocol/server-filesystem /Users/me/project (with spaces)');
  });

  it('serves snapshots and single reads through one ps call each', () => {
    const calls: string[][] = [];
    const table = new MacProcessTable((file, args) => {
      calls.push([file, ...args]);
      if (args[0] === '-p') {
        if (args[1] === '813') return recorded.split('\n')[3] + '\n';
        throw new Error('exit 1');
      }
      return recorded;
    });
    const snap = table.snapshot();
    assert.strictEqual(snap.children().get(812)![0].pid, 813);
    assert.strictEqual(snap.commandLine(812), '/bin/zsh -c claude --print hello');
    assert.strictEqual(table.read(813)!.pid, 813);
    assert.strictEqual(table.read(999), undefined);
    assert.strictEqual(calls.length, 3);
    assert.strictEqual(calls[0][0], '/bin/ps');
  });

  it('reads ps TIME in every form', () => {
    assert.strictEqual(parseCpuTime('0:00.05'), 50);
    assert.strictEqual(parseCpuTime('12:34'), 754_000);
    assert.strictEqual(parseCpuTime('2-01:00:00'), (2 * 86400 + 3600) * 1000);
  });
});

describe('Windows (injected ps-list and taskkill)', () => {
  const tree = { id: 'w1', rootPid: 4000, pgid: 4000, sid: 4000, rootStartTime: 0, trackedAt: 0, cgroup: null };
  const target = { kind: 'tree' as const, tree };
  const owned = (graceMs: number, rootAlive: () => boolean) => ({ graceMs, continuouslyOwned: true, cgroupVerified: false, rootAlive });
  const deps = (exec: ExecAsync, killProcess: WindowsKillDeps['killProcess'] = () => assert.fail('no direct kill expected')): WindowsKillDeps =>
    ({ table: new WindowsProcessTable(async () => []), exec, killProcess });

  it('lists processes from ps-list output', async () => {
    const table = new WindowsProcessTable(async () => [
      { pid: 4000, ppid: 100, name: 'node.exe', cmd: 'node agent.js' },
      { pid: 4001, ppid: 4000, name: 'cmd.exe' },
    ]);
    await table.refresh();
    const snap = table.snapshot();
    assert.strictEqual(snap.commandLine(4000), 'node agent.js');
    assert.strictEqual(snap.commandLine(4001), 'cmd.exe');
    assert.deepStrictEqual(snap.children().get(4000)!.map((p) => p.pid), [4001]);
    assert.strictEqual(fromPsList([{ pid: 7, ppid: 1, name: 'x' }]).get(7)!.pgid, 7);
  });

  it('asks taskkill /T first, then /T /F after the grace period, with every call bounded', async () => {
    const calls: { args: string[]; timeout: number }[] = [];
    let alive = true;
    const report = await killWindows(target, owned(150, () => alive), deps(async (file, args, timeout) => {
      calls.push({ args: [file, ...args], timeout });
      if (args.includes('/F')) alive = false;
      return { code: 0, stdout: '' };
    }));
    assert.deepStrictEqual(calls.map((c) => c.args), [['taskkill', '/T', '/PID', '4000'], ['taskkill', '/T', '/F', '/PID', '4000']]);
    assert.ok(calls.every((c) => c.timeout > 0 && c.timeout <= 3000));
    assert.strictEqual(report.escalated, true);
    assert.strictEqual(report.survivors, 0);
  });

  it('stops after the polite request when the tree ends within the grace period', async () => {
    let alive = true;
    const calls: string[][] = [];
    const report = await killWindows(target, owned(2000, () => alive), deps(async (_file, args) => {
      calls.push(args);
      alive = false;
      return { code: 0, stdout: '' };
    }));
    assert.strictEqual(calls.length, 1);
    assert.strictEqual(report.escalated, false);
  });

  it('a stalled taskkill does not hold the kill: every call is bounded, then the root is killed directly', async () => {
    const killedRoots: number[] = [];
    // A taskkill that never answers: it ends only through its bound, as execFile's timeout ends it. A call
    // without a bound would hang here, and the test with it.
    const stalled: ExecAsync = (_f, _a, timeout) =>
      timeout > 0 && timeout <= TASKKILL_TIMEOUT_MS ? new Promise((r) => setTimeout(() => r({ code: 1, stdout: '' }), 20)) : new Promise(() => {});
    const report = await killWindows(target, owned(50, () => true), deps(stalled, (pid) => killedRoots.push(pid)));
    assert.deepStrictEqual(killedRoots, [4000], 'the root is killed itself when taskkill did nothing');
    assert.strictEqual(report.survivors, 1, 'and a root that still runs is reported');
  });

  it('does not touch a tree it did not spawn (no start time to prove the root)', async () => {
    const report = await killWindows(target, { graceMs: 10, continuouslyOwned: false, cgroupVerified: false, rootAlive: () => true }, deps(async () => {
      throw new Error('must not run');
    }));
    assert.strictEqual(report.signalled, 0);
    assert.match(report.refused[0], /only the owner that spawned a tree/);
  });
});

describe('Linux /proc parsing', () => {
  it('reads a stat line whose command name holds spaces and parentheses', () => {
    const line = '4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 12345 1000000 300 18446744073709551615';
    const p = parseProcStat(line, 1_000_000, 4096)!;
    assert.deepStrictEqual([p.pid, p.name, p.state, p.ppid, p.pgid, p.sid], [4242, 'my (odd) name', 'S', 1, 4242, 4242]);
    assert.strictEqual(p.startKey, 12345);
    assert.strictEqual(p.startTime, 1_000_000 + 123_450);
    assert.strictEqual(p.cpuMs, 3000);
    assert.strictEqual(p.rssBytes, 300 * 4096);
  });

  it('counts a zombie as dead', async () => {
    // The exec'd parent never reaps its child, which stays a zombie until the parent ends.
    const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 3'], { stdio: ['ignore', 'pipe', 'ignore'] });
    register(parent.pid!);
    const zombie = Number(await new Promise<string>((r) => parent.stdout!.once('data', (d) => r(String(d)))));
    await waitFor('zombie state', () => fs.readFileSync(`/proc/${zombie}/stat`, 'latin1').includes(') Z '));
    assert.strictEqual(table.read(zombie), undefined);
    assert.ok(!table.snapshot().processes.has(zombie));
    assert.strictEqual(ownerState(table, { pid: zombie, startTime: Date.now() }), 'dead');
    parent.kill('SIGKILL');
  });

  it('matches environment variables by whole name and exact value', () => {
    const env = Buffer.from('MY_AGENT_TREES_TREE_ID=nope\0AGENT_TREES_TREE_ID=abcdef\0PATH=/bin\0');
    assert.strictEqual(envValue(env, 'AGENT_TREES_TREE_ID'), 'abcdef');
    assert.strictEqual(envValue(Buffer.from('AGENT_TREES_TREE_ID=abc'), 'AGENT_TREES_TREE_ID'), 'abc');
    assert.strictEqual(envValue(Buffer.from('XAGENT_TREES_TREE_ID=abc\0'), 'AGENT_TREES_TREE_ID'), null);
  });
});
