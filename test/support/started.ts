/**
 * The processes the tests started: registered by pid and start time, for `aliveOf`, `waitAllDead` and the leak
 * check (test/support/leakCheck.ts), which fails a run that leaves any of them, or anything carrying the run's
 * marker, alive. Read through the harness-side process helper, never through the core the tests check.
 */
import { processes } from './repo';
import { sleep } from './wait';

/**
 * Every process a test run starts inherits this (set by the leak check when the run starts); `env -i` ones are
 * registered by pid instead.
 */
export const RUN_MARKER = 'AGENT_TREES_TEST_RUN';

/** This run's marker value (set in our environment by the leak check, or by a caller of the leak check). */
export const runId = (): string | undefined => process.env[RUN_MARKER];

/** Processes started by tests, as pid -> start time (clock ticks after boot), for the leak check. */
export const startedProcesses = new Map<number, number>();

/** Registers `pid` (while it runs) as started by a test. */
export function register(pid: number): void {
  const s = processes.readStat(pid);
  if (s) startedProcesses.set(pid, s.startTicks);
}

/** Whether `pid` runs (zombies count as dead). */
export function alive(pid: number): boolean {
  return processes.isAlive(pid);
}

/** Those of `pids` still running as the process registered under that pid (zombies count as dead). */
export function aliveOf(pids: number[]): number[] {
  return pids.filter((pid) => processes.isAlive(pid, startedProcesses.get(pid)));
}

/** Waits until none of `pids` is alive (zombies count as dead); returns those still alive at the deadline. */
export async function waitAllDead(pids: number[], timeoutMs = 5000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = aliveOf(pids);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20);
    left = aliveOf(left);
  }
  return left;
}

/** Processes alive now that were registered or carry this run's marker: what the leak check looks for. */
export function leakedProcesses(): { pid: number; command: string }[] {
  const leaks = new Map<number, string>();
  for (const [pid, startTicks] of startedProcesses) if (processes.isAlive(pid, startTicks)) leaks.set(pid, processes.commandLine(pid));
  const id = runId();
  if (id) for (const s of processes.processesWithEnv(RUN_MARKER, id)) leaks.set(s.pid, processes.commandLine(s.pid));
  // The test runner's own ancestry carries the marker too when set from outside; never count those.
  for (const pid of processes.protectedPids()) leaks.delete(pid);
  return [...leaks].map(([pid, command]) => ({ pid, command }));
}
