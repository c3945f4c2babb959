/**
 * Which processes are an extension host's (src/proc/hostChildren/membership.ts), which of them a gone host's
 * record ends (ending.ts), and how the record names them (records/schema.ts, store.ts, the owner): on a synthetic
 * machine (test/unit/synthetic.ts) shaped as code-server runs it, where the host shares its process group and
 * session with the server, the pty host, the file watcher and the other windows' hosts.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import { RecordStore } from '../../../src/proc';
import { membersToEnd } from '../../../src/proc/hostChildren/ending';
import { HostQuery, resolveHostProcesses } from '../../../src/proc/hostChildren/membership';
import { parseRecord } from '../../../src/proc/records/schema';
import { identity, machine, proc } from '../../support/synthetic';
import { tmpDir } from '../../support/repo';

// Our own ancestry (synthetic.ts): pid 100 is "us", the host (group 100, session 50), child of 50, child of 1.
const HOST = { pid: 100, startKey: 1100 };
const MARK = '100:1100';
const EDITOR = 50;
/** Everything in the editor's group and session, as code-server runs them. */
const inEditor = { pgid: 100, sid: 50 };

function world() {
  return machine([
    proc(101, { ...inEditor, ppid: EDITOR, name: 'ptyHost' }), // the pty host: a sibling of ours
    proc(102, { ...inEditor, ppid: EDITOR, name: 'fileWatcher' }),
    proc(103, { ...inEditor, ppid: EDITOR, name: 'otherHost', mark: '103:1203' }), // another window's host
    proc(200, { ...inEditor, ppid: HOST.pid, mark: MARK, name: 'claude' }),
    proc(201, { ...inEditor, ppid: 200, mark: MARK, name: 'mcp' }),
    proc(202, { ppid: 201, pgid: 202, sid: 202, mark: MARK, name: 'setsid-child' }),
    proc(210, { ...inEditor, ppid: HOST.pid, name: 'scrubbed' }), // env -i'd: no mark, a child all the same
    proc(220, { ppid: 1, pgid: 220, sid: 220, mark: MARK, name: 'daemon' }), // double-forked: only the mark says
    proc(230, { ppid: 1, pgid: 230, sid: 230, name: 'seen-daemon' }), // no mark, seen before it left
    proc(240, { ...inEditor, ppid: HOST.pid, tag: 'tree1', name: 'our tree root' }),
    proc(241, { ppid: 240, pgid: 240, sid: 240, tag: 'tree1', mark: MARK, name: 'our tree member' }),
    proc(250, { ppid: HOST.pid, pgid: 250, sid: 250, name: 'our watchdog' }),
    proc(251, { ppid: 250, pgid: 250, sid: 250, name: "watchdog's child" }),
    // A watchdog of ours this host started before (stopped, on its way out): not the one the query names.
    proc(260, { ppid: HOST.pid, pgid: 260, sid: 260, watchdog: MARK, name: 'our earlier watchdog' }),
    proc(300, { ppid: 1, pgid: 300, sid: 300, name: 'decoy claude' }), // the same command line, started elsewhere
    proc(310, { ppid: 1, pgid: 310, sid: 310, mark: MARK, uid: 12345, name: 'forged' }), // another user's, our mark
    proc(320, { ppid: 103, ...inEditor, mark: '103:1203', name: "other host's child" }),
  ]);
}

const query = (extra: Partial<HostQuery> = {}): HostQuery => ({
  host: HOST,
  mark: MARK,
  seen: ['230:1230'],
  exclude: ['250:1250'],
  ...extra,
});
const pids = (list: { pid: number }[]) => list.map((p) => p.pid).sort((a, b) => a - b);

describe("an extension host's processes", () => {
  it('its children and their descendants, what carries its mark, and what it saw before; nothing else', () => {
    const m = world();
    const r = resolveHostProcesses(m.table.snapshot(), query(), m.core);
    assert.deepStrictEqual(pids(r.members), [200, 201, 202, 210, 220, 230]);
  });

  it("never the editor's other processes in its group: the server, the pty host, the file watcher, another window's host or its children", () => {
    const m = world();
    const members = pids(resolveHostProcesses(m.table.snapshot(), query(), m.core).members);
    for (const pid of [EDITOR, 101, 102, 103, 320]) assert.ok(!members.includes(pid), `${pid} is not the host's`);
  });

  it("never Agent Trees' own: its trees (tagged, even a member that kept the mark) and its watchdogs, nor anything beneath them", () => {
    const m = world();
    const members = pids(resolveHostProcesses(m.table.snapshot(), query(), m.core).members);
    for (const pid of [240, 241, 250, 251, 260]) assert.ok(!members.includes(pid), `${pid} is Agent Trees' own`);
  });

  it("never another user's process on the mark alone, and says why", () => {
    const m = world();
    const r = resolveHostProcesses(m.table.snapshot(), query(), m.core);
    assert.ok(!pids(r.members).includes(310));
    assert.ok(
      r.excluded.some((e) => /pid 310 carries this host's mark but runs as uid 12345/.test(e)),
      r.excluded.join('; '),
    );
  });

  it('a process seen before counts only while it is that process: a pid reused since is not', () => {
    const m = world();
    m.table.processes.set(230, proc(230, { ppid: 1, startKey: 9999, name: 'someone else now' }));
    assert.ok(!pids(resolveHostProcesses(m.table.snapshot(), query(), m.core).members).includes(230));
  });

  it("a gone host's children are no one's by parent link (its pid reused): only its record's seen processes and its mark", () => {
    const m = world();
    m.table.processes.set(HOST.pid, proc(HOST.pid, { ppid: 1, startKey: 5555 })); // a later process at the host's pid
    const guard = { protectedPidReason: () => undefined, otherUid: (p: { pid: number; uid: number }) => m.core.guard.otherUid(p) };
    const r = resolveHostProcesses(m.table.snapshot(), query({ seen: [] }), { guard });
    assert.deepStrictEqual(pids(r.members), [200, 201, 202, 220]);
  });

  it("a record's mark finds nothing unless it is the host's own (pid and start key): never another window's host or its children", () => {
    const m = world();
    const r = resolveHostProcesses(m.table.snapshot(), query({ mark: '103:1203' }), m.core);
    for (const pid of [103, 320]) assert.ok(!pids(r.members).includes(pid), `${pid} is another host's`);
    assert.ok(
      r.excluded.some((e) => /the mark 103:1203 is not extension host 100's own/.test(e)),
      r.excluded.join('; '),
    );
  });

  it('a process that started before the host is never its own, whether a record says it was seen or it carries the mark', () => {
    const m = world();
    m.table.processes.set(400, proc(400, { ppid: 1, pgid: 400, sid: 400, startKey: 900, name: "the user's older shell" }));
    m.table.processes.set(401, proc(401, { ppid: 1, pgid: 401, sid: 401, startKey: 901, mark: MARK, name: 'older, a forged mark' }));
    const r = resolveHostProcesses(m.table.snapshot(), query({ seen: ['230:1230', '400:900'] }), m.core);
    assert.deepStrictEqual(pids(r.members), [200, 201, 202, 210, 220, 230]);
    assert.ok(
      r.excluded.some((e) => /pid 400 started before extension host 100/.test(e)),
      r.excluded.join('; '),
    );
  });

  it("never a terminal's process, though it carries the mark (an extension opened the terminal with the host's environment), nor what runs in it", () => {
    const m = world();
    // A terminal the pty host started with `env: process.env` from an extension: the host's mark and this window's tag.
    m.table.processes.set(500, proc(500, { ...inEditor, ppid: 101, mark: MARK, window: 'w1', name: 'bash (a terminal)' }));
    m.table.processes.set(501, proc(501, { ppid: 500, pgid: 501, sid: 500, mark: MARK, window: 'w1', name: 'vim' }));
    const r = resolveHostProcesses(m.table.snapshot(), query({ seen: ['230:1230', '501:1501'] }), m.core);
    assert.deepStrictEqual(pids(r.members), [200, 201, 202, 210, 220, 230]);
    assert.ok(
      r.excluded.some((e) => /pid 500 runs in a terminal/.test(e)),
      r.excluded.join('; '),
    );
  });

  it('never PID 1, this process or its ancestors, even carrying the mark', () => {
    const m = world();
    m.table.processes.get(EDITOR)!.mark = MARK;
    m.table.processes.get(1)!.mark = MARK;
    const members = pids(resolveHostProcesses(m.table.snapshot(), query(), m.core).members);
    for (const pid of [1, EDITOR, HOST.pid]) assert.ok(!members.includes(pid));
  });
});

describe("what a gone extension host's record ends", () => {
  const keep = (ids: string[], whose: Record<string, string>, folders: { id: string; folder: string }[] = []) => ({ ids, folders, whose });

  it("all of its processes but a kept extension's and what descends from it", () => {
    const m = world();
    const whose = { '200:1200': 'anthropic.claude-code', '201:1201': 'anthropic.claude-code', '210:1210': 'some.ext' };
    const r = membersToEnd(m.table.snapshot(), query(), keep(['anthropic.claude-code'], whose), m.core);
    assert.deepStrictEqual(pids(r.members), [210, 220, 230]);
    assert.strictEqual(r.spared, 3, "claude, its MCP server and that one's setsid child");
  });

  it("a process never seen, found by the mark, is kept when it runs a file of a kept extension's folder", () => {
    const m = world();
    m.table.processes.get(220)!.exe = '/home/u/.vscode/extensions/kilo.kilo-code-1.0/bin/kilo';
    const r = membersToEnd(
      m.table.snapshot(),
      query(),
      keep(['kilo.kilo-code'], {}, [{ id: 'kilo.kilo-code', folder: '/home/u/.vscode/extensions/kilo.kilo-code-1.0' }]),
      m.core,
    );
    assert.ok(!pids(r.members).includes(220));
    assert.ok(pids(r.members).includes(200));
  });
});

describe("the host's record of other extensions' processes", () => {
  const hostProcesses = {
    mark: '4242:777',
    seen: [{ pid: 4300, startTicks: 800, extensionId: 'anthropic.claude-code' }],
    keep: [{ extensionId: 'agent-trees.agent-trees', folder: '/x' }],
  };

  it('is read back as written, beside no tree, and an older reader reads the rest of it', () => {
    const store = new RecordStore(tmpDir());
    const owner = identity(4242, 777);
    store.write(owner, [], hostProcesses);
    const text = fs.readFileSync(store.fileOf(4242), 'utf8');
    assert.deepStrictEqual(parseRecord(text).hostProcesses, hostProcesses);
    assert.deepStrictEqual(JSON.parse(text).trees, []);
    store.write(owner, []);
    assert.ok(!fs.existsSync(store.fileOf(4242)), 'removed once it names neither trees nor host processes');
  });

  it('refuses what cannot be one: a bad mark, pid, start, extension id or folder, or no boot identity', () => {
    const base = { version: 1, owner: { ...identity(4242, 777) }, trees: [] };
    const bad: [unknown, RegExp][] = [
      [{ ...hostProcesses, mark: '4242' }, /hostProcesses\.mark/],
      [{ ...hostProcesses, seen: [{ pid: -1, startTicks: 1, extensionId: 'a.b' }] }, /seen\[0\]\.pid/],
      [{ ...hostProcesses, seen: [{ pid: 1, startTicks: 1.5, extensionId: 'a.b' }] }, /seen\[0\]\.startTicks/],
      [{ ...hostProcesses, seen: [{ pid: 1, startTicks: 1, extensionId: '../x' }] }, /seen\[0\]\.extensionId/],
      [{ ...hostProcesses, keep: [{ extensionId: 'a.b', folder: 'relative' }] }, /keep\[0\]\.folder/],
      [{ ...hostProcesses, seen: 'all' }, /hostProcesses\.seen/],
    ];
    for (const [value, problem] of bad) assert.throws(() => parseRecord(JSON.stringify({ ...base, hostProcesses: value })), problem);
    const { startTicks: _t, bootId: _b, pidNs: _p, machineId: _m, ...epochOnly } = base.owner;
    assert.throws(() => parseRecord(JSON.stringify({ ...base, owner: epochOnly, hostProcesses })), /boot identity/);
  });
});
