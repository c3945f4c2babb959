// Crash: phase 1 launches an agent that leaves helpers behind and SIGKILLs its own extension host, so nothing
// of the extension runs at its end. Phase 2 (same user data) finds those helpers ended by the next
// activation's sweep, and the dead host's record gone.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { inPhase, isProcessAlive, killHostAfterResult, log, procStat, waitFor } from './harness';
import { allPids, api, FIXTURE, fixturePids, pidFile } from './fixtures';

interface CrashMarker {
  hostPid: number;
  recordFile: string;
  helpers: { pid: number; startTicks: string }[];
}

async function markerFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'crash-test-marker.json');
}

inPhase(1, 'crash: an agent with helpers, then the extension host is SIGKILLed', () => {
  it('launches an agent that leaves a daemon and children behind', async function () {
    this.timeout(30_000);
    const trees = await api();
    const daemonPids = pidFile();
    const childPids = pidFile();
    await trees.launch({ name: 'crash-daemon', command: FIXTURE, args: ['daemon-devnull', daemonPids], timeoutSeconds: 0 });
    await trees.launch({ name: 'crash-deep', command: FIXTURE, args: ['deep', childPids], timeoutSeconds: 0 });
    const pids = [...allPids(await fixturePids(daemonPids)), ...allPids(await fixturePids(childPids))];
    const recordFile = path.join(trees.recordsDir, `${process.pid}.json`);
    assert.ok(fs.existsSync(recordFile));
    const marker: CrashMarker = { hostPid: process.pid, recordFile, helpers: pids.map((pid) => ({ pid, startTicks: procStat(pid)!.startTicks })) };
    fs.writeFileSync(await markerFile(), JSON.stringify(marker));
    log(`[crash] host ${process.pid} leaves ${pids.length} processes: ${pids.join(', ')}`);
    killHostAfterResult();
  });
});

inPhase(2, 'crash: the next activation sweeps what the killed host left', () => {
  it('ends every helper of the killed host and deletes its record', async function () {
    this.timeout(30_000);
    const marker: CrashMarker = JSON.parse(fs.readFileSync(await markerFile(), 'utf8'));
    assert.notStrictEqual(process.pid, marker.hostPid);
    assert.ok(!isProcessAlive(marker.hostPid), 'the old host is dead');
    // The activation sweep runs in the background: wait for it, without triggering one ourselves.
    const alive = () => marker.helpers.filter((h) => isProcessAlive(h.pid, h.startTicks)).map((h) => h.pid);
    assert.ok(await waitFor(() => alive().length === 0, 20_000), `still alive: ${alive().join(', ')}`);
    assert.ok(await waitFor(() => !fs.existsSync(marker.recordFile), 5000), `${marker.recordFile} is still there`);
  });
});
