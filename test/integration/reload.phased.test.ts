// Reload: phase 2 launches agents with helpers (one ignores SIGTERM) and reloads the window. Phase 3 finds
// every tree of the old extension host ended, and its cgroup removed, by its own shutdown: deactivate() and, where
// the host cut that short, the SIGKILL in its exit event. Phase 3 runs with the activation sweep off, so nothing else ended them.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { inPhase, log, reloadWindowAfterResult } from './harness';
import { api, pidFile, readHandover, writeHandover } from './fixtures';
import { FIXTURE } from '../support/repo';
import { fixturePids } from '../support/fixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

inPhase(2, 'reload: agents with helpers, then the window reloads', () => {
  it('launches agents that leave helpers behind, then asks for a reload', async function () {
    this.timeout(30_000);
    const trees = await api();
    const a = pidFile();
    const b = pidFile();
    await trees.launch({ name: 'reload-daemon', command: FIXTURE, args: ['daemon', a], timeoutSeconds: 0 });
    await trees.launch({ name: 'reload-stubborn', command: FIXTURE, args: ['ignore-term', b], timeoutSeconds: 0 });
    const pids = [...(await fixturePids(a)).all, ...(await fixturePids(b)).all];
    await writeHandover('reload', pids);
    // No sweep in the next host: whatever is dead there was ended by this host's own shutdown.
    await config().update('sweepOnActivation', false, vscode.ConfigurationTarget.Global);
    await config().update('sweepIntervalMinutes', 0, vscode.ConfigurationTarget.Global);
    log(`[reload] host ${process.pid} runs ${pids.length} processes: ${pids.join(', ')}`);
    reloadWindowAfterResult();
  });
});

inPhase(3, 'reload: the old host ended its trees as it shut down', () => {
  it('left no process of its trees, and its record goes at the next sweep, which finds nothing alive', async function () {
    this.timeout(20_000);
    const handover = await readHandover('reload');
    try {
      assert.strictEqual(config().get('sweepOnActivation'), false, 'this host did not sweep');
      assert.deepStrictEqual(handover.alive(), [], 'every helper ended with the old host');
      assert.deepStrictEqual(handover.cgroupsLeft(), [], "the old host's teardown removed its trees' cgroups");
      // Where the host cut deactivate() short, the exit event killed what was left and left the record for
      // a sweep to confirm.
      const swept = await (await api()).sweep();
      assert.strictEqual(swept.killed, 0);
      assert.ok(!fs.existsSync(handover.recordFile), `${handover.recordFile} was left behind`);
    } finally {
      await config().update('sweepOnActivation', undefined, vscode.ConfigurationTarget.Global);
      await config().update('sweepIntervalMinutes', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
