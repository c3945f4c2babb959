/**
 * Root hook of the unit and system runs: every process the run starts carries its marker (set here, when the run
 * starts), and after every test has run, nothing any test started may still be alive. A leak fails the run; the
 * leaked processes are then ended (by pid, identity checked) so they do not outlive the run either.
 */
import { processes } from './repo';
import { sleep } from './wait';
import { leakedProcesses, RUN_MARKER, startedProcesses } from './started';

if (!process.env[RUN_MARKER]) process.env[RUN_MARKER] = `${process.pid}-${Date.now()}`;

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
    const s = processes.readStat(pid);
    const recorded = startedProcesses.get(pid);
    if (s && (recorded === undefined || recorded === s.startTicks)) processes.signalIfSame(pid, s.startTicks, 'SIGKILL');
  }
  throw new Error(
    `leak check: ${leaks.length} process(es) started by the tests were still alive:\n` +
      leaks.map((l) => `  ${l.pid} ${l.command}`).join('\n'),
  );
});
