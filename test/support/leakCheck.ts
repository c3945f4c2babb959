/**
 * Root hook: after every test has run, nothing any test started may still be alive. A leak fails the run;
 * the leaked processes are then ended (by pid, identity checked) so they do not outlive the run either.
 */
import { leakedProcesses, sleep, startedProcesses, table } from './started';

after(async function () {
  this.timeout(15_000);
  // Orphans re-parented to PID 1 are reaped lazily here (~1.6 s); give exits in flight a moment.
  let leaks = leakedProcesses();
  for (let i = 0; i < 40 && leaks.length > 0; i++) {
    await sleep(100);
    leaks = leakedProcesses();
  }
  if (leaks.length === 0) return;
  for (const { pid } of leaks) {
    const p = table.read(pid);
    const recorded = startedProcesses.get(pid);
    if (p && (recorded === undefined || recorded === p.startKey)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  throw new Error(`leak check: ${leaks.length} process(es) started by the tests were still alive:\n` +
    leaks.map((l) => `  ${l.pid} ${l.command}`).join('\n'));
});
