// Reload: phase 2 launches agents with helpers (one ignores SIGTERM) and reloads the window. Phase 3 finds
// every tree of the old extension host ended by its own shutdown: deactivate() and, where the host cut that
// short, the SIGKILL in its exit event. Its record is gone once the shutdown or the next sweep confirmed it.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { inPhase, isProcessAlive, log, procStat, reloadWindowAfterResult } from './harness';
import { allPids, api, FIXTURE, fixturePids, pidFile } from './fixtures';

interface ReloadMarker {
  hostPid: number;
  recordFile: string;
  helpers: { pid: number; startTicks: string }[];
}

async function markerFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'reload-test-marker.json');
}

inPhase(2, 'reload: agents with helpers, then the window reloads', () => {
  it('launches agents that leave helpers behind, then asks for a reload', async function () {
    this.timeout(30_000);
    const trees = await api();
    const a = pidFile();
    const b = pidFile();
    await trees.launch({ name: 'reload-daemon', command: FIXTURE, args: ['daemon', a], timeoutSeconds: 0 });
    await trees.launch({ name: 'reload-stubborn', command: FIXTURE, args: ['ignore-term', b], timeoutSeconds: 0 });
    const pids = [...allPids(await fixturePids(a)), ...allPids(await fixturePids(b))];
    const marker: ReloadMarker = {
      hostPid: process.pid,
      recordFile: path.join(trees.recordsDir, `${process.pid}.json`),
      helpers: pids.map((pid) => ({ pid, startTicks: procStat(pid)!.startTicks })),
    };
    assert.ok(fs.existsSync(marker.recordFile));
    fs.writeFileSync(await markerFile(), JSON.stringify(marker));
    // No sweep in the next host: whatever is dead there was ended by this host's own shutdown.
    await vscode.workspace.getConfiguration('agentTrees').update('sweepOnActivation', false, vscode.ConfigurationTarget.Global);
    await vscode.workspace.getConfiguration('agentTrees').update('sweepIntervalMinutes', 0, vscode.ConfigurationTarget.Global);
    log(`[reload] host ${process.pid} runs ${pids.length} processes: ${pids.join(', ')}`);
    reloadWindowAfterResult();
  });
});

inPhase(3, 'reload: the old host ended its trees as it shut down', () => {
  it('left no process of its trees and no record behind', async function () {
    this.timeout(20_000);
    const marker: ReloadMarker = JSON.parse(fs.readFileSync(await markerFile(), 'utf8'));
    assert.notStrictEqual(process.pid, marker.hostPid);
    const config = vscode.workspace.getConfiguration('agentTrees');
    try {
      assert.strictEqual(config.get('sweepOnActivation'), false, 'this host did not sweep');
      const alive = marker.helpers.filter((h) => isProcessAlive(h.pid, h.startTicks)).map((h) => h.pid);
      assert.deepStrictEqual(alive, [], 'every helper ended with the old host');
      // Where the host cut deactivate() short, the exit event killed what was left and left the record for
      // a sweep to confirm: that sweep finds nothing alive.
      const swept = await (await api()).sweep();
      assert.strictEqual(swept.killed, 0);
      assert.ok(!fs.existsSync(marker.recordFile), `${marker.recordFile} was left behind`);
    } finally {
      await config.update('sweepOnActivation', undefined, vscode.ConfigurationTarget.Global);
      await config.update('sweepIntervalMinutes', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
