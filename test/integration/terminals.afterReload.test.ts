// Runs in the extension host that phase 2's reload started, in the same window (see terminals.phased.test.ts):
// the terminal VS Code kept over the reload is not an orphan. The shell and its processes are alive, the terminal
// is back in the window (matched by its shell's pid) and in the view with them, and a sweep ends nothing of it.
// Then it is closed, with onClose "end": what its shell left goes.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { ApiRow } from '../../src/extension/testHooks';
import { inPhase, processes, waitFor } from './harness';
import { api, testHooks } from './fixtures';
import { Handover, handoverFile } from './terminalFixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

function pidsUnder(row: ApiRow): number[] {
  return row.children.flatMap((c) => [...(c.target.kind === 'process' ? [c.target.pid] : []), ...pidsUnder(c)]);
}

inPhase(2, 'after the reload: the kept terminal is not an orphan', () => {
  it('finds the shell and its processes alive, the terminal back in the window and the view, and a sweep ends nothing of it', async function () {
    this.timeout(40_000);
    const trees = await api();
    const hooks = await testHooks();
    const handover: Handover = JSON.parse(fs.readFileSync(await handoverFile(), 'utf8'));
    const all = [handover.shell, ...handover.children];
    try {
      assert.deepStrictEqual(
        all.filter((p) => !processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid),
        [],
        'the reload teardown ended none of them',
      );
      let terminal: vscode.Terminal | undefined;
      for (const until = Date.now() + 20_000; !terminal && Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
        for (const t of vscode.window.terminals) if ((await t.processId) === handover.shell.pid) terminal = t;
      }
      assert.ok(terminal, `no terminal of the window has shell ${handover.shell.pid}: ${vscode.window.terminals.map((t) => t.name)}`);
      let row: ApiRow | undefined;
      const childPids = handover.children.map((c) => c.pid);
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        row = (await hooks.view()).find((r) => r.target.kind === 'terminal' && r.target.shellPid === handover.shell.pid);
        if (row && childPids.every((p) => pidsUnder(row!).includes(p))) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(row, 'the view shows the terminal again');
      assert.deepStrictEqual(
        childPids.filter((p) => !pidsUnder(row!).includes(p)),
        [],
        'with its processes under it',
      );
      await trees.sweep();
      assert.deepStrictEqual(
        all.filter((p) => !processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid),
        [],
        'the sweep ended none of them',
      );

      // Closed now, with onClose "end": what it left goes.
      terminal!.dispose();
      assert.ok(
        await waitFor(() => handover.children.every((c) => !processes.isAlive(c.pid, c.startTicks)), 15_000),
        'closing it ended what it left',
      );
    } finally {
      for (const p of all) if (processes.isAlive(p.pid, p.startTicks)) process.kill(p.pid, 'SIGKILL');
      await config().update('terminals.onClose', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
