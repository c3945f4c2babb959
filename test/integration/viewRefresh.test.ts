// The view's refresh in a real extension host: nothing read while the view is hidden (the status-bar countdown
// included) but the bounded look that keeps the record of other extensions' processes true, reads that follow the
// members while it is visible, and a daemon that left its tree's parent chain shown by the view and ended by a
// kill. Process reads are the extension's own count (API viewRefresh()).
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, pidFile, startOutsideHost, testHooks } from './fixtures';

async function showView(hooks: AgentTreesTestHooks, visible: boolean): Promise<void> {
  await vscode.commands.executeCommand(visible ? 'agentTrees.processTrees.focus' : 'workbench.view.explorer');
  await waitFor(
    () => `the view is ${visible ? 'shown' : 'hidden'}`,
    () => hooks.viewRefresh().visible === visible,
    10_000,
  );
}

/** Waits until `count` more status-bar countdown ticks have happened (its text changed that often). */
async function countdownTicks(hooks: AgentTreesTestHooks, count: number): Promise<void> {
  let last = hooks.statusBar().text;
  let seen = 0;
  await waitFor(
    () => `${count} countdown ticks`,
    () => {
      const text = hooks.statusBar().text;
      if (text !== last) {
        last = text;
        seen++;
      }
      return seen >= count;
    },
    (count + 3) * 1000,
  );
}

/**
 * Files the extension read in three refreshes with no full look among them (one comes every 10 s: it lists every
 * process, and every sixth reads them all, to find what left a parent chain).
 */
async function readsOfThreeTrackedRefreshes(hooks: AgentTreesTestHooks): Promise<number> {
  for (let tries = 0; tries < 10; tries++) {
    const before = hooks.viewRefresh();
    await waitFor('three refreshes', () => hooks.viewRefresh().refreshes >= before.refreshes + 3, 8000);
    const after = hooks.viewRefresh();
    if (after.fullScans === before.fullScans) return after.processReads - before.processReads;
  }
  throw new Error('every three refreshes held a full look, in ten tries');
}

/** The children of `pid` (one thread: a shell). */
function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe('Agent Trees: the view refresh in a real extension host', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  const config = () => vscode.workspace.getConfiguration('agentTrees');

  before(async () => {
    trees = await api();
    hooks = await testHooks();
    // While hidden, the view still looks at the window's terminals now and then: close any an earlier test left
    // open (ending what they run), so the hidden view has nothing at all to look at.
    await config().update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
    // (Not the agents' own terminals: closing one ends its agent's tree.)
    const shells = vscode.window.terminals.filter((t) => !('pty' in t.creationOptions));
    const closed: number[] = [];
    for (const t of shells) {
      const pid = await t.processId;
      if (pid === undefined) continue;
      closed.push(pid);
      t.dispose();
    }
    // A close reads processes (what the terminal left, then the kill): wait until each one has been handled, so
    // that none of it falls into a measurement below.
    const handled = () => closed.every((pid) => hooks.terminalClosings().some((c) => c.shellPid === pid));
    await waitFor(() => `the closes of terminals ${closed.join(', ')} handled`, handled, 30_000);
    const rows = async () => (await hooks.view()).filter((r) => r.target.kind === 'terminal').length;
    await waitFor('no terminal in the view', async () => (await rows()) === 0, { timeoutMs: 10_000, everyMs: 100 });
  });

  after(async () => {
    await showView(hooks, false);
    await config().update('terminals.onClose', undefined, vscode.ConfigurationTarget.Global);
  });

  /** Waits for 2 s without a process read (what earlier tests set going, a terminal's close, a kill, a sweep, is over). */
  async function quiet(): Promise<void> {
    let quietSince = Date.now();
    let reads = hooks.viewRefresh().processReads;
    const still = () => {
      const now = hooks.viewRefresh().processReads;
      if (now !== reads) [reads, quietSince] = [now, Date.now()];
      return Date.now() - quietSince >= 2000;
    };
    await waitFor('the reads of earlier tests are over', still, 30_000);
  }

  it('reads no process while the view is hidden; the status-bar countdown needs none', async () => {
    // Other extensions' processes off: they are looked at while hidden too (the next test).
    await config().update('otherExtensions.mode', 'off', vscode.ConfigurationTarget.Global);
    await showView(hooks, false);
    // An MCP server: no agent terminal opens (a terminal opening is looked at once, to know its shell).
    const id = await trees.launch({ name: 'far-deadline', command: 'sleep', args: ['120'], kind: 'mcp', timeoutSeconds: 600 });
    try {
      await waitFor('the countdown shows', () => hooks.statusBar().visible);
      // Wait for 2 s without a read, then count over a longer window, so a reader that comes back is caught.
      await quiet();
      const before = hooks.viewRefresh();
      await countdownTicks(hooks, 6);
      const after = hooks.viewRefresh();
      assert.strictEqual(after.refreshes, before.refreshes, 'no refresh while hidden');
      assert.strictEqual(after.processReads, before.processReads, 'no process read while hidden');
    } finally {
      assert.strictEqual((await trees.kill(id)).survivors, 0);
      await config().update('otherExtensions.mode', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it("while hidden, reads only in the look at other extensions' processes: one every 5 s, fewer files than one full scan", async function () {
    this.timeout(90_000);
    await showView(hooks, false);
    await waitFor('other extensions tracked ("end")', () => process.env.AGENT_TREES_HOST !== undefined);
    await quiet();
    const before = hooks.viewRefresh();
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 16_000));
    const after = hooks.viewRefresh();
    const looks = after.refreshes - before.refreshes;
    const windows = (Date.now() - t0) / 5000;
    assert.ok(looks >= 1 && looks <= Math.ceil(windows) + 1, `${looks} looks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const machine = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
    const perLook = (after.processReads - before.processReads) / looks;
    assert.ok(perLook < machine, `${perLook} reads a look, ${machine} processes on the machine`);
  });

  it('reads the members while visible, not the machine: 300 more processes elsewhere add next to nothing to three tracked refreshes', async () => {
    const id = await trees.launch({
      name: 'five',
      command: 'sh',
      args: ['-c', 'sleep 120 & sleep 120 & sleep 120 & sleep 120 & wait'],
      kind: 'mcp',
      timeoutSeconds: 0,
    });
    let crowd = 0;
    try {
      await showView(hooks, true);
      await waitFor('the view shows its 5 processes', () => (hooks.viewRefresh().shown[`run:${id}`] ?? []).length === 5, 10_000);
      const r0 = hooks.viewRefresh().refreshes;
      await waitFor('steady refreshing', () => hooks.viewRefresh().refreshes >= r0 + 2, 8000);
      const quiet = await readsOfThreeTrackedRefreshes(hooks);
      // Idle processes outside this host (re-parented to PID 1, no mark): none of the view's business. A refresh
      // that read the machine would read each of them; one that follows the members and the host's processes
      // reads the same as before (give or take one walk down the host's processes, every 3 s).
      const extra = 300;
      crowd = await startOutsideHost('sh', ['-c', `i=0; while [ $i -lt ${extra} ]; do sleep 600 & i=$((i+1)); done; wait`]);
      await waitFor(`${extra} idle processes`, () => childrenOf(crowd).length === extra, 20_000);
      const crowded = await readsOfThreeTrackedRefreshes(hooks);
      assert.ok(
        crowded - quiet < extra / 3,
        `three tracked refreshes read ${quiet} files, and ${crowded} with ${extra} more processes on the machine`,
      );
    } finally {
      if (crowd) process.kill(-crowd, 'SIGKILL');
      assert.strictEqual((await trees.kill(id)).survivors, 0);
    }
  });

  it('shows a daemon that left the parent chain, and Kill Agent Tree ends it at once', async () => {
    await showView(hooks, true);
    const file = pidFile();
    const go = `${file}.go`;
    const script =
      'echo "root $$" >> "$0"; while [ ! -e "$0.go" ]; do sleep 0.1; done; ' +
      'setsid -f sh -c \'echo "daemon $$" >> "$0"; exec sleep 120 </dev/null >/dev/null 2>&1\' "$0" </dev/null >/dev/null 2>&1; exec sleep 120';
    const id = await trees.launch({ name: 'escaping', command: 'sh', args: ['-c', script, file], kind: 'mcp', timeoutSeconds: 0 });
    const root = trees.list().find((t) => t.id === id)!.rootPid;
    const shown = () => hooks.viewRefresh().shown[`run:${id}`] ?? [];
    await waitFor('the view shows the root', () => shown().includes(root), 10_000);
    fs.writeFileSync(go, '');
    let daemon = 0;
    await waitFor(
      'the daemon started',
      () => {
        const m = /^daemon (\d+)$/m.exec(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
        daemon = m ? Number(m[1]) : 0;
        return daemon > 0;
      },
      10_000,
    );
    // Within the 10 s full-scan interval in the group tier (at once in the cgroup tier); waited for, not timed.
    await waitFor(
      () => `the view shows the daemon ${daemon}`,
      () => shown().includes(daemon),
      25_000,
    );
    const report = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', id);
    assert.strictEqual(report?.survivors, 0);
    await waitFor('the daemon died with its tree', () => !processes.isAlive(daemon), 5000);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
