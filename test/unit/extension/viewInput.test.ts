/**
 * The view's input as one refresh builds it from what it gathered (src/extension/viewInput.ts, no VS Code, no
 * process): runs, one snapshot's members, the window's terminals, the live and gone owners' records and the MCP
 * servers of VS Code, and the window trees Kill Agent Tree acts on, from the same records.
 */
import * as assert from 'assert';
import type { TreeRecord } from '../../../src/proc';
import { McpServerSource, RecordSource, RunSource, ViewSources, viewInputOf } from '../../../src/extension/viewInput';
import { member, NOW } from '../../support/viewMembers';

/** No translation: the English as written. */
const ENGLISH = { t: (message: string) => message };

function tree(id: string, rootPid: number, extra: Partial<TreeRecord> = {}): TreeRecord {
  return {
    id,
    label: `label-${id}`,
    command: [id, '--flag'],
    rootPid,
    pgid: rootPid,
    sid: rootPid,
    rootStartTime: NOW - 60_000,
    trackedAt: NOW - 60_000,
    envTag: `AGENT_TREES_TREE_ID=${id}`,
    cgroup: null,
    ...extra,
  };
}

function run(id: string, startedAt: number, extra: Partial<RunSource> = {}): RunSource {
  return {
    id,
    name: `agent-${id}`,
    kind: 'agent',
    state: 'running',
    live: true,
    deadline: undefined,
    exitCode: undefined,
    exitSignal: undefined,
    startedAt,
    endingText: () => `ending of ${id}`,
    definition: { command: 'claude', args: ['-p', id] },
    tree: { tier: 'group', record: { rootPid: 100, pgid: 100 } },
    ...extra,
  };
}

const record = (file: string, ownerPid: number, trees: TreeRecord[]): RecordSource => ({
  file,
  record: { owner: { pid: ownerPid }, trees },
});

function mcp(id: string, state: McpServerSource['state'], ownerPid: number): McpServerSource {
  return { id, name: `server-${id}`, state, owner: { pid: ownerPid }, tree: tree(id, ownerPid + 1) };
}

/** One of every source: two runs (started out of order), a terminal, a window tree, two MCP servers, an orphan. */
function sources(): ViewSources {
  return {
    now: NOW,
    l10n: ENGLISH,
    runs: [run('later', NOW - 1000), run('earlier', NOW - 5000, { state: 'exited', live: false, exitCode: 0 })],
    snapshot: {
      takenAt: NOW - 10,
      trees: [
        { id: 'later', members: [member(100, 1, 'proc-100'), member(101, 100, 'proc-101')] },
        { id: 'mcp-live', members: [member(501, 500, 'proc-501')] },
      ],
      terminals: [{ shellKey: '200:2000', members: [member(200, 150, 'bash'), member(201, 200, 'sleep 300')] }],
      windowRecords: [
        {
          file: '/records/300.json',
          trees: [
            { id: 'cli', members: [member(301, 300, 'proc-301')] },
            { id: 'cli-empty', members: [] },
          ],
        },
        { file: '/records/gone-since.json', trees: [{ id: 'unrecorded', members: [member(901, 900, 'proc-901')] }] },
      ],
    },
    terminals: [{ shellKey: '200:2000', name: 'bash', shellPid: 200 }],
    liveRecords: [
      record('/records/300.json', 300, [tree('cli', 301, { deadline: NOW + 60_000, cgroup: '/sys/fs/cgroup/x' }), tree('cli-empty', 310)]),
    ],
    orphanRecords: [record('/records/400.json', 400, [tree('orphan-a', 401), tree('orphan-b', 402)])],
    mcpServers: [mcp('mcp-live', 'running', 500), mcp('mcp-stopped', 'stopped', 600)],
    cpu: new Map([['100:1000', { cpuMs: 50, at: NOW - 1010 }]]),
  };
}

describe("the view's input, built once per refresh", () => {
  it('lists the runs in the order they started, with what their rows show', () => {
    const { input } = viewInputOf(sources());
    assert.deepStrictEqual(
      input.runs.map((r) => r.id),
      ['earlier', 'later'],
    );
    assert.deepStrictEqual(input.runs[1], {
      id: 'later',
      name: 'agent-later',
      kind: 'agent',
      state: 'running',
      live: true,
      deadline: undefined,
      exitCode: undefined,
      exitSignal: undefined,
      endingText: 'ending of later',
      command: ['claude', '-p', 'later'],
      rootPid: 100,
      pgid: 100,
      tier: 'group',
    });
    assert.strictEqual(input.runs[0].endingText, 'ending of earlier');
  });

  it("keeps the snapshot's time, the previous CPU samples, and the terminals as given", () => {
    const s = sources();
    const { input } = viewInputOf(s);
    assert.strictEqual(input.now, NOW);
    assert.strictEqual(input.takenAt, NOW - 10);
    assert.strictEqual(input.cpu, s.cpu);
    assert.deepStrictEqual(input.terminals, s.terminals);
  });

  it('files every member under its run, terminal or window tree', () => {
    const { input } = viewInputOf(sources());
    const pids = (key: string) => input.members.get(key)?.map((m) => m.pid);
    assert.deepStrictEqual(pids('later'), [100, 101]);
    assert.deepStrictEqual(pids('200:2000'), [200, 201]);
    assert.deepStrictEqual(pids('cli'), [301]);
    assert.deepStrictEqual(pids('mcp-live'), [501]);
    assert.strictEqual(input.members.get('cli-empty'), undefined, 'a window tree without members is not shown');
    assert.strictEqual(input.members.get('unrecorded'), undefined, 'nor one whose record is not among the live ones');
  });

  it("shows another owner's tree of this window from its record, and Kill acts on that same record", () => {
    const s = sources();
    const { input, windowTrees } = viewInputOf(s);
    const cli = input.windowTrees.find((t) => t.id === 'cli');
    assert.deepStrictEqual(cli, {
      id: 'cli',
      label: 'label-cli',
      command: ['cli', '--flag'],
      rootPid: 301,
      pgid: 301,
      ownerPid: 300,
      deadline: NOW + 60_000,
      tier: 'cgroup',
    });
    assert.strictEqual(windowTrees.get('cli')?.record, s.liveRecords[0].record.trees[0]);
    assert.strictEqual(windowTrees.get('cli')?.ownerPid, 300);
    assert.ok(!windowTrees.has('cli-empty') && !windowTrees.has('unrecorded'));
  });

  it("lists VS Code's MCP servers with their state; only a running one is a tree Kill acts on", () => {
    const s = sources();
    const { input, windowTrees } = viewInputOf(s);
    const servers = input.windowTrees.filter((t) => t.mcp);
    assert.deepStrictEqual(
      servers.map((t) => [t.id, t.label, t.ownerPid, t.mcp!.state]),
      [
        ['mcp-live', 'server-mcp-live', 500, 'running'],
        ['mcp-stopped', 'server-mcp-stopped', 600, 'stopped'],
      ],
    );
    assert.strictEqual(windowTrees.get('mcp-live')?.record, s.mcpServers[0].tree);
    assert.ok(!windowTrees.has('mcp-stopped'));
  });

  it('shows a tree once when it is both a window record and an MCP server', () => {
    const s = sources();
    s.mcpServers.push({ ...mcp('cli', 'running', 300), tree: s.liveRecords[0].record.trees[0] });
    const { input } = viewInputOf(s);
    assert.deepStrictEqual(
      input.windowTrees.filter((t) => t.id === 'cli').map((t) => t.mcp),
      [undefined],
    );
  });

  it("lists each tree of a gone owner's record as an orphan, and none when there are no orphan records", () => {
    assert.deepStrictEqual(viewInputOf(sources()).input.orphans, [
      { treeId: 'orphan-a', label: 'label-orphan-a', command: ['orphan-a', '--flag'], rootPid: 401, ownerPid: 400 },
      { treeId: 'orphan-b', label: 'label-orphan-b', command: ['orphan-b', '--flag'], rootPid: 402, ownerPid: 400 },
    ]);
    assert.deepStrictEqual(viewInputOf({ ...sources(), orphanRecords: [] }).input.orphans, []);
  });

  it("gives a limited run its owner's use and a limited window tree its members', with the limits of each record", () => {
    const s = sources();
    const use = { processes: 2, memory: { bytes: 5 * 1048576, measure: 'PSS' as const }, idleSeconds: 3 };
    s.runs = [run('later', NOW - 1000, { tree: { tier: 'group', record: { rootPid: 100, pgid: 100, limits: { maxMemoryMB: 64 } } } })];
    s.liveRecords = [record('/records/300.json', 300, [tree('cli', 301, { limits: { maxProcesses: 3 } }), tree('cli-empty', 310)])];
    const withUse = viewInputOf({ ...s, budgetUse: (id) => (id === 'later' ? use : undefined) }).input;
    assert.deepStrictEqual(withUse.runs[0].budget, { limits: { maxMemoryMB: 64 }, use });
    assert.deepStrictEqual(withUse.windowTrees[0].budget, {
      limits: { maxProcesses: 3 },
      use: { processes: 1, memory: { bytes: 10 * 1048576, measure: 'RSS' } },
    });
    // Before the owner's first look: what the members show.
    const before = viewInputOf(s).input;
    assert.deepStrictEqual(before.runs[0].budget!.use, { processes: 2, memory: { bytes: 20 * 1048576, measure: 'RSS' } });
    assert.strictEqual(before.windowTrees[1].budget, undefined, 'no limits, no budget');
  });

  it('an empty refresh gives an empty input', () => {
    const { input, windowTrees } = viewInputOf({
      now: NOW,
      l10n: ENGLISH,
      runs: [],
      snapshot: { takenAt: NOW, trees: [], terminals: [], windowRecords: [] },
      terminals: [],
      liveRecords: [],
      orphanRecords: [],
      mcpServers: [],
      cpu: new Map(),
    });
    assert.deepStrictEqual([input.runs, input.windowTrees, input.orphans, [...input.members], [...windowTrees]], [[], [], [], [], []]);
  });
});
