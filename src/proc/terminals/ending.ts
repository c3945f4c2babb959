/**
 * Ending what runs in a terminal: every member of its tree but its shell (End Terminal Processes), or what a closed
 * terminal left (each still the process it was, and what it started since). Through the core's killer, one process
 * at a time, each member re-resolved in every round; the shell itself is never a member of anything ended here.
 */
import { ProcessIdentity } from '../identity/processIdentity';
import { emptyReport, KillReport } from '../kill/killTarget';
import { TreeKiller } from '../kill/treeKiller';
import { Membership } from '../members/membership';
import { resolveSubtreeMembers } from '../members/subtreeMembers';
import { Logger } from '../platform/log';
import { resolveTerminalTrees, TerminalQuery, TerminalResolveOptions, TerminalShell } from './membership';

export interface EndTerminalOptions extends Partial<TerminalResolveOptions> {
  query: TerminalQuery;
  /** The terminal whose processes end. */
  shellKey: string;
  graceMs: number;
  log?: Logger;
}

/**
 * Ends every member of a terminal's tree but its shell (SIGTERM, grace, SIGKILL), each member re-resolved in every
 * round (what the shell starts meanwhile goes too). Without `deps`, members are resolved with the kill's own guard.
 */
export function endTerminalTree(killer: Pick<TreeKiller, 'killResolved'>, options: EndTerminalOptions): Promise<KillReport> {
  const { query, shellKey } = options;
  const shell = query.shells.find((s) => s.key === shellKey);
  if (!shell) return Promise.resolve(refusal(`terminal:${shellKey}`, []));
  if (process.platform === 'win32') return Promise.resolve(refusal(`terminal:${shellKey}`, [NOT_ON_WINDOWS]));
  return killer.killResolved(
    `terminal:${shellKey}`,
    (snap, guard): Membership => {
      // Terminal trees have no cgroup: only the kill's guard matters here.
      const deps = options.deps ?? { guard, cgroups: { procs: () => [] } };
      const mine = resolveTerminalTrees(snap, query, { ...options, deps }).find((m) => m.shellKey === shellKey);
      return { members: (mine?.members ?? []).filter((p) => p.pid !== shell.pid), groupProven: false, inCgroup: 0, excluded: [] };
    },
    options.graceMs,
    options.log,
  );
}

export interface EndLeftoversOptions {
  /** The closed terminal's shell: spared. */
  shell: TerminalShell;
  /** What it left, each by pid and start key. */
  left: ProcessIdentity[];
  graceMs: number;
  log?: Logger;
}

/** Ends what a closed terminal left (each still the process it was, and what it started since); spares the shell. */
export function endLeftovers(killer: Pick<TreeKiller, 'killResolved'>, options: EndLeftoversOptions): Promise<KillReport> {
  const { shell, left } = options;
  if (process.platform === 'win32') return Promise.resolve(refusal(`terminal-left:${shell.key}`, [NOT_ON_WINDOWS]));
  return killer.killResolved(
    `terminal-left:${shell.key}`,
    (snap, guard) => resolveSubtreeMembers(snap, left, { guard }, [shell.pid]),
    options.graceMs,
    options.log,
  );
}

/**
 * Windows has no start times to prove a process's identity by, nor signals to freeze it with: terminal processes
 * are shown there, but not ended (an owned tree's kill goes through taskkill, from the owner that holds its root).
 */
const NOT_ON_WINDOWS = "Windows: a terminal's processes are not ended (no start time proves which process a pid is)";

function refusal(treeId: string, refused: string[]): KillReport {
  return { ...emptyReport(treeId), refused };
}
