/**
 * The view's rows as the pure builder makes them (no VS Code needed), and every menu of package.json checked
 * against the `contextValue`s those rows carry.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { buildView, Localizer, Row, ViewInput } from '../../../src/extension/viewModel';
import { commandLabel, formatDuration } from '../../../src/extension/viewFormat';
import { formatBytes } from '../../../src/proc/platform/log';
import { REPO } from '../../support/repo';
import { member, NOW } from '../../support/viewMembers';

/** `vscode.l10n.t` as it behaves with no translation: `{n}` replaced by the n-th argument. */
const l10n: Localizer = { t: (message, ...args) => message.replace(/\{(\d+)\}/g, (_, i) => String(args[Number(i)])) };

/**
 * One of every kind of row: live runs with and without a deadline, an ended run, window trees, MCP servers of VS Code
 * (running, and stopped), a terminal, orphans.
 */
function fullInput(): ViewInput {
  const run = (id: string, extra: Partial<ViewInput['runs'][number]>) => ({
    id,
    name: id,
    kind: 'agent' as const,
    state: 'running' as const,
    live: true,
    endingText: 'running',
    command: ['claude', '-p', 'hi'],
    rootPid: 100,
    pgid: 100,
    tier: 'group',
    ...extra,
  });
  return {
    now: NOW,
    takenAt: NOW,
    runs: [
      run('with-deadline', { deadline: NOW + 90_000 }),
      run('no-deadline', {}),
      run('ended', { live: false, state: 'exited', exitCode: 0, endingText: 'exited with code 0' }),
    ],
    windowTrees: [
      {
        id: 'cli-timeout',
        label: 'claude',
        command: ['claude'],
        rootPid: 300,
        pgid: 300,
        ownerPid: 299,
        deadline: NOW + 900_000,
        tier: 'group',
      },
      { id: 'cli-plain', label: 'codex', command: ['codex'], rootPid: 310, pgid: 310, ownerPid: 309, tier: 'group' },
      {
        id: 'mcp-live',
        label: 'filesystem',
        command: ['npx', 'server-filesystem'],
        rootPid: 320,
        pgid: 320,
        ownerPid: 319,
        tier: 'cgroup',
        mcp: { state: 'running' },
      },
      {
        id: 'mcp-ended',
        label: 'github',
        command: ['github-mcp'],
        rootPid: 330,
        pgid: 330,
        ownerPid: 329,
        tier: 'group',
        mcp: { state: 'stopped' },
      },
    ],
    terminals: [{ shellKey: '200:2000', name: 'bash', shellPid: 200 }],
    orphans: [{ treeId: 'gone1', label: 'old', command: ['old'], rootPid: 400, ownerPid: 399 }],
    members: new Map([
      ['with-deadline', [member(100, 1, '/usr/bin/claude -p hi'), member(101, 100, 'node mcp-server-filesystem')]],
      ['no-deadline', [member(110, 1, 'sleep 60')]],
      ['cli-timeout', [member(300, 299, 'claude')]],
      ['cli-plain', [member(310, 309, 'codex')]],
      ['mcp-live', [member(320, 319, 'npx server-filesystem'), member(321, 320, 'setsid sleep 300', { sid: 321, pgid: 321 })]],
      // The shell, its child, a grandchild, and a daemon re-parented to PID 1 (a root of its own).
      [
        '200:2000',
        [member(200, 150, 'bash'), member(201, 200, 'next dev'), member(202, 201, 'node server.js'), member(203, 1, 'sleep 300')],
      ],
    ]),
    cpu: new Map(),
  };
}

function walk(rows: Row[], out: Row[] = []): Row[] {
  for (const r of rows) {
    out.push(r);
    walk(r.children, out);
  }
  return out;
}

describe('the view model (pure builder)', () => {
  it('lists live runs first, then window trees, terminals and the orphans section, each with its processes beneath', () => {
    const { rows } = buildView(fullInput(), l10n);
    assert.deepStrictEqual(
      rows.map((r) => r.id),
      [
        'run:with-deadline',
        'run:no-deadline',
        'run:ended',
        'window:cli-timeout',
        'window:cli-plain',
        'window:mcp-live',
        'window:mcp-ended',
        'terminal:200:2000',
        'orphans',
      ],
    );
    const terminal = rows[7];
    assert.strictEqual(terminal.label, 'bash');
    assert.match(terminal.description!, /^shell 200 · 4 processes · 0% CPU · 40 MB$/);
    // The shell's subtree by parent links, the daemon as a root of its own; ordered by start time.
    assert.deepStrictEqual(
      terminal.children.map((r) => r.label),
      ['bash', 'sleep 300'],
    );
    assert.deepStrictEqual(
      terminal.children[0].children.map((r) => r.label),
      ['next dev'],
    );
    assert.deepStrictEqual(
      terminal.children[0].children[0].children.map((r) => r.label),
      ['node server.js'],
    );
    const shellRow = terminal.children[0];
    assert.deepStrictEqual(shellRow.target, {
      kind: 'process',
      pid: 200,
      startKey: 2000,
      top: { kind: 'terminal', shellKey: '200:2000', shellPid: 200 },
    });
    assert.strictEqual(rows[8].children[0].description, 'root 400, owner 399 (gone)');
  });

  it('counts a row down by the minute, so a tree is not sent to the renderer again each second, and by the second in its last two minutes', () => {
    const at = (leftMs: number) => {
      const input = fullInput();
      const run = input.runs.find((r) => r.id === 'with-deadline')!;
      run.deadline = input.now + leftMs;
      return buildView(input, l10n).rows.find((r) => r.id === 'run:with-deadline')!;
    };
    assert.match(at(8 * 3600_000).description!, /^running · 8 h left · /);
    assert.match(at(2 * 3600_000 + 4 * 60_000 + 1).description!, /^running · 2 h 5 min left · /);
    assert.match(at(60 * 60_000).description!, /^running · 1 h left · /);
    assert.match(at(59 * 60_000).description!, /^running · 59 min left · /);
    assert.match(at(10 * 60_000).description!, /^running · 10 min left · /);
    assert.match(at(9 * 60_000 + 1).description!, /^running · 10 min left · /);
    assert.strictEqual(at(9 * 60_000 + 30_000).signature, at(9 * 60_000 + 29_000).signature, 'one second later: nothing to send');
    assert.notStrictEqual(at(9 * 60_000 + 1).signature, at(9 * 60_000).signature, 'the next minute');
    assert.match(at(2 * 60_000).description!, /^running · 2 min left · /);
    assert.match(at(2 * 60_000 - 1).description!, /^running · 2:00 left · /);
    assert.notStrictEqual(at(90_000).signature, at(89_000).signature, 'the last two minutes move each second');
  });

  it('shows a countdown on runs and window trees with a deadline, and none on the ended run', () => {
    const { rows } = buildView(fullInput(), l10n);
    assert.match(rows[0].description!, /^running · 1:30 left · 2 processes/);
    assert.match(rows[3].description!, /^agent-trees run · 15 min left · 1 process · /);
    assert.strictEqual(rows[2].description, 'exited (0)');
    assert.strictEqual(rows[2].children.length, 0, 'an ended run shows no processes');
  });

  it('counts processes in words: "1 process", "2 processes"', () => {
    const { rows } = buildView(fullInput(), l10n);
    const description = (id: string) => rows.find((r) => r.id === id)!.description!;
    assert.match(description('run:no-deadline'), /^running · 1 process · /);
    assert.match(description('run:with-deadline'), / · 2 processes · /);
    assert.match(description('terminal:200:2000'), /^shell 200 · 4 processes · /);
  });

  it('turns CPU time into a percentage between two builds, and the signature changes with what is shown', () => {
    const first = buildView(fullInput(), l10n);
    const input = fullInput();
    input.takenAt = NOW + 1000;
    input.now = NOW + 1000;
    input.cpu = first.cpu;
    input.members.set('no-deadline', [member(110, 1, 'sleep 60', { cpuMs: 1500 })]);
    const second = buildView(input, l10n);
    const row = second.rows.find((r) => r.id === 'run:no-deadline')!;
    assert.match(row.children[0].description!, /^110 · 50% · 10 MB$/);
    assert.match(row.description!, /50% CPU/);
    assert.notStrictEqual(row.signature, first.rows.find((r) => r.id === 'run:no-deadline')!.signature);
    const same = buildView({ ...fullInput(), cpu: first.cpu }, l10n);
    assert.strictEqual(
      same.rows.find((r) => r.id === 'terminal:200:2000')!.signature,
      first.rows.find((r) => r.id === 'terminal:200:2000')!.signature,
    );
  });

  it("changes a top row's signature when a process beneath it runs another program (an exec keeps pid, start and size)", () => {
    const before = fullInput();
    const after = fullInput();
    after.members.set('no-deadline', [member(110, 1, 'sleep 121')]);
    const signature = (input: ViewInput) => buildView(input, l10n).rows.find((r) => r.id === 'run:no-deadline')!.signature;
    assert.notStrictEqual(signature(before), signature(after));
  });

  it('gives every row an id unique in the view, even when one process shows under two top rows', () => {
    const input = fullInput();
    input.members.set('cli-plain', [member(201, 200, 'next dev')]); // also under the terminal
    const ids = walk(buildView(input, l10n).rows).map((r) => r.id);
    assert.strictEqual(new Set(ids).size, ids.length);
    assert.strictEqual(buildView(input, l10n).processCount.get('terminal:200:2000'), 4);
  });

  it('formats sizes, durations and command lines', () => {
    assert.strictEqual(formatBytes(512 * 1024), '512 KB');
    assert.strictEqual(formatBytes(3 * 1048576), '3 MB');
    assert.strictEqual(formatBytes(1.5 * 1024 ** 3), '1.5 GB');
    assert.strictEqual(formatDuration(61_000), '1:01');
    assert.strictEqual(formatDuration(3_723_000), '1:02:03');
    assert.strictEqual(formatDuration(-5), '0:00');
    assert.strictEqual(commandLabel('/usr/local/bin/node /srv/mcp/server.js --stdio'), 'node /srv/mcp/server.js --stdio');
    assert.strictEqual(commandLabel('x'.repeat(100), 10), 'xxxxxxxxx…');
  });
});

// ---------------------------------------------------------------------------------------------- menus

interface Menu {
  command: string;
  when: string;
  group?: string;
}

describe('agents waiting for you in the view model', () => {
  it('marks a waiting agent with the bell and its words, and puts the longest waiting first, window trees too', () => {
    const input = fullInput();
    input.runs[1].attention = { state: 'waiting', message: 'Claude needs your permission', detail: 'Bash: rm -rf x', since: NOW - 5000 };
    input.runs[0].attention = { state: 'idle', since: NOW - 1000 };
    input.windowTrees[1].attention = { state: 'waiting', since: NOW - 9000 };
    const { rows } = buildView(input, l10n);
    assert.deepStrictEqual(
      rows.slice(0, 4).map((r) => r.id),
      ['window:cli-plain', 'run:no-deadline', 'run:with-deadline', 'run:ended'],
    );
    const waiting = rows[1];
    assert.deepStrictEqual(waiting.icon, { id: 'bell-dot', color: 'charts.yellow' });
    assert.match(waiting.description!, /^waiting for you: Claude needs your permission · 1 process/);
    assert.match(waiting.tooltip!.text, /Bash: rm \\-rf x/, 'escaped for Markdown');
    assert.match(rows[0].description!, /^agent-trees run · waiting for you · /);
    assert.match(rows[2].description!, /^idle · /);
    const before = buildView(fullInput(), l10n).rows.find((r) => r.id === 'run:no-deadline')!;
    assert.notStrictEqual(waiting.signature, before.signature, 'the row changes when its agent starts waiting');
  });

  it('an ended run shows how it ended, whatever it waited for', () => {
    const input = fullInput();
    input.runs[2].attention = { state: 'waiting', since: NOW };
    const ended = buildView(input, l10n).rows.find((r) => r.id === 'run:ended')!;
    assert.match(ended.description!, /^exited \(0\)/);
    assert.notStrictEqual(ended.icon.id, 'bell-dot');
  });
});

describe('MCP servers of VS Code in the view model', () => {
  it('a running one shows its state and its whole tree, and is a window tree the kill acts on', () => {
    const row = buildView(fullInput(), l10n).rows.find((r) => r.id === 'window:mcp-live')!;
    assert.strictEqual(row.label, 'filesystem');
    assert.match(row.description!, /^MCP server of VS Code · running · 2 processes · 0% CPU · 20 MB$/);
    assert.deepStrictEqual(row.target, { kind: 'windowTree', treeId: 'mcp-live', ownerPid: 319 });
    assert.deepStrictEqual(
      walk(row.children).map((r) => r.label),
      ['npx server-filesystem', 'setsid sleep 300'],
    );
    assert.strictEqual(row.icon.id, 'server-process');
    assert.match(row.tooltip!.text, /started by VS Code's MCP client through agent-trees run \(pid 319\)/);
  });

  it('one that ended stays listed with its state, without processes, and nothing acts on it', () => {
    const row = buildView(fullInput(), l10n).rows.find((r) => r.id === 'window:mcp-ended')!;
    assert.strictEqual(row.description, 'MCP server of VS Code · stopped');
    assert.deepStrictEqual(row.children, []);
    assert.strictEqual(row.contextValue, 'mcpServer.ended');
    const killed = buildView(
      { ...fullInput(), windowTrees: [{ ...fullInput().windowTrees[3], mcp: { state: 'killed' } }] },
      l10n,
    ).rows.find((r) => r.id === 'window:mcp-ended')!;
    assert.strictEqual(killed.description, 'MCP server of VS Code · killed');
    assert.strictEqual(killed.icon.color, 'charts.red');
  });
});

/** Evaluates the `viewItem` part of a `when` clause (`viewItem == x` or `viewItem =~ /re/`) for one contextValue. */
function viewItemMatches(when: string, contextValue: string): boolean {
  const eq = /viewItem == ([\w.]+)/.exec(when);
  if (eq) return eq[1] === contextValue;
  const re = /viewItem =~ \/(.+?)\/(?:\s|$)/.exec(when);
  if (re) return new RegExp(re[1]).test(contextValue);
  throw new Error(`no viewItem condition in "${when}"`);
}

describe('limits in the view model', () => {
  const MB = 1024 * 1024;
  /** A Markdown tooltip as it reads. */
  const unescaped = (row: Row) => row.tooltip!.text.replace(/\\(.)/g, '$1');
  const limited = (use: { processes: number; memoryMB: number; idleSeconds?: number }, state: 'running' | 'over limit' = 'running') => {
    const input = fullInput();
    const budget = {
      limits: { maxMemoryMB: 1024, maxProcesses: 200, idleTimeoutSeconds: 900 },
      use: {
        processes: use.processes,
        memory: { bytes: use.memoryMB * MB, measure: 'PSS' as const },
        idleSeconds: use.idleSeconds,
        kernel: { memory: false, processes: true },
      },
    };
    input.runs = [{ ...input.runs[1], state, budget }];
    input.windowTrees = [
      { ...input.windowTrees[1], budget: { limits: { maxProcesses: 4 }, use: { processes: 1, memory: { bytes: 0, measure: 'RSS' } } } },
    ];
    return buildView(input, l10n).rows;
  };

  it("shows each limited tree's use against its limits, and says in the tooltip what memory counts and what the kernel holds", () => {
    const [run, cli] = limited({ processes: 41, memoryMB: 612, idleSeconds: 12 });
    assert.strictEqual(run.description, 'running · 41 of 200 processes · 0% CPU · 612 MB of 1.0 GB · idle 12 s of 900 s');
    assert.deepStrictEqual(run.icon, { id: 'pulse', color: 'charts.green' });
    assert.match(
      unescaped(run),
      /Limits: 612 MB of 1\.0 GB · 41 of 200 processes · idle 12 s of 900 s \(memory: PSS, shared pages divided among the processes that map them; the kernel stops a fork loop at twice the process limit\)/,
    );
    assert.strictEqual(cli.description, 'agent-trees run · 1 of 4 processes · 0% CPU · 10 MB');
  });

  it('turns a tree to the warning colour from 80 % of any limit on, and the row changes with its use', () => {
    const [below] = limited({ processes: 159, memoryMB: 100 });
    const [near] = limited({ processes: 160, memoryMB: 100 });
    const [nearMemory] = limited({ processes: 1, memoryMB: 900 });
    assert.deepStrictEqual(below.icon, { id: 'pulse', color: 'charts.green' });
    assert.deepStrictEqual(near.icon, { id: 'warning', color: 'list.warningForeground' });
    assert.deepStrictEqual(nearMemory.icon, { id: 'warning', color: 'list.warningForeground' });
    assert.notStrictEqual(below.signature, near.signature);
  });

  it('shows a run ended past a limit as such, with its ending line', () => {
    const input = fullInput();
    input.runs = [{ ...input.runs[2], state: 'over limit', endingText: 'memory limit 1024 MB exceeded (1100 MB): ended 3 processes' }];
    const [row] = buildView(input, l10n).rows;
    assert.strictEqual(row.description, 'over limit');
    assert.deepStrictEqual(row.icon, { id: 'dashboard', color: 'charts.red' });
    assert.match(unescaped(row), /memory limit 1024 MB exceeded \(1100 MB\): ended 3 processes/);
  });
});

describe('the view menus of package.json against the contextValues the view produces', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  const menus: Menu[] = manifest.contributes.menus['view/item/context'];
  const rows = walk(buildView(fullInput(), l10n).rows);
  const byContext = new Map<string, Row[]>();
  for (const r of rows) byContext.set(r.contextValue, [...(byContext.get(r.contextValue) ?? []), r]);
  const commandsOn = (contextValue: string) => new Set(menus.filter((m) => viewItemMatches(m.when, contextValue)).map((m) => m.command));

  it('every menu is for this view and matches a contextValue some row has', () => {
    assert.ok(menus.length > 0);
    for (const m of menus) {
      assert.match(m.when, /view == agentTrees\.processTrees/, `${m.command}: ${m.when}`);
      const hits = [...byContext.keys()].filter((cv) => viewItemMatches(m.when, cv));
      assert.ok(hits.length > 0, `${m.command} (${m.when}) matches no row; rows have ${[...byContext.keys()].join(', ')}`);
    }
  });

  // What each kind of row must offer, and the commands it may offer besides (nothing else).
  const table: { rowKind: string; contextValue: (r: Row) => boolean; must: string[]; may: string[] }[] = [
    {
      rowKind: 'a live run with a deadline',
      contextValue: (r) => r.id === 'run:with-deadline',
      must: ['agentTrees.killTree', 'agentTrees.extendTimeout', 'agentTrees.showTerminal'],
      may: [],
    },
    {
      rowKind: 'a live run without a deadline',
      contextValue: (r) => r.id === 'run:no-deadline',
      must: ['agentTrees.killTree', 'agentTrees.showTerminal'],
      may: ['agentTrees.extendTimeout'],
    },
    { rowKind: 'an ended run', contextValue: (r) => r.id === 'run:ended', must: ['agentTrees.showTerminal'], may: [] },
    {
      rowKind: 'a window tree with a deadline',
      contextValue: (r) => r.id === 'window:cli-timeout',
      must: ['agentTrees.killTree'],
      may: [],
    },
    { rowKind: 'a window tree', contextValue: (r) => r.id === 'window:cli-plain', must: ['agentTrees.killTree'], may: [] },
    { rowKind: 'a running MCP server of VS Code', contextValue: (r) => r.id === 'window:mcp-live', must: ['agentTrees.killTree'], may: [] },
    { rowKind: 'an MCP server of VS Code that ended', contextValue: (r) => r.id === 'window:mcp-ended', must: [], may: [] },
    { rowKind: 'a terminal', contextValue: (r) => r.target.kind === 'terminal', must: ['agentTrees.endTerminal'], may: [] },
    {
      rowKind: 'a process (shell, child, daemon)',
      contextValue: (r) => r.target.kind === 'process',
      must: ['agentTrees.killProcess'],
      may: [],
    },
    { rowKind: 'the orphans section', contextValue: (r) => r.target.kind === 'orphans', must: ['agentTrees.sweepOrphans'], may: [] },
    { rowKind: 'an orphan', contextValue: (r) => r.target.kind === 'orphan', must: [], may: [] },
  ];
  for (const { rowKind, contextValue, must, may } of table) {
    it(`${rowKind}: ${must.join(', ') || 'no command'}`, () => {
      const matching = rows.filter(contextValue);
      assert.ok(matching.length > 0, `no row is ${rowKind}`);
      for (const r of matching) {
        const got = commandsOn(r.contextValue);
        for (const c of must) assert.ok(got.has(c), `${rowKind} (${r.contextValue}) lacks ${c}`);
        for (const c of got) assert.ok(must.includes(c) || may.includes(c), `${rowKind} (${r.contextValue}) offers ${c}`);
      }
    });
  }

  it('every command a menu names is contributed, with its title in package.nls.json', () => {
    const nls = JSON.parse(fs.readFileSync(path.join(REPO, 'package.nls.json'), 'utf8'));
    const contributed = new Map<string, { title: string }>(
      manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c]),
    );
    for (const m of menus) {
      const c = contributed.get(m.command);
      assert.ok(c, `${m.command} is not contributed`);
      const key = /^%(.+)%$/.exec(c.title)?.[1];
      assert.ok(key && typeof nls[key] === 'string', `${m.command}: title ${c.title} not in package.nls.json`);
    }
  });
});
