// Crash: phase 1 launches agents (a setsid child, a SIGTERM-ignoring tree, a /dev/null daemon) and SIGKILLs its own
// extension host, so nothing of the extension runs at its end, and code-server is frozen: no window opens
// again until the runner has torn it down and started phase 2. The host's watchdog ends the trees and removes the
// record meanwhile; a monitor outside every tree timestamps it. Phase 2 checks the monitor's report: all of it was
// gone before phase 2's host even started.
// The fallback: phase 1 also leaves an owner without a watchdog (test/fixtures/owner.js), SIGKILLed; the next
// activation's sweep must reap its tree.
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { inPhase, killHostAfterResult, log } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, checkEndedBeforeThisHost, PHASE_OUTLIVING_S, pidFile, watchAfterHostKill } from './fixtures';
import { FIXTURE, REPO } from '../support/repo';
import { fixturePids } from '../support/fixtures';

interface Fallback {
  ownerPid: number;
  recordFile: string;
  helpers: { pid: number; startTicks: number }[];
}

async function fallbackFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'crash-fallback.json');
}

inPhase(1, 'crash: agents with helpers, then the extension host is SIGKILLed', () => {
  it('launches agents that leave a setsid child, a SIGTERM-ignoring tree and a daemon behind', async function () {
    this.timeout(30_000);
    const trees = await api();
    const files = { setsid: pidFile(), stubborn: pidFile(), daemon: pidFile() };
    // The rest of phase 1 runs before the host is killed: the trees must still be there then.
    const env = { LIFETIME: String(PHASE_OUTLIVING_S) };
    await trees.launch({ name: 'crash-setsid', command: FIXTURE, args: ['setsid', files.setsid], env, timeoutSeconds: 0 });
    await trees.launch({ name: 'crash-stubborn', command: FIXTURE, args: ['ignore-term', files.stubborn], env, timeoutSeconds: 0 });
    await trees.launch({ name: 'crash-daemon', command: FIXTURE, args: ['daemon-devnull', files.daemon], env, timeoutSeconds: 0 });
    const pids = [
      ...(await fixturePids(files.setsid)).all,
      ...(await fixturePids(files.stubborn)).all,
      ...(await fixturePids(files.daemon)).all,
    ];
    await watchAfterHostKill('crash', pids);
    log(`[crash] host ${process.pid} leaves ${pids.length} processes: ${pids.join(', ')}`);
    killHostAfterResult();
  });

  it('leaves an owner without a watchdog, SIGKILLed with its tree running, for the next activation to sweep', async function () {
    this.timeout(30_000);
    const trees = await api();
    const pids = pidFile();
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), trees.recordsDir, 'setsid', pids, 'auto'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', WATCHDOG_CLI: '', LIFETIME: String(PHASE_OUTLIVING_S) },
    });
    const [, , watchdog] = (await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d)))))
      .trim()
      .split(' ');
    assert.strictEqual(watchdog, '0', 'no watchdog');
    const helpers = (await fixturePids(pids)).all;
    const fallback: Fallback = {
      ownerPid: owner.pid!,
      recordFile: path.join(trees.recordsDir, `${owner.pid}.json`),
      helpers: helpers.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks })),
    };
    owner.kill('SIGKILL');
    await waitFor('the owner to be gone', () => !processes.isAlive(owner.pid!));
    assert.ok(fs.existsSync(fallback.recordFile));
    fs.writeFileSync(await fallbackFile(), JSON.stringify(fallback));
  });
});

inPhase(2, 'crash: what the killed host left', () => {
  it('its watchdog ended every helper and removed its record before any new window opened', async function () {
    this.timeout(60_000);
    await checkEndedBeforeThisHost('crash', "the host's SIGKILL");
  });

  it('the activation sweep reaps the tree of an owner that had no watchdog', async function () {
    this.timeout(30_000);
    const fallback: Fallback = JSON.parse(fs.readFileSync(await fallbackFile(), 'utf8'));
    const alive = () => fallback.helpers.filter((h) => processes.isAlive(h.pid, h.startTicks)).map((h) => h.pid);
    // The activation sweep runs in the background: wait for it, without triggering one ourselves.
    await waitFor(
      () => `still alive: ${alive().join(', ')}`,
      () => alive().length === 0,
      20_000,
    );
    await waitFor(
      () => `${fallback.recordFile} is still there`,
      () => !fs.existsSync(fallback.recordFile),
      5000,
    );
  });
});
