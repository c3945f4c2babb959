// The editor killed outright: phase 3 launches agents (a setsid child, a SIGTERM-ignoring tree) and SIGKILLs
// code-server's whole process group, its extension host included: nothing of VS Code is left to run anything.
// The host's watchdog (in a session of its own) ends the trees and removes the record; a monitor outside every
// tree timestamps it. Phase 4 checks the report: all of it was gone before phase 4's host started.
import { inPhase, killHostAfterResult, log } from './harness';
import { api, checkEndedBeforeThisHost, pidFile, watchAfterHostKill } from './fixtures';
import { FIXTURE } from '../support/repo';
import { fixturePids } from '../support/fixtures';

inPhase(3, "editor killed: agents with helpers, then code-server's whole process group is SIGKILLed", () => {
  it('launches agents that leave a setsid child and a SIGTERM-ignoring tree behind', async function () {
    this.timeout(30_000);
    const trees = await api();
    const a = pidFile();
    const b = pidFile();
    await trees.launch({ name: 'killed-setsid', command: FIXTURE, args: ['setsid', a], timeoutSeconds: 0 });
    await trees.launch({ name: 'killed-stubborn', command: FIXTURE, args: ['ignore-term', b], timeoutSeconds: 0 });
    const pids = [...(await fixturePids(a)).all, ...(await fixturePids(b)).all];
    await watchAfterHostKill('server-kill', pids);
    log(`[server-kill] host ${process.pid} runs ${pids.length} processes: ${pids.join(', ')}; killing code-server's process group next`);
    killHostAfterResult('server');
  });
});

inPhase(4, 'editor killed: what the killed host left', () => {
  it('its watchdog ended every helper and removed its record before any new window opened', async function () {
    this.timeout(60_000);
    await checkEndedBeforeThisHost('server-kill', "code-server's group was SIGKILLed");
  });
});
