/**
 * Killing a tree or a subtree on Windows: no groups or signals. `taskkill /T` walks the tree from its top
 * process (so that one must still run); first without /F (a close request), then with /F after the grace
 * period, then the top process itself. Every call is bounded.
 *
 * ps-list gives no start times, so a pid proves nothing on its own: only the owner that spawned a tree (and
 * holds its root's handle) may kill on Windows. A sweep of another owner's tree is refused.
 */
import { ExecAsync } from '../platform/execAsync';
import { ProcessTable } from '../platform/processTable';
import { emptyReport, KillOptions, KillPhase, KillReport, KillTarget, targetId } from './killTarget';

/** Longest any taskkill call may take: a stalled taskkill must never stretch the caller's own timeout. */
export const TASKKILL_TIMEOUT_MS = 3000;

export interface WindowsKillDeps {
  /** The ps-list table, refreshed before each look at a subtree's top process. */
  table: ProcessTable;
  exec: ExecAsync;
  /** Ends one process directly, when taskkill /F did not. */
  killProcess: (pid: number) => void;
}

const NOT_PROVABLE_ON_WINDOWS = 'on Windows only the owner that spawned a tree can prove its processes (ps-list gives no start times)';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Pids that taskkill reports as ended or asked to end (its `SUCCESS: ... PID n ...` lines). */
function taskkillPids(stdout: string): number[] {
  const pids: number[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const m = /^SUCCESS:.*?PID (\d+)/.exec(line);
    if (m) pids.push(Number(m[1]));
  }
  return pids;
}

export async function killWindows(
  target: KillTarget,
  options: KillOptions,
  deps: WindowsKillDeps,
  onPhase: (phase: KillPhase) => void = () => {},
): Promise<KillReport> {
  const report = emptyReport(targetId(target));
  if (target.kind === 'members') {
    report.refused.push(`${report.treeId}: on Windows only a tree or a process and its children can be ended (taskkill /T)`);
    return report;
  }
  if (!options.continuouslyOwned) {
    report.refused.push(`${report.treeId}: ${NOT_PROVABLE_ON_WINDOWS}`);
    return report;
  }
  const top = target.kind === 'tree' ? target.tree.rootPid : target.pid;
  const isAlive = await topProcessWatch(target, options, deps);
  if (!(await isAlive())) return report;
  const ended = new Set<number>();
  const taskkill = async (force: boolean) => {
    const r = await deps.exec('taskkill', force ? ['/T', '/F', '/PID', String(top)] : ['/T', '/PID', String(top)], TASKKILL_TIMEOUT_MS);
    for (const pid of taskkillPids(r.stdout)) ended.add(pid);
  };
  onPhase('terminate');
  await taskkill(false);
  ended.add(top);
  const deadline = Date.now() + options.graceMs;
  while ((await isAlive()) && Date.now() < deadline) await sleep(50);
  if (await isAlive()) {
    report.escalated = true;
    onPhase('escalate');
    await taskkill(true);
    if (await isAlive()) deps.killProcess(top);
    await sleep(100);
  }
  report.signalled = ended.size;
  if (await isAlive()) {
    report.survivors = 1;
    report.survivorPids = [top];
  }
  return report;
}

/**
 * How the kill tells whether its top process still runs: for a tree, its owner's handle on the root; for a
 * subtree, a fresh listing in which the pid still has the parent and name it had when the kill began (no start
 * times here), and once it is gone it stays gone, so a reused pid is never taken for it.
 */
async function topProcessWatch(
  target: Exclude<KillTarget, { kind: 'members' }>,
  options: KillOptions,
  deps: WindowsKillDeps,
): Promise<() => Promise<boolean>> {
  if (target.kind === 'tree' && options.rootAlive) {
    const rootAlive = options.rootAlive;
    return async () => rootAlive();
  }
  const pid = target.kind === 'tree' ? target.tree.rootPid : target.pid;
  await deps.table.refresh?.();
  const first = deps.table.read(pid);
  let gone = first === undefined;
  return async () => {
    if (gone) return false;
    await deps.table.refresh?.();
    const now = deps.table.read(pid);
    gone = !now || now.ppid !== first!.ppid || now.name !== first!.name;
    return !gone;
  };
}
