// Crash: phase 1 launches agents that leave helpers behind and SIGKILLs its own extension host, so nothing
// of the extension runs at its end. Phase 2 (same user data) finds those helpers ended by the next
// activation's sweep, and the dead host's record gone.
import * as assert from 'assert';
import * as fs from 'fs';
import { inPhase, killHostAfterResult, log, processes, waitFor } from './harness';
import { allPids, api, FIXTURE, fixturePids, pidFile, readHandover, writeHandover } from './fixtures';

inPhase(1, 'crash: an agent with helpers, then the extension host is SIGKILLed', () => {
  it('launches agents that leave a daemon and children behind', async function () {
    this.timeout(30_000);
    const trees = await api();
    const daemonPids = pidFile();
    const childPids = pidFile();
    await trees.launch({ name: 'crash-daemon', command: FIXTURE, args: ['daemon-devnull', daemonPids], timeoutSeconds: 0 });
    await trees.launch({ name: 'crash-deep', command: FIXTURE, args: ['deep', childPids], timeoutSeconds: 0 });
    const pids = [...allPids(await fixturePids(daemonPids)), ...allPids(await fixturePids(childPids))];
    await writeHandover('crash', pids);
    log(`[crash] host ${process.pid} leaves ${pids.length} processes: ${pids.join(', ')}`);
    killHostAfterResult();
  });
});

inPhase(2, 'crash: the next activation sweeps what the killed host left', () => {
  it('ends every helper of the killed host and deletes its record', async function () {
    this.timeout(30_000);
    const handover = await readHandover('crash');
    assert.ok(!processes.isAlive(handover.hostPid), 'the old host is dead');
    // The activation sweep runs in the background: wait for it, without triggering one ourselves.
    assert.ok(await waitFor(() => handover.alive().length === 0, 20_000), `still alive: ${handover.alive().join(', ')}`);
    assert.ok(await waitFor(() => !fs.existsSync(handover.recordFile), 5000), `${handover.recordFile} is still there`);
  });
});
