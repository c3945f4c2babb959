// Runs in the extension host that phase 2's reload started, in the same window (see terminals.phased.test.ts):
// the terminal VS Code kept over the reload is not an orphan. The shell and its processes are alive, the terminal
// is back in the window (matched by its shell's pid) and in the view with them, and a sweep ends nothing of it.
// Then it is closed, with onClose "end": what its shell left goes.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { ApiRow } from '../../src/extension/testHooks';
import { pidsUnder } from '../support/rows';
import { inPhase } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, testHooks } from './fixtures';
import { Handover, handoverFile } from './terminalFixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

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
      const terminal = await waitFor(
        () => `a terminal of the window with shell ${handover.shell.pid} (there are ${vscode.window.terminals.map((t) => t.name)})`,
        async () => {
          for (const t of vscode.window.terminals) if ((await t.processId) === handover.shell.pid) return t;
          return undefined;
        },
        { timeoutMs: 20_000, everyMs: 200 },
      );
      let row: ApiRow | undefined;
      const childPids = handover.children.map((c) => c.pid);
      await waitFor(
        'the view to show the terminal again, with its processes',
        async () => {
          row = (await hooks.view()).find((r) => r.target.kind === 'terminal' && r.target.shellPid === handover.shell.pid);
          return row && childPids.every((p) => pidsUnder(row!).includes(p));
        },
        { timeoutMs: 20_000, everyMs: 200 },
      ).catch(() => assert.ok(row, 'the view shows the terminal again'));
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
      await waitFor('closing it ended what it left', () => handover.children.every((c) => !processes.isAlive(c.pid, c.startTicks)), 15_000);
    } finally {
      for (const p of all) if (processes.isAlive(p.pid, p.startTicks)) process.kill(p.pid, 'SIGKILL');
      await config().update('terminals.onClose', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
