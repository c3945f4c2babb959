// Agents waiting for you, with the real claude against the project's model endpoint, in a real extension host: a
// permission prompt makes it waiting with Claude's words (the API, the view, the status bar, one notification), the
// status bar's command shows its terminal, a key typed there clears it, the end of its turn makes it idle; the same
// for `agent-trees run -- claude` typed in an ordinary terminal of the window; and a forged hook call is refused.
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { formatAddress, NOTIFY_VARIABLE, parseAddress } from '../../src/agents/attentionChannel';
import type { AgentTreesApi, ApiTree } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { claudeOrWhy, claudeSession, ClaudeSession, turns } from './claudeFixtures';
import { api, shortKillGrace, testHooks } from './fixtures';
import { log } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { evaluate, hasPage, PageElement } from './workbenchPage';

declare const document: PageElement;

/** Runs in the page: each notification toast on the screen, its text and the links in it. */
function toasts(): { text: string; links: string[] }[] {
  return Array.from(document.querySelectorAll('.notifications-toasts .notification-toast .notification-list-item-message'))
    .filter((m) => m.getClientRects().length > 0)
    .map((m) => ({
      text: (m.textContent ?? '').trim(),
      links: Array.from(m.querySelectorAll('a')).map((a) => a.getAttribute('href') ?? a.getAttribute('data-href') ?? ''),
    }));
}

/** Polls `probe` every 100 ms until it returns a value; fails after `timeoutMs`, saying what it waited for. */
async function eventually<T>(
  what: string,
  probe: () => PromiseLike<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Closes the agent terminals of these (ended) runs: a later suite counts the terminals open, and an ended run
 * forgotten from the view while it runs would take its terminal along under it.
 */
function closeAgentTerminals(names: string[]): void {
  for (const t of vscode.window.terminals) if (names.some((n) => t.name === `Agent: ${n}`)) t.dispose();
}

/**
 * Waits until the "1" (yes) typed at a permission prompt took effect, typing it again every 5 s until then. The hook
 * that tells us of a prompt runs just before claude shows it, and a key that comes before the dialog takes input is
 * lost; typed again before the command ran, a key only adds to a turn still at work.
 */
async function untilAnswered(terminal: vscode.Terminal, answered: () => boolean): Promise<void> {
  for (let tries = 1; ; tries++) {
    const done = await eventually('the command run', () => answered(), 5_000).then(
      () => true,
      () => false,
    );
    if (done) return;
    if (tries === 6) throw new Error('claude took none of 6 answers to its prompt');
    log(`[attention] the prompt took no key in 5 s (try ${tries}); typing it again`);
    terminal.sendText('1', false);
  }
}

function victim(session: ClaudeSession, name: string): string {
  const dir = path.join(session.cwd, name);
  fs.mkdirSync(dir);
  return dir;
}

describe('Agent Trees: agents waiting for you (the real claude)', function () {
  this.timeout(180_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  let claude: string;
  const sessions: ClaudeSession[] = [];
  const terminals: vscode.Terminal[] = [];
  const launched: string[] = [];

  before(async function () {
    const found = claudeOrWhy();
    if (!found.claude) {
      log(`[attention] skipped: ${found.why}`);
      this.skip();
    }
    claude = found.claude!;
    trees = await api();
    hooks = await testHooks();
  });
  shortKillGrace();

  afterEach(async () => {
    // A test that failed half-way leaves nothing waiting for the next.
    for (const id of launched.splice(0)) if (tree(id)?.attention.state !== 'ended') await trees.kill(id);
    for (const t of terminals.splice(0)) t.dispose();
  });

  after(async () => {
    for (const s of sessions) await s.close();
    closeAgentTerminals(['claude-asks', 'claude-forged']);
  });

  async function launch(definition: Parameters<AgentTreesApi['launch']>[0]): Promise<string> {
    const id = await trees.launch(definition);
    launched.push(id);
    return id;
  }

  async function session(scripted: unknown[]): Promise<ClaudeSession> {
    const s = await claudeSession(claude, scripted);
    sessions.push(s);
    return s;
  }

  const tree = (id: string) => trees.list().find((t) => t.id === id);

  it("in its agent terminal: a permission prompt makes it waiting with Claude's words, counted and told once; a key clears it; its turn's end makes it idle", async () => {
    const s = await session([]);
    const [first, second] = [victim(s, 'first'), victim(s, 'second')];
    const scripted = [
      turns.bash(`rm -rf ${first} && echo removed`),
      turns.bash(`rm -rf ${second} && echo removed`),
      turns.text('Both removed.'),
    ];
    (s.endpoint as unknown as { push(...t: unknown[]): void }).push(...scripted);
    const id = await launch({
      name: 'claude-asks',
      command: claude,
      args: ['--permission-mode', 'default', 'remove them'],
      cwd: s.cwd,
      env: s.env,
      timeoutSeconds: 0,
    });
    // Another terminal in front: the agent's is not the one in use, so its wait is told.
    const other = vscode.window.createTerminal({ name: 'in front' });
    terminals.push(other);
    other.show(false);
    const waiting = await eventually('claude waiting at its first prompt', () =>
      tree(id)?.attention.state === 'waiting' ? tree(id) : undefined,
    );
    const asked = s.turnAnsweredAt(0);
    log(`[attention] waiting ${asked ? waiting.attention.since - asked : '?'} ms after the endpoint answered with the Bash call`);
    assert.strictEqual(waiting.attention.message, 'Claude needs your permission');
    assert.strictEqual(waiting.attention.source, 'hook');
    assert.match(waiting.attention.detail ?? '', new RegExp(`Bash: rm -rf ${first}`));
    assert.ok(fs.existsSync(first), 'nothing ran yet');
    const facts = hooks.attention();
    assert.match(facts.statusBar.text, /1 agent waiting/);
    assert.deepStrictEqual(facts.notifications.filter((n) => n.treeId === id).length, 1, JSON.stringify(facts.notifications));
    assert.match(facts.notifications[facts.notifications.length - 1].text, /^claude-asks is waiting for you: Claude needs your permission/);
    const rows = await hooks.view();
    assert.strictEqual(rows[0].id, `run:${id}`, 'first in the view');
    assert.match(rows[0].description ?? '', /^waiting for you: Claude needs your permission/);

    // The status bar's command shows its terminal; a key typed there answers the prompt.
    assert.strictEqual(await vscode.commands.executeCommand('agentTrees.showWaitingAgent'), id);
    await eventually('its terminal in front', () => vscode.window.activeTerminal?.name === 'Agent: claude-asks', 10_000);
    vscode.window.activeTerminal!.sendText('1', false);
    await eventually('the wait cleared by the key', () => tree(id)?.attention.state === 'working');
    await untilAnswered(vscode.window.activeTerminal!, () => !fs.existsSync(first));
    assert.strictEqual(hooks.attention().statusBar.visible, false);

    // The second prompt, its terminal in front now.
    const again = await eventually('claude waiting at its second prompt', () =>
      tree(id)?.attention.state === 'waiting' && /second/.test(tree(id)?.attention.detail ?? '') ? tree(id) : undefined,
    );
    const entry = hooks.attention().entries.find((e) => e.id === id)!;
    const told = hooks.attention().notifications.filter((n) => n.treeId === id).length;
    log(`[attention] second wait: focus as its terminal reported it: ${entry.focused}; notifications for it: ${told}`);
    assert.strictEqual(entry.focused, true, 'its terminal reported the focus (claude asks for focus reports)');
    assert.strictEqual(told, 1, 'no notification while its terminal has the focus');
    assert.ok(again.attention.since > waiting.attention.since);
    vscode.window.activeTerminal!.sendText('1', false);
    await untilAnswered(vscode.window.activeTerminal!, () => !fs.existsSync(second));
    await eventually('claude idle at the end of its turn', () => tree(id)?.attention.state === 'idle').catch((e: Error) => {
      // Say which side lost it: the state and the hook calls taken (a key lost by claude leaves no Stop among them).
      const calls = hooks.attention().hookCalls.map((c) => c.event ?? '?');
      // eslint-disable-next-line no-control-regex -- escape sequences out of the screen's text
      const screen = (hooks.output(id) ?? '').replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g, '').slice(-400);
      const command = fs.existsSync(second) ? 'not run' : 'run';
      throw new Error(
        `${e.message}; attention ${JSON.stringify(tree(id)?.attention)}; hook calls ${calls.join(', ')}; second command ${command}; screen ends ${JSON.stringify(screen)}`,
      );
    });
    assert.ok(!fs.existsSync(second));
    await trees.kill(id);
    await eventually('the run ended', () => tree(id)?.attention.state === 'ended');
  });

  it('agent-trees run -- claude typed in a terminal of the window: waiting shown in the window, a key typed there clears it', async () => {
    const s = await session([]);
    const target = victim(s, 'target');
    (s.endpoint as unknown as { push(...t: unknown[]): void }).push(turns.bash(`rm -rf ${target} && echo removed`), turns.text('Removed.'));
    const terminal = vscode.window.createTerminal({ name: 'claude-cli', shellPath: '/bin/bash', cwd: s.cwd, env: s.env });
    terminals.push(terminal);
    terminal.show(false);
    terminal.sendText(`agent-trees run --label claude-cli -- ${claude} --permission-mode default 'remove it'`);
    const entry = await eventually('the run waiting, in the window', () =>
      hooks.attention().entries.find((e) => e.kind === 'windowTree' && e.name === 'claude-cli' && e.attention.state === 'waiting'),
    );
    const asked = s.turnAnsweredAt(0);
    log(`[attention] agent-trees run: waiting ${asked ? entry.attention.since - asked : '?'} ms after the endpoint answered`);
    assert.strictEqual(entry.attention.message, 'Claude needs your permission');
    assert.match(hooks.attention().statusBar.text, /1 agent waiting/);
    const row = await eventually('its row first, waiting', async () => {
      const rows = await hooks.view();
      return rows[0]?.id === `window:${entry.id}` ? rows[0] : undefined;
    });
    assert.match(row.description ?? '', /^agent-trees run · waiting for you: Claude needs your permission/);
    terminal.sendText('1', false);
    await eventually('the wait cleared by the key typed in its terminal', () =>
      hooks.attention().entries.find((e) => e.id === entry.id && e.attention.state !== 'waiting'),
    );
    await untilAnswered(terminal, () => !fs.existsSync(target));
    const pids = (await hooks.view()).find((r) => r.id === `window:${entry.id}`);
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', entry.id);
    assert.strictEqual(result?.survivors, 0);
    await eventually(
      'the run gone from the attention folder',
      () => !fs.readdirSync(hooks.attention().folder).some((n) => n.includes(entry.id)),
    );
    assert.ok(pids, 'it was shown');
  });

  it('a forged hook call (the right tree, a wrong key) is refused and logged, and shows nothing', async () => {
    const s = await session([turns.text('Hello.')]);
    const id = await launch({ name: 'claude-forged', command: claude, args: ['hi'], cwd: s.cwd, env: s.env, timeoutSeconds: 0 });
    const root = (t: ApiTree | undefined) => t?.rootPid;
    const pid = await eventually('its root', () => root(tree(id)));
    // What a process of the tree can read: the variable in claude's environment (once it runs, not its launcher).
    const address = await eventually(`${NOTIFY_VARIABLE} in claude's environment`, () => {
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (!environ.includes(`AGENT_TREES_TREE_ID=${id}`)) return undefined;
      return parseAddress(environ.find((e) => e.startsWith(`${NOTIFY_VARIABLE}=`))?.slice(NOTIFY_VARIABLE.length + 1));
    });
    const forged = formatAddress({ ...address, key: '0'.repeat(32) });
    const cli = path.join(vscode.extensions.getExtension('agent-trees.agent-trees')!.extensionPath, 'dist', 'cli.js');
    const { spawnSync } = await import('child_process');
    const r = spawnSync(process.execPath, [cli, 'notify', '--message', 'forged'], {
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', [NOTIFY_VARIABLE]: forged, AGENT_TREES_TREE_ID: id },
      encoding: 'utf8',
    });
    assert.strictEqual(r.status, 0, r.stderr);
    const refused = await eventually('the call refused', () =>
      hooks.attention().hookCalls.find((c) => c.tree === id && /does not carry that tree's key/.test(c.refused ?? '')),
    );
    assert.ok(refused);
    assert.notStrictEqual(tree(id)?.attention.state, 'waiting');
    assert.ok(!hooks.attention().notifications.some((n) => n.text.includes('forged')));
    await trees.kill(id);
    await waitFor('the condition', () => !processes.isAlive(pid), 10_000);
  });
});

describe("Agent Trees: an agent's terminal notifications (bells, OSC 9)", function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;

  before(async () => {
    trees = await api();
    hooks = await testHooks();
  });
  shortKillGrace();

  it('a bell storm is one wait and one notification; a key ends it; the OSC 9 after it is a new wait, with its words', async () => {
    // Once told to start (another terminal in front by then): 500 lines, each with a bell; then it reads a line,
    // and asks again with OSC 9 (ST-terminated).
    const go = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-storm-')), 'go');
    const script = [
      `while [ ! -e '${go}' ]; do sleep 0.1; done`,
      `for i in $(seq 500); do printf 'line %d\\a\\n' "$i"; done`,
      'read -r answer',
      `printf '\\033]9;Need more input\\033\\\\'`,
      'exec sleep 300',
    ].join('; ');
    const id = await trees.launch({ name: 'bell-storm', command: '/bin/sh', args: ['-c', script], timeoutSeconds: 0 });
    const other = vscode.window.createTerminal({ name: 'in front of the storm' });
    other.show(false);
    await eventually('the other terminal in front', () => vscode.window.activeTerminal === other, 10_000);
    fs.writeFileSync(go, '');
    const tree = () => trees.list().find((t) => t.id === id)!;
    try {
      await eventually('waiting from the bells', () => tree().attention.state === 'waiting', 20_000);
      await eventually('all 500 lines out', () => (hooks.output(id) ?? '').includes('line 500'), 20_000);
      const told = () => hooks.attention().notifications.filter((n) => n.treeId === id);
      assert.strictEqual(told().length, 1, JSON.stringify(told()));
      assert.strictEqual(tree().attention.source, 'terminal');
      assert.strictEqual(tree().attention.message, null, 'a bell has no words');
      vscode.window.terminals.find((t) => t.name === 'Agent: bell-storm')!.sendText('yes', true);
      const again = await eventually(
        'the OSC 9 wait',
        () => (tree().attention.state === 'waiting' && tree().attention.message === 'Need more input' ? tree() : undefined),
        20_000,
      );
      assert.ok(again.attention.since > 0);
      assert.strictEqual(told().length, 2, 'one more notification for the new wait');
      assert.match(told()[1].text, /^bell-storm is waiting for you: Need more input$/);
    } finally {
      other.dispose();
      await trees.kill(id);
      closeAgentTerminals(['bell-storm']);
    }
  });

  it("an agent's words cannot put a link in its notification: a command link in an OSC 9 shows as text", async function () {
    if (!hasPage()) this.skip(); // the notification is read through the host runner's page
    // Any program of the tree (or a file it prints) writes the words; VS Code's notifications run command links.
    const words = 'Approve? [Open settings](command:workbench.action.openSettings) or [docs](https://example.com)';
    const go = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-link-')), 'go');
    const script = `while [ ! -e '${go}' ]; do sleep 0.1; done; printf '\\033]9;%s\\007' '${words}'; exec sleep 300`;
    const id = await trees.launch({ name: 'link-words', command: '/bin/sh', args: ['-c', script], timeoutSeconds: 0 });
    const other = vscode.window.createTerminal({ name: 'in front of the link' });
    other.show(false);
    await eventually('the other terminal in front', () => vscode.window.activeTerminal === other, 10_000);
    fs.writeFileSync(go, '');
    try {
      await eventually('waiting with its words', () => trees.list().find((t) => t.id === id)?.attention.state === 'waiting', 20_000);
      const toast = await eventually('its notification on the screen', async () =>
        (await evaluate(toasts)).find((t) => t.text.startsWith('link-words is waiting for you')),
      );
      assert.deepStrictEqual(toast.links, [], JSON.stringify(toast));
      assert.match(toast.text, /\[Open settings\].*\(command:workbench\.action\.openSettings\)/, 'the words are shown as text');
    } finally {
      other.dispose();
      await trees.kill(id);
      closeAgentTerminals(['link-words']);
      await vscode.commands.executeCommand('notifications.clearAll');
    }
  });
});
