// The window's terminals in a real extension host: a bash terminal made with createTerminal starts a setsid child,
// a child that ignores SIGHUP and a double-forked daemon; the view's data shows them under the terminal; closing
// it ends, keeps or asks about them by agentTrees.terminals.onClose (the "ask" notification is answered through
// the API: terminalQuestions() / answerTerminalQuestion()); "End Everything Under This Terminal" spares the shell;
// and `agent-trees run`, typed in a terminal, is an owned tree of the window: shown, killable, timed out, swept.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks, ApiRow } from '../../src/extension/testHooks';
import { pidsUnder } from '../support/rows';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, pidFile, shortKillGrace, testHooks } from './fixtures';
import { fixturePids } from '../support/fixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

/** How the terminal tests wait: every 100 ms (each look asks the extension), up to 15 s. */
const EVENTUALLY = { timeoutMs: 15_000, everyMs: 100 };

/** Processes a test started, by pid and start time, so cleanup never hits a reused pid. */
class Started {
  private readonly procs: { pid: number; startTicks: number }[] = [];
  add(pids: number[]): void {
    for (const pid of pids) {
      const st = processes.readStat(pid);
      if (st) this.procs.push({ pid, startTicks: st.startTicks });
    }
  }
  alive(): number[] {
    return this.procs.filter((p) => processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid);
  }
  async cleanUp(): Promise<void> {
    for (const p of this.procs) if (processes.isAlive(p.pid, p.startTicks)) process.kill(p.pid, 'SIGKILL');
    await waitFor(
      () => `left alive: ${this.alive()}`,
      () => this.alive().length === 0,
      5000,
    );
  }
}

interface Shell {
  terminal: vscode.Terminal;
  pid: number;
  /** setsid child, SIGHUP-ignoring child, double-forked daemon, by role. */
  roles: Map<string, number[]>;
  children: number[];
  /**
   * `setsid -w`'s own process, which waits for the setsid child: the hang-up ends it, but it may still be alive, and
   * so be listed as left, when the close is handled.
   */
  waiter: number;
}

/** What a closed terminal left, by pid: its children, and its `setsid -w` waiter where that had not exited yet. */
function assertLeft(shell: Shell, left: { pid: number }[], message?: string): void {
  const pids = left.map((p) => p.pid).filter((pid) => pid !== shell.waiter);
  assert.deepStrictEqual(pids.sort(), [...shell.children].sort(), message);
}

/** A bash terminal that started the three kinds of processes a closing terminal leaves behind. */
async function shellWithChildren(name: string, started: Started): Promise<Shell> {
  const terminal = vscode.window.createTerminal({ name, shellPath: '/bin/bash' });
  const pid = await waitFor('the shell pid', () => terminal.processId, EVENTUALLY);
  started.add([pid]);
  const file = pidFile();
  // One line, typed as a user would: each process writes "role pid" to the file, then "ready".
  terminal.sendText(
    [
      `F=${file};`,
      `setsid -w sh -c 'echo "setsid $$" >> "$1"; exec sleep 300' x "$F" & echo "waiter $!" >> "$F";`,
      `sh -c 'trap "" HUP; echo "nohup $$" >> "$1"; exec sleep 300' x "$F" &`,
      `setsid -f sh -c 'echo "daemon $$" >> "$1"; exec sleep 300' x "$F";`,
      `sleep 0.3; echo "ready $$" >> "$F"`,
    ].join(' '),
  );
  const { roles } = await fixturePids(file);
  roles.delete('shell');
  const waiter = roles.get('waiter')![0];
  roles.delete('waiter');
  const children = [...roles.values()].flat();
  started.add([...children, waiter]);
  return { terminal, pid, roles, children, waiter };
}

async function terminalRow(hooks: AgentTreesTestHooks, shellPid: number): Promise<ApiRow | undefined> {
  return (await hooks.view()).find((r) => r.target.kind === 'terminal' && r.target.shellPid === shellPid);
}

/** Waits until the view shows every child under the shell's terminal (so they were seen while it was open). */
async function seenUnderTerminal(hooks: AgentTreesTestHooks, shell: Shell): Promise<ApiRow> {
  return waitFor(
    `the children ${shell.children} under terminal ${shell.pid}`,
    async () => {
      const row = await terminalRow(hooks, shell.pid);
      return row && shell.children.every((pid) => pidsUnder(row).includes(pid)) ? row : undefined;
    },
    EVENTUALLY,
  );
}

describe("Agent Trees: the window's terminals", function () {
  this.timeout(90_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  let started: Started;

  before(async () => {
    trees = await api();
    hooks = await testHooks();
  });
  shortKillGrace();

  beforeEach(() => {
    started = new Started();
  });

  afterEach(async () => {
    await started.cleanUp();
  });

  after(async () => {
    await config().update('terminals.onClose', undefined, vscode.ConfigurationTarget.Global);
  });

  async function closeAndFind(shell: Shell) {
    shell.terminal.dispose();
    return waitFor(
      'the close to be handled',
      () => hooks.terminalClosings().find((c) => c.shellPid === shell.pid && c.outcome !== 'asked'),
      EVENTUALLY,
    );
  }

  it("gives every terminal the window's tag and agent-trees on its PATH; the view shows the shell, the setsid child, the SIGHUP-ignoring child and the daemon under it; End Everything spares the shell", async () => {
    await config().update('terminals.onClose', 'keep', vscode.ConfigurationTarget.Global);
    const shell = await shellWithChildren('it-view', started);
    const environ = fs.readFileSync(`/proc/${shell.pid}/environ`, 'utf8').split('\0');
    assert.ok(environ.includes(`AGENT_TREES_WINDOW=${trees.windowId}`), 'the shell carries the window tag');
    assert.ok(environ.includes(`AGENT_TREES_RECORDS=${trees.recordsDir}`), 'and the records folder');
    const which = pidFile();
    shell.terminal.sendText(`command -v agent-trees > ${which}`);
    await waitFor(
      'agent-trees is on the PATH',
      () => fs.existsSync(which) && fs.readFileSync(which, 'utf8').trim().endsWith('/bin/agent-trees'),
      10_000,
    );

    const row = await seenUnderTerminal(hooks, shell);
    assert.strictEqual(row.label, 'it-view');
    assert.strictEqual(row.contextValue, 'terminal');
    assert.match(row.description ?? '', new RegExp(`^shell ${shell.pid} · \\d+ processes`));
    assert.deepStrictEqual(
      row.children.find((c) => c.target.kind === 'process' && c.target.pid === shell.pid)?.contextValue,
      'process',
      'the shell is a row of its own',
    );

    const shellKey = row.target.kind === 'terminal' ? row.target.shellKey : '';
    const report = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.endTerminal', shellKey);
    assert.strictEqual(report?.survivors, 0);
    assert.ok(report!.signalled >= 3, `signalled ${report?.signalled}`);
    await waitFor(
      () => `alive: ${shell.children.filter((p) => processes.isAlive(p))}`,
      () => shell.children.every((pid) => !processes.isAlive(pid)),
      10_000,
    );
    assert.ok(processes.isAlive(shell.pid), 'the shell was spared');
    shell.terminal.sendText('echo still here');
    const closing = await closeAndFind(shell);
    assert.deepStrictEqual(closing.left, [], 'nothing was left to close with');
  });

  it('onClose "end": closing the terminal ends everything its shell left running', async () => {
    await config().update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
    const shell = await shellWithChildren('it-end', started);
    await seenUnderTerminal(hooks, shell);
    const closing = await closeAndFind(shell);
    assert.strictEqual(closing.outcome, 'ended');
    assertLeft(shell, closing.left, 'the log lists exactly what was left');
    await waitFor(
      () => `alive: ${started.alive()}`,
      () => started.alive().length === 0,
      10_000,
    );
  });

  it('onClose "keep": closing the terminal leaves them running (and the log lists them)', async () => {
    await config().update('terminals.onClose', 'keep', vscode.ConfigurationTarget.Global);
    const shell = await shellWithChildren('it-keep', started);
    await seenUnderTerminal(hooks, shell);
    const closing = await closeAndFind(shell);
    assert.strictEqual(closing.outcome, 'kept');
    assertLeft(shell, closing.left);
    assert.ok(!processes.isAlive(shell.pid), 'the shell exited on the hang-up');
    assert.deepStrictEqual(
      shell.children.filter((p) => !processes.isAlive(p)),
      [],
      'all kept',
    );
    // afterEach ends them.
  });

  it('onClose "ask": one notification names what is left; answering "Always End" ends them and sets "end"', async () => {
    await config().update('terminals.onClose', 'ask', vscode.ConfigurationTarget.Global);
    const shell = await shellWithChildren('it-ask', started);
    await seenUnderTerminal(hooks, shell);
    shell.terminal.dispose();
    const question = await waitFor('the question', () => hooks.terminalQuestions().find((q) => q.shellPid === shell.pid), EVENTUALLY);
    const command = '(sleep 300|(setsid -w )?sh -c .*)';
    assert.match(
      question.message,
      new RegExp(`^Terminal 'it-ask' left ${question.processes.length} processes running: ${command}(, ${command})*$`),
    );
    assertLeft(shell, question.processes);
    assert.deepStrictEqual(
      shell.children.filter((p) => !processes.isAlive(p)),
      [],
      'nothing is ended before the answer',
    );
    const closing = await hooks.answerTerminalQuestion(question.id, 'always');
    assert.strictEqual(closing?.answer, 'always');
    assert.strictEqual(closing?.report?.survivors, 0);
    await waitFor(
      () => `alive: ${started.alive()}`,
      () => started.alive().length === 0,
      10_000,
    );
    assert.strictEqual(config().get('terminals.onClose'), 'end');
    assert.deepStrictEqual(
      hooks.terminalQuestions().filter((q) => q.shellPid === shell.pid),
      [],
    );
  });

  it('agent-trees run typed in a terminal is an owned tree of the window: shown with its countdown, and it dies at its --timeout', async () => {
    await config().update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
    const terminal = vscode.window.createTerminal({ name: 'it-cli', shellPath: '/bin/bash' });
    started.add([await waitFor('the shell pid', () => terminal.processId, EVENTUALLY)]);
    const file = pidFile();
    terminal.sendText(
      `agent-trees run --timeout 6 --label it-cli-run -- sh -c 'echo "root $$" >> "$1"; sleep 300 & echo "ready $!" >> "$1"; wait' x ${file}`,
    );
    const { roles } = await fixturePids(file);
    const root = roles.get('root')![0];
    started.add([root]);
    const row = await waitFor(
      'the run in the view',
      async () => (await hooks.view()).find((r) => r.target.kind === 'windowTree' && r.label === 'it-cli-run'),
      EVENTUALLY,
    );
    assert.strictEqual(row.contextValue, 'windowTree.live.deadline');
    assert.match(row.description ?? '', /^agent-trees run · 0:0\d left · \d+ processes/);
    assert.ok(pidsUnder(row).includes(root));
    await waitFor('the tree died at its timeout', () => !processes.isAlive(root), 20_000);
    await waitFor(
      'the run gone from the view',
      async () => !(await hooks.view()).some((r) => r.target.kind === 'windowTree' && r.label === 'it-cli-run'),
      EVENTUALLY,
    );
    terminal.dispose();
  });

  it('agent-trees run in a terminal is killable from the view, and swept once its owner was SIGKILLed', async () => {
    await config().update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
    const terminal = vscode.window.createTerminal({ name: 'it-cli-kill', shellPath: '/bin/bash' });
    started.add([await waitFor('the shell pid', () => terminal.processId, EVENTUALLY)]);
    // The crashed run has no watchdog: that would end its tree within a second of the SIGKILL (tested elsewhere),
    // and this test is about the sweep finding it.
    const run = async (label: string, options = '') => {
      const file = pidFile();
      terminal.sendText(
        `agent-trees run ${options}--label ${label} -- sh -c 'echo "root $$" >> "$1"; setsid -f sleep 300; echo "ready $$" >> "$1"; exec sleep 300' x ${file} &`,
      );
      const root = (await fixturePids(file)).roles.get('root')![0];
      started.add([root]);
      const row = await waitFor(
        `${label} in the view`,
        async () => (await hooks.view()).find((r) => r.target.kind === 'windowTree' && r.label === label),
        EVENTUALLY,
      );
      started.add(pidsUnder(row));
      return { root, row };
    };

    const killed = await run('it-cli-killed');
    const treeId = killed.row.target.kind === 'windowTree' ? killed.row.target.treeId : '';
    const report = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', treeId);
    assert.strictEqual(report?.survivors, 0);
    await waitFor('the whole tree, the setsid daemon too, died', () => pidsUnder(killed.row).every((p) => !processes.isAlive(p)), 10_000);

    const crashed = await run('it-cli-crashed', '--no-watchdog ');
    const owner = crashed.row.target.kind === 'windowTree' ? crashed.row.target.ownerPid : 0;
    process.kill(owner, 'SIGKILL');
    await waitFor('the owner to be gone', () => !processes.isAlive(owner), 5000);
    assert.ok(processes.isAlive(crashed.root), 'the tree outlived its owner');
    const swept = await trees.sweep();
    assert.ok(swept.killed >= 2, `swept ${swept.killed}`);
    await waitFor('the sweep ended the orphaned tree', () => pidsUnder(crashed.row).every((p) => !processes.isAlive(p)), 10_000);
    terminal.dispose();
  });
});
