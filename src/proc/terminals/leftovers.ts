/**
 * What a closing terminal leaves running: its tree's members but its shell, less what another open terminal
 * holds, what another live shell of the window could also have started, and what a live owner holds; and the
 * wait until that has settled after the hang-up. Nothing here signals: ending.ts ends them.
 */
import { processKey } from '../identity/processIdentity';
import { ProcessInfo, ProcessTable, Snapshot, TREE_ID_VARIABLE } from '../platform/processTable';
import { RecordFile } from '../records/schema';
import { resolveWithClosing, TerminalQuery, TerminalResolveOptions, TerminalShell } from './membership';

/** Owners alive now and the trees they hold: their processes are theirs to end, not a closing terminal's. */
export interface LiveOwnership {
  ownerPids: Set<number>;
  treeIds: Set<string>;
}

export function liveOwnership(live: RecordFile[]): LiveOwnership {
  return {
    ownerPids: new Set(live.map((r) => r.record.owner.pid)),
    treeIds: new Set(live.flatMap((r) => r.record.trees.map((t) => t.id))),
  };
}

/** Whether `p` is a live owner or a member of a live owner's tree (by its tree tag). */
function heldByOwner(snap: Snapshot, owners: LiveOwnership): (p: ProcessInfo) => boolean {
  const inTrees = new Set<number>();
  for (const id of owners.treeIds) for (const p of snap.tagged(TREE_ID_VARIABLE).get(id) ?? []) inTrees.add(p.pid);
  return (p) => owners.ownerPids.has(p.pid) || inTrees.has(p.pid);
}

/**
 * What the terminal of `shellKey` leaves running: its members but the shell, less what another open terminal
 * holds (its session or descendants), what another live shell of the window could also have started (see
 * `deferredLeftovers`) and what a live owner holds (an `agent-trees run` ends its own tree).
 */
export function terminalLeftovers(
  snap: Snapshot,
  query: TerminalQuery,
  shellKey: string,
  options: TerminalResolveOptions & { owners: LiveOwnership },
): ProcessInfo[] {
  const all = resolveWithClosing(snap, query, options, shellKey);
  const mine = all.find((m) => m.shellKey === shellKey);
  const shell = query.shells.find((s) => s.key === shellKey);
  if (!mine || !shell) return [];
  const elsewhere = new Set<number>();
  for (const m of all) {
    if (m.shellKey === shellKey) continue;
    const unclaimed = new Set(m.unclaimed);
    for (const p of m.members) if (!unclaimed.has(p.pid)) elsewhere.add(p.pid);
  }
  const held = heldByOwner(snap, options.owners);
  return mine.members.filter((p) => p.pid !== shell.pid && !elsewhere.has(p.pid) && !held(p));
}

/**
 * The window's tagged processes that no session or parent link attributes, which the closing terminal of
 * `shellKey` could have started but so could another live shell of the window: not its leftovers, they stay
 * until the last terminal that could have started them closes.
 */
export function deferredLeftovers(snap: Snapshot, query: TerminalQuery, shellKey: string, options: TerminalResolveOptions): ProcessInfo[] {
  return resolveWithClosing(snap, query, options, shellKey).find((m) => m.shellKey === shellKey)?.deferred ?? [];
}

/** `deferredLeftovers` on a fresh look at the machine, with each one's command line (for the log of a close). */
export function deferredLeftoversNow(
  query: TerminalQuery,
  shellKey: string,
  parts: TerminalResolveOptions['deps'] & { table: Pick<ProcessTable, 'snapshot'> },
): { pid: number; command: string }[] {
  const snap = parts.table.snapshot();
  return deferredLeftovers(snap, query, shellKey, { deps: parts }).map((p) => ({ pid: p.pid, command: snap.commandLine(p.pid) }));
}

export interface SettleOptions {
  /** Where the machine is looked at. */
  table: Pick<ProcessTable, 'snapshot'>;
  /** Longest wait for the shell to exit and the rest to settle. */
  timeoutMs?: number;
  /** How long the set must stay the same to count as settled. */
  quietMs?: number;
  pollMs?: number;
}

/**
 * Waits until what a closed terminal left has settled: the shell has exited (its terminal sent it SIGHUP, and
 * it passes that on to its jobs) and the leftovers stayed the same for `quietMs`, or `timeoutMs` passed.
 * Returns the leftovers then. Everything that exits by itself on the hang-up is not reported as left.
 */
export async function settleLeftovers<T extends ProcessInfo>(
  shell: TerminalShell,
  compute: (snap: Snapshot) => T[],
  options: SettleOptions,
): Promise<T[]> {
  const timeoutMs = options.timeoutMs ?? 3000;
  const quietMs = options.quietMs ?? 300;
  const pollMs = options.pollMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let last = '';
  let sameSince = Date.now();
  for (;;) {
    const snap = options.table.snapshot();
    const left = compute(snap);
    const shellRuns = snap.processes.get(shell.pid)?.startKey === shell.startKey;
    const signature = left.map(processKey).sort().join(',');
    if (signature !== last) {
      last = signature;
      sameSince = Date.now();
    }
    const now = Date.now();
    if (now >= deadline || (!shellRuns && now - sameSince >= quietMs)) return left;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
