/**
 * Terminal trees (src/proc/terminals): which processes are a terminal's, and what a closing one leaves, rule by
 * rule on synthetic snapshots, table-driven. The real-process cases are in test/system/terminals.
 */
import * as assert from 'assert';
import { liveOwnership, terminalLeftovers, TerminalQuery, TerminalShell, WINDOW_TAG_VARIABLE } from '../../../src/proc';
import { childrenOf, ProcessInfo, Snapshot, TREE_ID_VARIABLE } from '../../../src/proc/platform/processTable';
import { START_PRECISION_MS } from '../../../src/proc/platform/procParsers';
import { deferredLeftovers } from '../../../src/proc/terminals/leftovers';
import { resolveTerminalTrees } from '../../../src/proc/terminals/membership';
import { machine } from '../../support/synthetic';

const T0 = 1_800_000_000_000;

interface Fake {
  pid: number;
  ppid: number;
  sid?: number;
  pgid?: number;
  /** ms after T0. */
  start?: number;
  startKey?: number;
  window?: string;
  tree?: string;
}

function snapshot(fakes: Fake[]): Snapshot {
  const processes = new Map<number, ProcessInfo>();
  const tags = { [WINDOW_TAG_VARIABLE]: new Map<string, ProcessInfo[]>(), [TREE_ID_VARIABLE]: new Map<string, ProcessInfo[]>() };
  for (const f of fakes) {
    const p: ProcessInfo = {
      pid: f.pid,
      ppid: f.ppid,
      pgid: f.pgid ?? f.pid,
      sid: f.sid ?? f.pid,
      state: 'S',
      startKey: f.startKey ?? f.pid * 10,
      startTime: T0 + (f.start ?? 0),
      uid: -1,
      name: 'x',
      rssBytes: 0,
      cpuMs: 0,
    };
    processes.set(p.pid, p);
    if (f.window) tags[WINDOW_TAG_VARIABLE].set(f.window, [...(tags[WINDOW_TAG_VARIABLE].get(f.window) ?? []), p]);
    if (f.tree) tags[TREE_ID_VARIABLE].set(f.tree, [...(tags[TREE_ID_VARIABLE].get(f.tree) ?? []), p]);
  }
  return {
    takenAt: T0 + 100_000,
    processes,
    startPrecision: { unit: 'ticks', errorMs: START_PRECISION_MS },
    commandLine: () => 'x',
    tagged: (variable = TREE_ID_VARIABLE) => (variable in tags ? tags[variable as keyof typeof tags] : new Map()),
    children: () => childrenOf(processes),
  };
}

const shellAt = (pid: number, start: number, tracked = start + 10): TerminalShell => ({
  key: `${pid}:${pid * 10}`,
  pid,
  startKey: pid * 10,
  startTime: T0 + start,
  pgid: pid,
  sid: pid,
  trackedAt: T0 + tracked,
});
const nobodyProtected = { protectedReason: () => undefined, deps: machine([]).core };

describe("terminal trees: which processes are a terminal's (synthetic snapshots)", () => {
  const shell = shellAt(100, 1000);
  const other = shellAt(200, 5000);
  const base: Fake[] = [
    { pid: 100, ppid: 50, start: 1000, window: 'W' }, // the shell
    { pid: 101, ppid: 100, pgid: 101, sid: 100, start: 2000, window: 'W' }, // a job of the shell
    { pid: 102, ppid: 1, sid: 102, start: 3000, window: 'W' }, // a double-forked daemon started from the window's terminals
    { pid: 103, ppid: 102, sid: 102, start: 3100, tree: undefined }, // its child, untagged (env -i): a descendant
    { pid: 90, ppid: 1, start: 500, window: 'W' }, // tagged, but started before this shell
    { pid: 300, ppid: 250, start: 4000, window: 'W' }, // tagged, under the editor (another window's host started from a terminal)
    { pid: 400, ppid: 1, start: 4000, window: 'X' }, // another window's tag
    { pid: 500, ppid: 1, start: 4000 }, // a stranger: no tag, no session, no parent link
    { pid: 104, ppid: 1, sid: 104, start: 2500, startKey: 99999 }, // seen before as 104 with key 1040: now another process
    { pid: 200, ppid: 50, start: 5000, window: 'W' }, // a second terminal's shell
    { pid: 201, ppid: 200, pgid: 201, sid: 200, start: 6000, window: 'W' }, // its job
  ];
  const query = (extra: Partial<TerminalQuery> = {}): TerminalQuery => ({
    windowTags: ['W'],
    shells: [shell, other],
    seen: { [shell.key]: ['104:1040'] },
    kept: [],
    editorRoot: 250,
    ...extra,
  });
  const membersOf = (snap: Snapshot, q: TerminalQuery, key = shell.key) =>
    resolveTerminalTrees(snap, q, nobodyProtected)
      .find((m) => m.shellKey === key)!
      .members.map((p) => p.pid)
      .sort((a, b) => a - b);

  const cases: { title: string; fakes?: Fake[]; query?: Partial<TerminalQuery>; key?: string; members: number[] }[] = [
    { title: 'the shell, its jobs, and a tagged daemon (with its untagged child) started after the shell', members: [100, 101, 102, 103] },
    { title: 'the second terminal: its own jobs, not the daemon, which started before its shell', key: other.key, members: [200, 201] },
    {
      title: 'a daemon started after both shells is counted to both (no session claims it)',
      fakes: [...base, { pid: 108, ppid: 1, sid: 108, start: 7000, startKey: 7000, window: 'W' }],
      key: other.key,
      members: [108, 200, 201],
    },
    { title: "a daemon the user chose to keep is nobody's", query: { kept: ['102:1020'] }, members: [100, 101] },
    { title: 'a process seen before, if its pid now belongs to another process, is not', members: [100, 101, 102, 103] },
    {
      title: 'a shell whose pid now belongs to another process leads nothing',
      fakes: [
        ...base.filter((f) => f.pid !== 100 && f.pid !== 101),
        { pid: 100, ppid: 1, start: 90_000, startKey: 5 },
        { pid: 109, ppid: 100, sid: 100, pgid: 100, start: 91_000 },
      ],
      members: [102, 103],
    },
    {
      title: 'without the editor root given, a tagged process under the editor is counted (it is the caller who names the editor)',
      query: { editorRoot: undefined },
      members: [100, 101, 102, 103, 300],
    },
    { title: 'with no window tag known, only the session and descendants count', query: { windowTags: [] }, members: [100, 101] },
  ];
  for (const c of cases) {
    it(c.title, () => {
      assert.deepStrictEqual(membersOf(snapshot(c.fakes ?? base), query(c.query), c.key), c.members);
    });
  }

  it('a seen process still running as itself stays a member after it left the session and its parent died', () => {
    const snap = snapshot([...base, { pid: 105, ppid: 1, sid: 105, start: 2600 }]);
    assert.deepStrictEqual(membersOf(snap, query({ seen: { [shell.key]: ['105:1050'] } })), [100, 101, 102, 103, 105]);
  });

  it('a leaderless session counts only with proof: a tagged or a seen member, never on a guess', () => {
    // The shell is gone; 106 and 107 are still in its session (they ignored SIGHUP).
    const orphans: Fake[] = [
      { pid: 106, ppid: 1, pgid: 106, sid: 100, start: 2000 },
      { pid: 107, ppid: 1, pgid: 107, sid: 100, start: 2100 },
    ];
    const noProof = snapshot(orphans);
    assert.deepStrictEqual(membersOf(noProof, query({ seen: {} })), []);
    const tagged = snapshot([orphans[0], { ...orphans[1], window: 'W' }]);
    assert.deepStrictEqual(membersOf(tagged, query({ seen: {} })), [106, 107]);
    assert.deepStrictEqual(membersOf(noProof, query({ seen: { [shell.key]: ['106:1060'] } })), [106, 107]);
    // A session id whose leader is a newer process (the pid was reused) proves nothing, tagged member or not.
    const reused = snapshot([{ pid: 100, ppid: 1, start: 90_000, startKey: 5 }, orphans[0], { ...orphans[1], window: 'W' }]);
    assert.deepStrictEqual(membersOf(reused, query({ seen: {} })), [107]);
  });

  it("what a closing terminal leaves: not the shell, not another terminal's jobs, not what a live owner holds", () => {
    // The shell has exited; its job 101 ignored SIGHUP; an `agent-trees run` (110) and its tree (111) live on.
    const snap = snapshot([
      ...base.filter((f) => f.pid !== 100).map((f) => (f.pid === 101 ? { ...f, ppid: 1 } : f)),
      { pid: 110, ppid: 1, pgid: 110, sid: 100, start: 2200, window: 'W' },
      { pid: 111, ppid: 110, sid: 111, start: 2300, window: 'W', tree: 'abc' },
    ]);
    const owners = liveOwnership([
      { file: 'x/110.json', record: { version: 1, owner: { pid: 110, startTime: T0 + 2200 }, trees: [{ id: 'abc' } as never] } },
    ]);
    const left = terminalLeftovers(snap, query(), shell.key, { ...nobodyProtected, owners })
      .map((p) => p.pid)
      .sort((a, b) => a - b);
    // 102 (with its child 103) started after this shell only: no session claims it, and no other shell could have started it.
    assert.deepStrictEqual(left, [101, 102, 103]);
    const others = terminalLeftovers(snap, query(), other.key, { ...nobodyProtected, owners: liveOwnership([]) })
      .map((p) => p.pid)
      .sort((a, b) => a - b);
    assert.deepStrictEqual(others, [201], "the second terminal: its job, never the first one's");
  });

  it('a tagged daemon another open terminal could also have started is not left by a closing one; the last such terminal to close gets it', () => {
    // 108 started after both shells, and no session or parent link leads to it. The first shell has exited.
    const daemon: Fake = { pid: 108, ppid: 1, sid: 108, start: 7000, startKey: 7000, window: 'W' };
    const firstGone = base.filter((f) => f.pid !== 100).map((f) => (f.pid === 101 ? { ...f, ppid: 1 } : f));
    const leftBy = (fakes: Fake[], key: string, q: Partial<TerminalQuery> = {}) =>
      terminalLeftovers(snapshot(fakes), query({ seen: {}, ...q }), key, { ...nobodyProtected, owners: liveOwnership([]) })
        .map((p) => p.pid)
        .sort((a, b) => a - b);
    const deferredBy = (fakes: Fake[], key: string) =>
      deferredLeftovers(snapshot(fakes), query({ seen: {} }), key, nobodyProtected).map((p) => p.pid);
    // The second shell (started before 108) still runs: it could have started 108 too.
    assert.deepStrictEqual(leftBy([...firstGone, daemon], shell.key), [101, 102, 103]);
    assert.deepStrictEqual(deferredBy([...firstGone, daemon], shell.key), [108], 'named as held back');
    // A shell that started after 108 could not have started it: 108 is the closing terminal's.
    const newer = { ...other, startKey: 8000, key: '200:8000' };
    const newerFakes = [...firstGone.map((f) => (f.pid === 200 ? { ...f, startKey: 8000, start: 8000 } : f)), daemon];
    assert.deepStrictEqual(leftBy(newerFakes, shell.key, { shells: [shell, newer] }), [101, 102, 103, 108]);
    // Nor does a shell that is gone (its terminal closed before): the last terminal that could have started it gets it.
    const bothGone = [...firstGone.filter((f) => f.pid !== 200 && f.pid !== 201), daemon];
    assert.deepStrictEqual(leftBy(bothGone, shell.key), [101, 102, 103, 108]);
    assert.deepStrictEqual(deferredBy(bothGone, shell.key), []);
    // The second terminal, closing while the first shell still runs: 108 stays for the first.
    const secondGone = [...base.filter((f) => f.pid !== 200).map((f) => (f.pid === 201 ? { ...f, ppid: 1 } : f)), daemon];
    assert.deepStrictEqual(leftBy(secondGone, other.key), [201]);
  });
});
