/**
 * Whose an extension host's process is (src/proc/hostChildren/attribution.ts, grouping.ts) and how the view's
 * section groups them (src/extension/otherExtensionsInput.ts): pure string and list logic, on recorded shapes of
 * the real hosts' processes (code-server 1.100.3 and 1.139.1 with the stand-ins loaded).
 */
import * as assert from 'assert';
import { attribute, InstallFolder, OTHER_ID, VSCODE_ID } from '../../../src/proc/hostChildren/attribution';
import { LONG_LIVED_MS, placeHostProcesses, recordedHostProcesses } from '../../../src/proc/hostChildren/grouping';
import { MemberInfo } from '../../../src/proc/tracking/listing';
import { otherExtensionsInput } from '../../../src/extension/otherExtensionsInput';

const REPO = '/work/agent-trees';
const APP = '/opt/code-server/lib/vscode';
const FOLDERS: InstallFolder[] = [
  { id: 'agent-trees.agent-trees', folder: REPO },
  { id: 'agent-trees-tests.claude-code-stand-in', folder: `${REPO}/test/fixtures/extensions/claude-code` },
  { id: 'agent-trees-tests.codex-stand-in', folder: `${REPO}/test/fixtures/extensions/codex/` },
  { id: 'vscode.json-language-features', folder: `${APP}/extensions/json-language-features` },
  { id: 'vscode.json', folder: `${APP}/extensions/json` },
];

describe('whose a process of the extension host is', () => {
  it('the extension whose folder holds its executable (claude kept in the extension, codex under bin/)', () => {
    const claude = `${REPO}/test/fixtures/extensions/claude-code/resources/native-binary/claude`;
    assert.strictEqual(
      attribute({ exe: claude, command: `${claude} --output-format stream-json` }, FOLDERS),
      'agent-trees-tests.claude-code-stand-in',
    );
    const codex = `${REPO}/test/fixtures/extensions/codex/bin/linux-x86_64/bin/codex`;
    assert.strictEqual(attribute({ exe: codex, command: `${codex} app-server` }, FOLDERS), 'agent-trees-tests.codex-stand-in');
  });

  it('the deepest folder wins where folders nest (a stand-in inside the repository it tests)', () => {
    const exe = `${REPO}/test/fixtures/extensions/claude-code/x`;
    assert.strictEqual(attribute({ exe, command: exe }, [...FOLDERS].reverse()), 'agent-trees-tests.claude-code-stand-in');
  });

  it('a script run by a shared interpreter: the first path of the command line in a folder', () => {
    const p = {
      exe: '/opt/node-24/bin/node',
      command: `/opt/node-24/bin/node ${APP}/extensions/json-language-features/server/dist/node/jsonServerMain --node-ipc --clientProcessId=21773`,
    };
    assert.strictEqual(attribute(p, FOLDERS, APP), 'vscode.json-language-features');
    // The first such path, not a later one that names another extension's file.
    const both = { exe: '/usr/bin/node', command: `node ${APP}/extensions/json/a.js --config ${REPO}/x.json` };
    assert.strictEqual(attribute(both, FOLDERS), 'vscode.json');
    assert.strictEqual(attribute({ command: `node --require=${REPO}/dist/hook.js app.js` }, FOLDERS), 'agent-trees.agent-trees');
  });

  it('never by a name: a folder name inside another word, or a folder that is only a prefix of another, is no match', () => {
    assert.strictEqual(attribute({ exe: '/usr/bin/node', command: `node /x${REPO}/a.js` }, FOLDERS), OTHER_ID);
    assert.strictEqual(attribute({ exe: `${APP}/extensions/json-language-features-fork/x`, command: 'x' }, FOLDERS), OTHER_ID);
    assert.strictEqual(attribute({ exe: '/usr/bin/claude', command: 'claude --output-format stream-json' }, FOLDERS), OTHER_ID);
  });

  it("VS Code's own application folder, else other (a port scan, a git call)", () => {
    assert.strictEqual(
      attribute({ exe: '/usr/bin/node', command: `node ${APP}/extensions/node_modules/typescript/lib/tsserver.js` }, FOLDERS, APP),
      VSCODE_ID,
    );
    assert.strictEqual(
      attribute({ exe: '/usr/bin/dash', command: '/bin/sh -c ls -l /proc/[0-9]*/fd/[0-9]* | grep socket:' }, FOLDERS, APP),
      OTHER_ID,
    );
    assert.strictEqual(attribute({ exe: '/usr/bin/git', command: 'git status' }, FOLDERS, APP), OTHER_ID);
  });
});

const HOST = 500;
const T0 = 1_000_000;
let nextStart = 100;
function member(pid: number, ppid: number, fields: Partial<MemberInfo> = {}): MemberInfo {
  return {
    pid,
    ppid,
    pgid: 50,
    sid: 50,
    state: 'S',
    startKey: nextStart++,
    startTime: T0,
    uid: 0,
    name: 'x',
    rssBytes: 1 << 20,
    cpuMs: 0,
    command: `cmd${pid}`,
    ...fields,
  };
}
const key = (p: MemberInfo) => `${p.pid}:${p.startKey}`;

describe("whose each of a host's processes is, by lineage", () => {
  const claude = member(600, HOST, { exe: `${REPO}/test/fixtures/extensions/claude-code/resources/native-binary/claude` });
  const mcp = member(610, 600, { exe: '/usr/bin/node', command: `node ${REPO}/test/fixtures/mcp-server.js` });
  const setsid = member(620, 610, { exe: '/usr/bin/sleep' });
  const git = member(700, HOST, { exe: '/usr/bin/git', command: 'git status' });
  const attributeTop = (p: MemberInfo) => attribute({ exe: p.exe, command: p.command }, FOLDERS);

  it("a host child by what it runs; everything beneath it is that extension's, whatever it runs", () => {
    const places = placeHostProcesses([claude, mcp, setsid, git], HOST, new Map(), attributeTop);
    assert.strictEqual(places.get(key(claude))!.extensionId, 'agent-trees-tests.claude-code-stand-in');
    // Its MCP server runs a script of the repository (Agent Trees' folder): still claude's extension's.
    assert.strictEqual(places.get(key(mcp))!.extensionId, 'agent-trees-tests.claude-code-stand-in');
    assert.strictEqual(places.get(key(setsid))!.topKey, key(claude));
    assert.strictEqual(places.get(key(git))!.extensionId, OTHER_ID);
    assert.ok([...places.values()].every((p) => !p.left));
  });

  it('keeps whose a process is after its parent exited: "left by an exited process", not "other"', () => {
    const first = placeHostProcesses([claude, mcp, setsid], HOST, new Map(), attributeTop);
    const remembered = new Map([...first].map(([k, p]) => [k, p.extensionId]));
    // claude exited: its MCP server now hangs from PID 1, and attribution by what it runs would say Agent Trees.
    const orphan = { ...mcp, ppid: 1 };
    const child = member(630, 610);
    const later = placeHostProcesses([orphan, setsid, child], HOST, remembered, attributeTop);
    assert.deepStrictEqual(later.get(key(orphan)), {
      extensionId: 'agent-trees-tests.claude-code-stand-in',
      topKey: key(orphan),
      left: true,
    });
    assert.strictEqual(later.get(key(child))!.extensionId, 'agent-trees-tests.claude-code-stand-in', 'a newcomer under it inherits it');
    assert.ok(later.get(key(child))!.left);
  });

  it("records the long-lived ones, never Agent Trees' own, in pid order", () => {
    const young = member(640, 600, { startTime: T0 + 5000 });
    const own = member(800, HOST, { command: `node ${REPO}/dist/cli.js run --mcp -- x` });
    const members = [own, setsid, claude, young, mcp];
    const places = placeHostProcesses(members, HOST, new Map(), attributeTop);
    const seen = recordedHostProcesses(members, places, { takenAt: T0 + 5000 + LONG_LIVED_MS - 1, skip: 'agent-trees.agent-trees' });
    assert.deepStrictEqual(
      seen.map((s) => [s.pid, s.startTicks, s.extensionId]),
      [claude, mcp, setsid].map((p) => [p.pid, p.startKey, 'agent-trees-tests.claude-code-stand-in']),
    );
  });
});

describe("the view's section of other extensions", () => {
  const lang = member(900, HOST, { command: `node ${APP}/extensions/json-language-features/server.js` });
  const claude = member(600, HOST, { exe: `${REPO}/test/fixtures/extensions/claude-code/claude` });
  const mcp = member(610, 600);
  const daemon = member(650, 1, { command: 'sleep 300' });
  const fresh = member(700, HOST, { startTime: T0 + 9000, command: 'git status' });
  const own = member(800, HOST, { command: `node ${REPO}/dist/cli.js run --mcp -- x` });
  const members = [claude, mcp, daemon, fresh, own, lang];
  const remembered = new Map([[key(daemon), 'agent-trees-tests.claude-code-stand-in']]);
  const places = placeHostProcesses(members, HOST, remembered, (p) => attribute({ exe: p.exe, command: p.command }, FOLDERS, APP));
  const names: Record<string, string> = {
    'agent-trees-tests.claude-code-stand-in': 'Claude Code (stand-in)',
    'vscode.json-language-features': 'JSON Language Features',
  };
  const input = otherExtensionsInput(members, places, {
    takenAt: T0 + 10_000,
    skip: 'agent-trees.agent-trees',
    nameOf: (id) => names[id] ?? 'Other processes',
  });

  it("one entry per extension, by name, with what hangs from the host and what an exited process left; never Agent Trees' own", () => {
    assert.deepStrictEqual(
      input.map((e) => [e.id, e.members.map((p) => p.pid), e.left.map((p) => p.pid)]),
      [
        ['agent-trees-tests.claude-code-stand-in', [600, 610], [650]],
        ['vscode.json-language-features', [900], []],
      ],
    );
  });

  it('a host child younger than the long-lived age is not shown yet (a git call of a moment)', () => {
    assert.ok(!input.some((e) => e.members.some((p) => p.pid === fresh.pid)));
  });
});
