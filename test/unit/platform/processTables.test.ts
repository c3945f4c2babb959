/**
 * The process tables of each platform (src/proc/platform) on recorded output and injected calls: macOS's ps, Windows'
 * ps-list, Linux's /proc lines, and the start-time precision each declares. No macOS or Windows machine runs here.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { MacProcessTable, parseCpuTime, parseMacPs } from '../../../src/proc/platform/macProcessTable';
import { parseLoadavg } from '../../../src/proc/platform/pidCensus';
import { envValue, parseProcStat, parseStatusUid } from '../../../src/proc/platform/procParsers';
import { fromPsList, WindowsProcessTable } from '../../../src/proc/platform/windowsProcessTable';
import { FIXTURES } from '../../support/repo';
import { LINUX_PRECISION } from '../../support/synthetic';

const recorded = fs.readFileSync(path.join(FIXTURES, 'recorded', 'macos-ps.txt'), 'utf8');

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

describe('Windows process table (ps-list)', () => {
  it('lists processes from ps-list output', async () => {
    const table = new WindowsProcessTable(async () => [
      { pid: 4000, ppid: 100, name: 'node.exe', cmd: 'node agent.js' },
      { pid: 4001, ppid: 4000, name: 'cmd.exe' },
    ]);
    await table.refresh();
    const snap = table.snapshot();
    assert.strictEqual(snap.commandLine(4000), 'node agent.js');
    assert.strictEqual(snap.commandLine(4001), 'cmd.exe');
    assert.deepStrictEqual(
      snap
        .children()
        .get(4000)!
        .map((p) => p.pid),
      [4001],
    );
    assert.strictEqual(fromPsList([{ pid: 7, ppid: 1, name: 'x' }]).get(7)!.pgid, 7);
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

  it('reads the tasks and the newest pid of /proc/loadavg, and nothing from a line of another shape', () => {
    assert.deepStrictEqual(parseLoadavg('0.00 0.45 0.78 1/78 18978\n'), { tasks: 78, newestPid: 18978 });
    assert.deepStrictEqual(parseLoadavg('12.50 9.01 7.77 16/102400 4194303'), { tasks: 102400, newestPid: 4194303 });
    assert.strictEqual(parseLoadavg('0.00 0.45 0.78\n'), undefined);
    assert.strictEqual(parseLoadavg(''), undefined);
  });

  it('matches environment variables by whole name and exact value', () => {
    const env = Buffer.from('MY_AGENT_TREES_TREE_ID=nope\0AGENT_TREES_TREE_ID=abcdef\0PATH=/bin\0');
    assert.strictEqual(envValue(env, 'AGENT_TREES_TREE_ID'), 'abcdef');
    assert.strictEqual(envValue(Buffer.from('AGENT_TREES_TREE_ID=abc'), 'AGENT_TREES_TREE_ID'), 'abc');
    assert.strictEqual(envValue(Buffer.from('XAGENT_TREES_TREE_ID=abc\0'), 'AGENT_TREES_TREE_ID'), null);
  });
});

describe('the real uid on Linux', () => {
  it('comes from the Uid line of /proc/<pid>/status (its first field), not from who owns the /proc files', () => {
    // A set-uid program: real 1000, effective 0. /proc/<pid>/stat of a non-dumpable process belongs to root.
    const status = 'Name:\tssh-agent\nUmask:\t0077\nState:\tS (sleeping)\nPid:\t4242\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n';
    assert.strictEqual(parseStatusUid(status), 1000);
    assert.strictEqual(parseStatusUid('Name:\tx\n'), undefined);
  });
});

describe('each table declares its start-time precision', () => {
  it('Linux: clock ticks (the synthetic machines use the same bound); macOS: seconds; Windows: none', () => {
    assert.deepStrictEqual(new LinuxProcessTable().startPrecision, LINUX_PRECISION);
    assert.strictEqual(new MacProcessTable(() => '').startPrecision.unit, 'seconds');
    assert.ok(new MacProcessTable(() => '').startPrecision.errorMs >= 1000);
    assert.deepStrictEqual(new WindowsProcessTable(async () => []).startPrecision, { unit: 'none', errorMs: Infinity });
  });
});
