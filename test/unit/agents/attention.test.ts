// An agent's attention state (src/agents/attention.ts), the keys it takes from a terminal's input
// (src/proc/pty/terminalInput.ts), and the agents' own hooks (src/agents/attentionHooks.ts): which program is which
// CLI (the real packages: test/system/agents/cliOfExecutable.test.ts), what its command line gets,
// and what each hook event means.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { Attention, AttentionTracker, terminalSignal } from '../../../src/agents/attention';
import {
  claudeHookSettings,
  cliOfExecutable,
  cliOfLaunch,
  codexConfigHasNotify,
  hookSignal,
  NotifyInvocation,
  withHooks,
} from '../../../src/agents/attentionHooks';
import { inputEffect } from '../../../src/proc';
import { tmpDir } from '../../support/repo';

const NOTIFY: NotifyInvocation = { execPath: '/usr/bin/node', cliScript: '/x/dist/cli.js', electron: false };

function tracker(): { t: AttentionTracker; changes: Attention[]; clock: { now: number } } {
  const clock = { now: 1000 };
  const changes: Attention[] = [];
  const t = new AttentionTracker(
    (a) => changes.push(a),
    () => clock.now,
  );
  return { t, changes, clock };
}

describe('attention state of an agent', () => {
  it('working until a hook says it waits, with its words; a key ends the wait', () => {
    const { t, changes, clock } = tracker();
    assert.deepStrictEqual(t.current, { state: 'working', since: 1000, waits: 0 });
    clock.now = 2000;
    t.signal({ state: 'waiting', source: 'hook', message: 'Claude needs your permission', detail: 'Bash: rm -rf x' });
    assert.deepStrictEqual(t.current, {
      state: 'waiting',
      message: 'Claude needs your permission',
      detail: 'Bash: rm -rf x',
      since: 2000,
      source: 'hook',
      waits: 1,
    });
    clock.now = 3000;
    t.input('1');
    assert.deepStrictEqual(t.current, { state: 'working', since: 3000, waits: 1 });
    assert.strictEqual(changes.length, 2);
  });

  it('a bell storm is one wait; the hook that follows gives it the words, and starts no second wait', () => {
    const { t, changes } = tracker();
    for (let i = 0; i < 1000; i++) t.signal(terminalSignal({ kind: 'bell' }));
    assert.strictEqual(t.current.waits, 1);
    assert.strictEqual(t.current.message, undefined);
    t.signal({ state: 'waiting', source: 'hook', message: 'Claude needs your permission' });
    t.signal({ state: 'waiting', source: 'hook', message: 'later words' });
    assert.strictEqual(t.current.waits, 1);
    assert.strictEqual(t.current.message, 'Claude needs your permission');
    assert.strictEqual(changes.length, 2, 'the bell, then the words');
  });

  it("the terminal's reports are not keys: answers, focus and mouse moves leave the wait; focus is remembered", () => {
    const { t } = tracker();
    t.signal({ state: 'waiting', source: 'hook' });
    for (const report of [
      '\x1b[12;40R',
      '\x1b[?62;22c',
      '\x1b[0n',
      '\x1b[?1u',
      '\x1b]11;rgb:0000/0000/0000\x1b\\',
      '\x1b[<35;10;5M',
      '\x1b[?2004;1$y',
    ]) {
      t.input(report);
      assert.strictEqual(t.current.state, 'waiting', JSON.stringify(report));
    }
    t.input('\x1b[O');
    assert.strictEqual(t.focused, false);
    t.input('\x1b[I');
    assert.strictEqual(t.focused, true);
    assert.strictEqual(t.current.state, 'waiting');
    t.input('\x1b[A'); // arrow up
    assert.strictEqual(t.current.state, 'working');
  });

  it('idle when its turn ends; a key makes it work again; an idle agent that is asked waits', () => {
    const { t } = tracker();
    t.signal({ state: 'idle', source: 'hook' });
    assert.strictEqual(t.current.state, 'idle');
    t.signal({ state: 'idle', source: 'hook', message: 'Claude is waiting for your input' });
    assert.strictEqual(t.current.message, undefined, 'the same idle spell');
    t.signal(terminalSignal({ kind: 'osc9', title: '', body: 'Approve?' }));
    assert.deepStrictEqual([t.current.state, t.current.message, t.current.source], ['waiting', 'Approve?', 'terminal']);
    t.input('y');
    assert.strictEqual(t.current.state, 'working');
  });

  it("claude's Notification gives words to the wait its PermissionRequest began, and starts none after a key ended it", () => {
    const { t } = tracker();
    t.signal({ state: 'waiting', source: 'terminal' });
    t.signal(hookSignal('claude', { name: 'Notification', type: 'permission_prompt', message: 'Claude needs your permission' })!);
    assert.strictEqual(t.current.message, 'Claude needs your permission', 'words for the wait a bell began');
    t.typed();
    t.signal(hookSignal('claude', { name: 'PermissionRequest', tool: 'Bash', toolDetail: 'rm -rf b' })!);
    t.typed();
    // Fired 6 s after the prompt showed, it may come after the key that answered it, or after the turn's end.
    t.signal(hookSignal('claude', { name: 'Notification', type: 'permission_prompt', message: 'Claude needs your permission' })!);
    assert.strictEqual(t.current.state, 'working');
    t.signal(hookSignal('claude', { name: 'Stop' })!);
    t.signal(hookSignal('claude', { name: 'Notification', type: 'permission_prompt', message: 'Claude needs your permission' })!);
    assert.deepStrictEqual([t.current.state, t.current.waits], ['idle', 2]);
  });

  it('cleans control characters out of words and bounds them', () => {
    const { t } = tracker();
    t.signal({ state: 'waiting', source: 'terminal', message: `a\x1b[31mb\n${'x'.repeat(1000)}` });
    assert.ok(![...t.current.message!].some((c) => c.charCodeAt(0) < 0x20), JSON.stringify(t.current.message));
    assert.ok(t.current.message!.length <= 300);
  });
});

describe('keys and reports in terminal input', () => {
  it('tells typing from the terminal answering, focusing or tracking the mouse', () => {
    const typed = ['a', '\r', '\x03', '\x1b', '\x1bx', '\x1b[A', '\x1b[1;5C', '\x1b[15~', '\x1bOP', '\x1b[200~paste\x1b[201~', '\x1b[97u'];
    for (const k of typed) assert.strictEqual(inputEffect(k).typed, true, JSON.stringify(k));
    const reports = [
      '\x1b[3;1R',
      '\x1b[?1;2c',
      '\x1b[>0;276;0c',
      '\x1b[0n',
      '\x1b[?0u',
      '\x1b[8;40;120t',
      '\x1b]10;rgb:ffff/ffff/ffff\x07',
      '\x1bP1$r0m\x1b\\',
      '\x1b[M !!',
      '\x1b[<0;3;4m',
      '\x1b[32;5;6M',
    ];
    for (const r of reports) assert.strictEqual(inputEffect(r).typed, false, JSON.stringify(r));
    assert.deepStrictEqual(inputEffect('\x1b[I\x1b[O'), { typed: false, focus: false });
    assert.deepStrictEqual(inputEffect('\x1b[12;40Rq'), { typed: true });
  });
});

describe("agents' own hooks", () => {
  it('a program named claude that is not the package is not Claude Code', () => {
    const dir = tmpDir();
    const script = path.join(dir, 'claude');
    fs.writeFileSync(script, '#!/bin/sh\necho fake\n', { mode: 0o755 });
    assert.strictEqual(cliOfExecutable(script).cli, undefined);
    // A package of that name whose bin is another file does not make every file in it the CLI.
    const pkg = path.join(dir, 'node_modules', '@anthropic-ai', 'claude-code');
    fs.mkdirSync(path.join(pkg, 'bin'), { recursive: true });
    fs.writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: '@anthropic-ai/claude-code', bin: { claude: 'bin/claude.exe' } }),
    );
    fs.writeFileSync(path.join(pkg, 'bin', 'other'), '#!/bin/sh\n', { mode: 0o755 });
    assert.strictEqual(cliOfExecutable(path.join(pkg, 'bin', 'other')).cli, undefined);
    fs.writeFileSync(path.join(pkg, 'bin', 'claude.exe'), '#!/bin/sh\n', { mode: 0o755 });
    fs.symlinkSync(path.join(pkg, 'bin', 'claude.exe'), path.join(dir, 'linked-claude'));
    assert.strictEqual(cliOfExecutable(path.join(dir, 'linked-claude')).cli, 'claude');
    assert.strictEqual(cliOfLaunch('none', path.join(dir, 'linked-claude')).cli, undefined, 'the definition says none');
    assert.strictEqual(cliOfLaunch('codex', script).cli, 'codex', 'the definition says which');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('Claude Code gets --settings with its three hooks, unless the command passes its own (it reads only the last)', () => {
    const r = withHooks('claude', ['--permission-mode', 'default'], NOTIFY);
    assert.ok('args' in r);
    assert.deepStrictEqual(r.args.slice(2), ['--permission-mode', 'default']);
    assert.strictEqual(r.args[0], '--settings');
    const hooks = JSON.parse(r.args[1]).hooks;
    assert.deepStrictEqual(Object.keys(hooks).sort(), ['Notification', 'PermissionRequest', 'Stop']);
    assert.strictEqual(hooks.Stop[0].hooks[0].command, `'/usr/bin/node' '/x/dist/cli.js' 'notify' '--agent' 'claude'`);
    assert.match(JSON.parse(claudeHookSettings({ ...NOTIFY, electron: true })).hooks.Stop[0].hooks[0].command, /^ELECTRON_RUN_AS_NODE=1 '/);
    assert.ok('skipped' in withHooks('claude', ['--settings', '{}'], NOTIFY));
    assert.ok('skipped' in withHooks('claude', ['--settings=/a/b.json'], NOTIFY));
  });

  it('Codex gets -c notify=[...], unless its config or its command line sets notify already', () => {
    const read = (toml: string | undefined) => () => toml;
    const r = withHooks('codex', ['exec', 'x'], NOTIFY, { env: { CODEX_HOME: '/h' }, read: read(undefined) });
    assert.ok('args' in r);
    assert.deepStrictEqual(r.args, ['-c', 'notify=["/usr/bin/node","/x/dist/cli.js","notify","--agent","codex"]', 'exec', 'x']);
    assert.ok('skipped' in withHooks('codex', [], NOTIFY, { env: { CODEX_HOME: '/h' }, read: read('model = "x"\nnotify = ["say"]\n') }));
    assert.ok('args' in withHooks('codex', [], NOTIFY, { env: { CODEX_HOME: '/h' }, read: read('[tui]\nnotify = true\n') }));
    assert.ok('skipped' in withHooks('codex', ['-c', 'notify=["x"]'], NOTIFY, { env: { CODEX_HOME: '/h' }, read: read(undefined) }));
    assert.strictEqual(codexConfigHasNotify('  notify = []'), true);
    assert.ok('skipped' in withHooks('gemini', [], NOTIFY));
  });

  it('what each hook event means', () => {
    assert.deepStrictEqual(hookSignal('claude', { name: 'PermissionRequest', tool: 'Bash', toolDetail: 'rm -rf x' }), {
      state: 'waiting',
      source: 'hook',
      message: 'Claude needs your permission',
      detail: 'Bash: rm -rf x',
    });
    assert.deepStrictEqual(
      hookSignal('claude', { name: 'Notification', type: 'permission_prompt', message: 'Claude needs your permission' }),
      {
        state: 'waiting',
        source: 'hook',
        message: 'Claude needs your permission',
        detail: undefined,
        wordsOnly: true,
      },
    );
    assert.strictEqual(
      hookSignal('claude', { name: 'Notification', type: 'idle_prompt', message: 'Claude is waiting for your input' })?.state,
      'idle',
    );
    assert.strictEqual(hookSignal('claude', { name: 'Stop' })?.state, 'idle');
    assert.strictEqual(hookSignal('claude', { name: 'Notification', type: 'auth_success', message: 'ok' }), undefined);
    assert.strictEqual(hookSignal('claude', { name: 'PreToolUse' }), undefined);
    assert.strictEqual(hookSignal('codex', { name: 'agent-turn-complete' })?.state, 'idle');
    assert.strictEqual(hookSignal('notify', { name: 'waiting', message: 'look' })?.message, 'look');
  });
});
