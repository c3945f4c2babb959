// Runs in the extension host that phase 2's reload started (see runLimits.phased.test.ts): the `agent-trees run`
// with limits that a kept terminal runs is shown again with its use against its limits, read from its record, and
// Kill Agent Tree ends it.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { inPhase } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, testHooks } from './fixtures';
import { eventually, LimitsHandover, limitsHandoverFile } from './limitsFixtures';

inPhase(2, 'after the reload: the limits of an agent-trees run in a kept terminal', () => {
  it('shows its use against its limits again, from its record, and Kill Agent Tree ends it', async function () {
    this.timeout(40_000);
    const trees = await api();
    const hooks = await testHooks();
    const handover: LimitsHandover = JSON.parse(fs.readFileSync(await limitsHandoverFile(), 'utf8'));
    const recorded = () =>
      fs
        .readdirSync(trees.recordsDir)
        .filter((f) => /^\d+\.json$/.test(f))
        .flatMap((f) => JSON.parse(fs.readFileSync(path.join(trees.recordsDir, f), 'utf8')).trees)
        .find((t: { id: string }) => t.id === handover.treeId);
    assert.deepStrictEqual(recorded()?.limits, handover.limits, 'its record carries its limits over the reload');
    let description = '';
    const shown = await eventually(async () => {
      const row = (await hooks.view()).find((r) => r.target.kind === 'windowTree' && r.target.treeId === handover.treeId);
      description = row?.description ?? '';
      return /1 of 9 processes/.test(description) && /ends after 3600 s idle/.test(description);
    }, 20_000);
    assert.ok(shown, `shown with its use against its limits: "${description}"`);
    await vscode.commands.executeCommand('agentTrees.killTree', handover.treeId);
    await waitFor('ended, and no longer recorded', () => recorded() === undefined, 20_000);
    // Its terminal closed too, and its shell gone: an open terminal of the window would share the window's tag
    // with what another suite's terminal leaves, and that would no longer be that terminal's alone to end.
    const terminal = await eventually(async () => {
      for (const t of vscode.window.terminals) if ((await t.processId) === handover.shellPid) return t;
      return undefined;
    }, 20_000);
    assert.ok(terminal, 'the kept terminal is back in the window');
    terminal.dispose();
    await waitFor('its shell ended with it', () => !processes.isAlive(handover.shellPid), 15_000);
  });
});
