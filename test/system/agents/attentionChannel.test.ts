// The attention channel (src/agents/attentionChannel.ts, attentionInbox.ts) with the real `agent-trees notify`
// (dist/cli.js) as an agent's hook runs it: a call for a live tree with its key is shown; a forged key, a stale
// tree id, another owner's tree, another user, a FIFO or a symlink where a message is expected, a folder others can
// write: refused and logged, never shown.
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { AttentionTracker } from '../../../src/agents/attention';
import { AttentionFolder, folderProblem, formatAddress, NOTIFY_VARIABLE, parseAddress } from '../../../src/agents/attentionChannel';
import { AttentionInbox } from '../../../src/agents/attentionInbox';
import { Logger } from '../../../src/proc';
import { processCore } from '../../../src/proc';
import { runCli, startCli } from '../../support/cli';
import { OTHER_UID } from '../../support/otherUser';
import { requireEnvironment, requireRoot } from '../../support/environment';
import { tmpDir } from '../../support/repo';
import { sleep, waitFor } from '../../support/wait';

const table = processCore().table;

const CLAUDE_PERMISSION = JSON.stringify({
  session_id: 's',
  hook_event_name: 'PermissionRequest',
  tool_name: 'Bash',
  tool_input: { command: 'rm -rf x' },
});

class CapturingLog implements Logger {
  lines: string[] = [];
  trace(): void {}
  debug(): void {}
  info(m: string): void {
    this.lines.push(`info ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
}

interface Setup {
  records: string;
  log: CapturingLog;
  folder: AttentionFolder;
  inbox: AttentionInbox;
  tree: string;
  tracker: AttentionTracker;
  /** The environment the tree's processes get. */
  env: NodeJS.ProcessEnv;
}

function setup(records = tmpDir()): Setup {
  const log = new CapturingLog();
  const folder = new AttentionFolder(records, log);
  const inbox = new AttentionInbox(folder, { pid: process.pid, startKey: table.read(process.pid)!.startKey }, log);
  const tracker = new AttentionTracker();
  const tree = 'tree0123abcd';
  const env = { ...process.env, ...inbox.open(tree, tracker), AGENT_TREES_TREE_ID: tree };
  return { records, log, folder, inbox, tree, tracker, env };
}

function teardown(s: Setup): void {
  s.inbox.dispose();
  s.folder.dispose();
  fs.rmSync(s.records, { recursive: true, force: true });
}

/** A call for `tree` with `key` put in the folder as notify puts it (this user's file, renamed into place). */
function putCall(s: Setup, tree: string, key: string, name: string, n: number): void {
  const message = { version: 1, tree, key, agent: 'notify', event: { name, message: `call ${n}` }, sentAt: 0 };
  const file = `to-${process.pid}-${table.read(process.pid)!.startKey}-${String(n).padStart(20, '0')}-${n.toString(16).padStart(16, '0')}.msg`;
  fs.writeFileSync(path.join(s.folder.dir, `.tmp-${process.pid}-${n.toString(16).padStart(16, '0')}`), JSON.stringify(message));
  fs.renameSync(path.join(s.folder.dir, `.tmp-${process.pid}-${n.toString(16).padStart(16, '0')}`), path.join(s.folder.dir, file));
}

/** Runs `agent-trees notify` as Claude Code's hook does: its JSON on stdin. */
function claudeHook(env: NodeJS.ProcessEnv, input = CLAUDE_PERMISSION, asUid?: number) {
  const run = startCli(['notify', '--agent', 'claude'], { env, asUid, stdio: ['pipe', 'pipe', 'pipe'] });
  run.child.stdin!.end(input);
  return run.done;
}

/** Waits until the inbox has dealt with `n` calls (the folder's change events are asynchronous). */
const calls = (s: Setup, n: number) => waitFor(`${n} hook call(s) handled`, () => s.inbox.outcomes.length >= n);

describe('attention channel: hook calls into the owner of a tree', function () {
  this.timeout(30_000);
  let s: Setup;
  beforeEach(() => (s = setup()));
  afterEach(() => teardown(s));

  it("shows a call for its live tree with its key: the agent's words, nothing printed, exit 0", async () => {
    const r = await claudeHook(s.env);
    assert.deepStrictEqual([r.code, r.stdout], [0, ''], r.stderr);
    await calls(s, 1);
    assert.deepStrictEqual([s.tracker.current.state, s.tracker.current.message], ['waiting', 'Claude needs your permission']);
    assert.deepStrictEqual(fs.readdirSync(s.folder.dir), [], 'the message was taken');
    assert.strictEqual((fs.statSync(s.folder.dir).mode & 0o777).toString(8), '700');
  });

  it('refuses a forged call (a wrong key) and logs it; the state does not move', async () => {
    const address = parseAddress(s.env[NOTIFY_VARIABLE])!;
    const forged = formatAddress({ ...address, key: 'f'.repeat(32) });
    const r = await claudeHook({ ...s.env, [NOTIFY_VARIABLE]: forged });
    assert.strictEqual(r.code, 0, 'posted: the owner judges it');
    await calls(s, 1);
    assert.strictEqual(s.tracker.current.state, 'working');
    assert.match(s.inbox.outcomes[0].refused ?? '', /does not carry that tree's key/);
    assert.ok(
      s.log.lines.some((l) => /^warn attention: refused a hook call/.test(l)),
      s.log.lines.join('\n'),
    );
  });

  it("refuses a stale tree id and another owner's tree, even with a key that is right for some tree", async () => {
    await claudeHook({ ...s.env, AGENT_TREES_TREE_ID: 'ended0000000' });
    const other = new AttentionInbox(s.folder, { pid: 1, startKey: 0 }, new CapturingLog());
    const otherEnv = other.open('othertree000', new AttentionTracker());
    const otherKey = parseAddress(otherEnv[NOTIFY_VARIABLE])!.key;
    const mine = parseAddress(s.env[NOTIFY_VARIABLE])!;
    await claudeHook({ ...s.env, AGENT_TREES_TREE_ID: 'othertree000', [NOTIFY_VARIABLE]: formatAddress({ ...mine, key: otherKey }) });
    s.inbox.close(s.tree);
    await claudeHook(s.env);
    await calls(s, 3);
    assert.strictEqual(s.tracker.current.state, 'working');
    assert.deepStrictEqual(
      s.inbox.outcomes.map((o) => /not a live tree this owner launched/.test(o.refused ?? '')),
      [true, true, true],
      JSON.stringify(s.inbox.outcomes),
    );
    other.dispose();
  });

  it('another user cannot post: the folder is closed to them, and a file of theirs put there is refused (as another user)', async function () {
    requireRoot(this, 'to post as another user (setpriv)');
    const r = await claudeHook(s.env, CLAUDE_PERMISSION, OTHER_UID);
    assert.strictEqual(r.code, 1);
    assert.match(r.stderr, /attention folder .*(EACCES|cannot be looked at)/);
    const address = parseAddress(s.env[NOTIFY_VARIABLE])!;
    const planted = path.join(s.folder.dir, `to-${process.pid}-${address.owner.startKey}-${'0'.repeat(20)}-${'0'.repeat(16)}.msg`);
    const message = { version: 1, tree: s.tree, key: address.key, agent: 'claude', event: { name: 'PermissionRequest' }, sentAt: 0 };
    fs.writeFileSync(planted + '.x', JSON.stringify(message));
    fs.chownSync(planted + '.x', OTHER_UID, OTHER_UID);
    fs.renameSync(planted + '.x', planted);
    await calls(s, 1);
    assert.strictEqual(s.tracker.current.state, 'working', 'even with the right key');
    assert.match(s.inbox.outcomes[0].refused ?? '', /owned by uid 12345/);
    assert.ok(!fs.existsSync(planted), 'removed');
  });

  it('a FIFO or a symlink where a message is expected is refused without blocking, and removed; the target is untouched', async () => {
    const address = parseAddress(s.env[NOTIFY_VARIABLE])!;
    const name = (n: number) =>
      path.join(s.folder.dir, `to-${process.pid}-${address.owner.startKey}-${String(n).repeat(20)}-${String(n).repeat(16)}.msg`);
    execFileSync('mkfifo', [name(1)]);
    const target = path.join(s.records, 'target');
    fs.writeFileSync(
      target,
      JSON.stringify({ version: 1, tree: s.tree, key: address.key, agent: 'claude', event: { name: 'Stop' }, sentAt: 0 }),
    );
    fs.symlinkSync(target, name(2));
    s.inbox.take(); // the change events may have come before both were there
    await calls(s, 2);
    assert.strictEqual(s.tracker.current.state, 'working');
    assert.deepStrictEqual(
      s.inbox.outcomes.map((o) => /FIFO|symbolic link/.test(o.refused ?? '')),
      [true, true],
    );
    assert.ok(!fs.existsSync(name(1)) && !fs.existsSync(name(2)));
    assert.ok(fs.existsSync(target));
  });

  it('a folder others can write is not used: no tree gets hooks through it, and notify posts nothing there', async () => {
    fs.chmodSync(s.folder.dir, 0o777);
    assert.match(folderProblem(s.folder.dir) ?? '', /writable by other users/);
    assert.throws(() => s.inbox.open('another0000a', new AttentionTracker()), /writable by other users/);
    const r = await claudeHook(s.env);
    assert.strictEqual(r.code, 1);
    assert.match(r.stderr, /writable by other users/);
    assert.deepStrictEqual(fs.readdirSync(s.folder.dir), []);
  });

  it('outside a hooked tree, or for an owner that is gone, notify says so and posts nothing', async () => {
    const outside = await runCli(['notify', '--message', 'hi'], { env: { ...process.env, [NOTIFY_VARIABLE]: '' } });
    assert.deepStrictEqual([outside.code, outside.stdout], [1, '']);
    assert.match(outside.stderr, /not inside a tree launched with hooks/);
    const mine = parseAddress(s.env[NOTIFY_VARIABLE])!;
    const gone = formatAddress({ ...mine, owner: { pid: mine.owner.pid, startKey: mine.owner.startKey + 1 } });
    const r = await runCli(['notify', '--message', 'hi'], { env: { ...s.env, [NOTIFY_VARIABLE]: gone } });
    assert.strictEqual(r.code, 1);
    assert.match(r.stderr, /owner \(pid \d+\) is gone/);
    await sleep(200);
    assert.deepStrictEqual(fs.readdirSync(s.folder.dir), []);
  });

  it("reaches its owner whatever the records folder's path holds: spaces, quotes, $(), a newline", async () => {
    const odd = setup(path.join(tmpDir(), `a b'c"$(touch x)\nd`));
    try {
      const r = await claudeHook(odd.env);
      assert.deepStrictEqual([r.code, r.stderr], [0, '']);
      await calls(odd, 1);
      assert.strictEqual(odd.tracker.current.state, 'waiting');
    } finally {
      teardown(odd);
    }
  });

  it('the folder removed while its owner watches it: the owner makes it again and takes the calls made into it', async () => {
    fs.rmSync(s.folder.dir, { recursive: true });
    await waitFor('the folder made again', () => fs.existsSync(s.folder.dir));
    const r = await claudeHook(s.env);
    assert.strictEqual(r.code, 0, r.stderr);
    await calls(s, 1);
    assert.strictEqual(s.tracker.current.state, 'waiting');
    // Made again by someone else (an agent-trees run) at once: the owner watches the new one.
    fs.rmSync(s.folder.dir, { recursive: true });
    fs.mkdirSync(s.folder.dir, { mode: 0o700 });
    s.tracker.typed();
    await claudeHook(s.env);
    await calls(s, 2);
    assert.strictEqual(s.tracker.current.state, 'waiting');
  });

  it('a flood of calls is taken a batch at a time, letting the host run between batches, and none is lost', async () => {
    let changes = 0;
    const tracker = new AttentionTracker(() => changes++);
    const key = parseAddress(s.inbox.open('flooded00000', tracker)[NOTIFY_VARIABLE])!.key;
    for (let n = 0; n < 600; n++) putCall(s, 'flooded00000', key, n % 2 ? 'idle' : 'waiting', n);
    s.inbox.take();
    const left = fs.readdirSync(s.folder.dir).length;
    assert.ok(left >= 500, `one take read ${600 - left} of 600 calls before letting the host run`);
    await waitFor('every call taken', () => changes === 600 && fs.readdirSync(s.folder.dir).length === 0);
    assert.strictEqual(tracker.current.state, 'idle', 'in order: the last call was idle');
  });

  it("an agent's calls are taken in the order they were sent, however many wait together, the wall clock stepped back", async function () {
    const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';
    requireEnvironment(this, fs.existsSync(libfaketime), `libfaketime (${libfaketime})`, { part: true });
    // The first call of each round sent an hour ahead of the wall clock, as before a step back (the monotonic clock,
    // as on a real machine, does not move).
    const ahead = fs.existsSync(libfaketime)
      ? { ...s.env, LD_PRELOAD: libfaketime, FAKETIME: '+1h', FAKETIME_DONT_FAKE_MONOTONIC: '1' }
      : s.env;
    s.folder.dispose(); // no change events: both calls wait together until the take below
    for (let round = 1; round <= 8; round++) {
      for (const [env, input] of [
        [ahead, CLAUDE_PERMISSION],
        [s.env, JSON.stringify({ hook_event_name: 'Stop' })],
      ] as const) {
        const r = await claudeHook(env, input);
        assert.strictEqual(r.code, 0, r.stderr);
      }
      s.inbox.take();
      await calls(s, 2 * round);
      assert.strictEqual(s.tracker.current.state, 'idle', `round ${round}: the Stop sent last is the state`);
      assert.strictEqual(s.tracker.current.waits, round);
    }
  });

  it('takes nothing from a folder others came to be able to write, until it is closed again', async () => {
    const address = parseAddress(s.env[NOTIFY_VARIABLE])!;
    s.folder.dispose(); // no change events: the takes below are the test's
    fs.chmodSync(s.folder.dir, 0o770);
    putCall(s, s.tree, address.key, 'waiting', 1);
    s.inbox.take();
    await sleep(100);
    assert.strictEqual(s.tracker.current.state, 'working');
    assert.ok(fs.existsSync(path.join(s.folder.dir, fs.readdirSync(s.folder.dir)[0])), 'left where it is');
    assert.ok(
      s.log.lines.some((l) => /^warn attention folder .*writable by other users/.test(l)),
      s.log.lines.join('\n'),
    );
    fs.chmodSync(s.folder.dir, 0o700);
    s.inbox.take();
    await calls(s, 1);
    assert.strictEqual(s.tracker.current.state, 'waiting');
  });

  it("removes what owners that are gone left, and leaves a live owner's files", () => {
    const dir = s.folder.dir;
    const me = `${process.pid}-${table.read(process.pid)!.startKey}`;
    for (const n of [
      `to-${me}-${'1'.repeat(20)}-${'a'.repeat(16)}.msg`,
      `state-${me}-tree1.json`,
      `to-999999-5-${'1'.repeat(20)}-${'b'.repeat(16)}.msg`,
      `state-999999-5-tree2.json`,
      `.tmp-999999-${'c'.repeat(16)}`,
    ])
      fs.writeFileSync(path.join(dir, n), '{}');
    const removed = s.folder.removeLeftovers(
      (o) => table.read(o.pid)?.startKey === o.startKey,
      (pid) => table.read(pid) !== undefined,
    );
    assert.deepStrictEqual(removed.map((f) => path.basename(f)).sort(), [
      `.tmp-999999-${'c'.repeat(16)}`,
      `state-999999-5-tree2.json`,
      `to-999999-5-${'1'.repeat(20)}-${'b'.repeat(16)}.msg`,
    ]);
    assert.deepStrictEqual(fs.readdirSync(dir).sort(), [`state-${me}-tree1.json`, `to-${me}-${'1'.repeat(20)}-${'a'.repeat(16)}.msg`]);
  });
});
