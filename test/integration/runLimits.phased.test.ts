// Limits that outlive a reload: phase 2 types `agent-trees run` with limits in a terminal (VS Code keeps the
// terminal, and so the run, over the reload), and runLimits.afterReload.test.ts checks, in the host the reload
// starts, that the view shows that run's use against its limits again, from its record.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { inPhase, log, reloadWindowAfterResult } from './harness';
import { testHooks } from './fixtures';
import { eventually, LimitsHandover, limitsHandoverFile } from './limitsFixtures';

inPhase(2, 'reload with an agent-trees run with limits in a terminal', () => {
  it('types agent-trees run --max-processes 9 --idle-timeout 3600 in a terminal, sees its limits in the view, and asks for a reload', async function () {
    this.timeout(30_000);
    const hooks = await testHooks();
    const terminal = vscode.window.createTerminal({ name: 'it-limits', shellPath: '/bin/bash' });
    const shellPid = await terminal.processId;
    assert.ok(shellPid);
    terminal.sendText('agent-trees run --label limited-run --max-processes 9 --idle-timeout 3600 -- sleep 600');
    const row = await eventually(
      async () =>
        (await hooks.view()).find(
          (r) => r.label === 'limited-run' && r.target.kind === 'windowTree' && /1 of 9 processes/.test(r.description ?? ''),
        ),
      20_000,
    );
    assert.ok(row?.target.kind === 'windowTree', 'the run in the view, with its use against its limits');
    const handover: LimitsHandover = { treeId: row.target.treeId, shellPid, limits: { maxProcesses: 9, idleTimeoutSeconds: 3600 } };
    fs.writeFileSync(await limitsHandoverFile(), JSON.stringify(handover));
    log(`[limits] agent-trees run ${handover.treeId} in terminal ${shellPid}: ${row.description}`);
    reloadWindowAfterResult();
  });
});
