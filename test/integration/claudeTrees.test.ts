// The real claude's trees, against the project's model endpoint, in a real extension host: a Bash tool call that
// starts helpers outside claude (one `setsid` in a session of its own, one in the background) leaves nothing once
// the tree ends, by Kill Agent Tree, by its timeout, by claude's own exit, by closing its terminal; and
// `agent-trees run -- claude -p ...` in a script typed in an ordinary terminal exits with claude's code and leaves
// nothing. (The window's reload: claudeTrees.phased.test.ts.)
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { claudeOrWhy, claudeSession, ClaudeSession, helpersCommand, pidsIn, screenOf, turns } from './claudeFixtures';
import { api, shortKillGrace, testHooks } from './fixtures';
import { log } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';

async function eventually<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Processes by pid and start time, so a check never mistakes a reused pid for one of them. */
function identities(pids: number[]): { alive(): number[] } {
  const ids = pids.flatMap((pid) => {
    const st = processes.readStat(pid);
    return st ? [{ pid, startTicks: st.startTicks }] : [];
  });
  return { alive: () => ids.filter((p) => processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid) };
}

describe("Agent Trees: the real claude's trees end whole", function () {
  this.timeout(180_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  let claude: string;
  const sessions: ClaudeSession[] = [];

  before(async function () {
    const found = claudeOrWhy();
    if (!found.claude) {
      log(`[claude trees] skipped: ${found.why}`);
      this.skip();
    }
    claude = found.claude!;
    trees = await api();
    hooks = await testHooks();
  });
  shortKillGrace();

  after(async () => {
    for (const s of sessions) await s.close();
    // A later suite counts the terminals open: the ended runs' terminals go now, not when the view forgets them.
    for (const t of vscode.window.terminals) if (/^Agent: claude-(kill|timeout|exit)$/.test(t.name)) t.dispose();
  });

  /** Launches claude (interactive unless `args` say otherwise) with a Bash call that starts helpers; resolves once they run. */
  async function claudeWithHelpers(name: string, options: { args?: string[]; timeoutSeconds?: number } = {}) {
    const s = await claudeSession(claude, []);
    sessions.push(s);
    const helpers = helpersCommand(s.cwd);
    (s.endpoint as unknown as { push(...t: unknown[]): void }).push(turns.bash(helpers.command), turns.text('Started.'));
    // The prompt first (--allowedTools takes every word after it); the permission mode said (without it, claude
    // may start in auto mode, whose safety check needs Anthropic's servers).
    const args = options.args ?? ['start the helpers', '--permission-mode', 'default', '--allowedTools', 'Bash'];
    const id = await trees.launch({ name, command: claude, args, cwd: s.cwd, env: s.env, timeoutSeconds: options.timeoutSeconds ?? 0 });
    const helperPids = await eventually(`${name}: its helpers`, () => pidsIn(helpers.files)).catch((e: Error) => {
      throw new Error(`${e.message}; its terminal shows:\n${screenOf(hooks.output(id))}`);
    });
    const root = trees.list().find((t) => t.id === id)!.rootPid;
    const all = identities([root, ...helperPids]);
    assert.deepStrictEqual(all.alive().length >= 2, true, 'the helpers run');
    log(`[claude trees] ${name}: claude ${root}, helpers ${helperPids.join(', ')}`);
    return { id, all, helperPids };
  }

  const state = (id: string) => trees.list().find((t) => t.id === id)?.state;

  it('Kill Agent Tree: claude, its setsid helper and its background helper all end', async () => {
    const { id, all } = await claudeWithHelpers('claude-kill');
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', id);
    assert.strictEqual(result?.survivors, 0);
    await waitFor(
      () => `every process to end (alive: ${all.alive()})`,
      () => all.alive().length === 0,
      10_000,
    );
  });

  it('its timeout: the whole tree ends', async () => {
    const { id, all } = await claudeWithHelpers('claude-timeout', { timeoutSeconds: 25 });
    await eventually('the timeout', () => state(id) === 'timed out', 60_000);
    await waitFor(
      () => `every process to end (alive: ${all.alive()})`,
      () => all.alive().length === 0,
      15_000,
    );
  });

  it("claude's own exit (claude -p): what it left running ends with it", async () => {
    const { id, all, helperPids } = await claudeWithHelpers('claude-exit', { args: ['-p', 'start the helpers', '--allowedTools', 'Bash'] });
    await eventually('claude -p to exit', () => state(id) === 'exited');
    await waitFor(
      () => `every process to end (alive: ${all.alive()})`,
      () => all.alive().length === 0,
      15_000,
    );
    const ended = trees.list().find((t) => t.id === id)!;
    assert.strictEqual(ended.attention.state, 'ended');
    assert.ok(helperPids.length === 2);
  });

  it('closing its terminal: the whole tree ends', async () => {
    const { id, all } = await claudeWithHelpers('claude-close');
    const terminal = await eventually('its terminal', () => vscode.window.terminals.find((t) => t.name === 'Agent: claude-close'));
    terminal.dispose();
    await eventually('the kill', () => state(id) === 'killed');
    await waitFor(
      () => `every process to end (alive: ${all.alive()})`,
      () => all.alive().length === 0,
      15_000,
    );
  });

  it("agent-trees run -- claude -p in a script, in an ordinary terminal: claude's exit code, and nothing left", async () => {
    const s = await claudeSession(claude, []);
    sessions.push(s);
    const helpers = helpersCommand(s.cwd);
    (s.endpoint as unknown as { push(...t: unknown[]): void }).push(turns.bash(helpers.command), turns.text('Started.'));
    const script = path.join(s.cwd, 'run-claude.sh');
    const out = path.join(s.cwd, 'codes');
    fs.writeFileSync(
      script,
      [
        '#!/bin/bash',
        `agent-trees run -- "${claude}" -p 'start the helpers' --allowedTools Bash > /dev/null`,
        `echo "first=$?" >> "${out}"`,
        `agent-trees run -- "${claude}" -p 'hi' --permission-mode no-such-mode 2> /dev/null`,
        `echo "second=$?" >> "${out}"`,
      ].join('\n') + '\n',
      { mode: 0o755 },
    );
    const terminal = vscode.window.createTerminal({ name: 'claude-script', shellPath: '/bin/bash', cwd: s.cwd, env: s.env });
    terminal.sendText(`bash ${script}`);
    const codes = await eventually('the script to finish', () => {
      const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
      return /second=\d+/.test(text) ? text : undefined;
    });
    terminal.dispose();
    assert.match(codes, /^first=0$/m, 'claude -p exited 0 after its tool call');
    assert.match(codes, /^second=1$/m, "claude's own exit code for a bad option");
    const pids = pidsIn(helpers.files);
    assert.ok(pids, 'the helpers were started');
    // Left to themselves they would outlive claude (re-parented to PID 1): `run` ended them when claude exited.
    await waitFor(
      () => `every process to end (alive: ${pids.filter((p) => processes.isAlive(p))})`,
      () => pids.every((p) => !processes.isAlive(p)),
      10_000,
    );
  });
});
