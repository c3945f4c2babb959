/**
 * What a kill acts on and what it reports: the vocabulary shared by the POSIX kill (posixKill.ts), the
 * Windows kill (windowsKill.ts) and the registry that runs one kill per target (treeKiller.ts).
 */
import type { SignalGuard } from '../identity/guard';
import { Membership, TreeIdentity } from '../members/membership';
import type { ResolveOptions } from '../members/treeMembers';
import { Logger } from '../platform/log';
import { Snapshot } from '../platform/processTable';

/**
 * What a kill acts on: a whole owned tree; one process (proven by its start key) and its descendants; or a
 * member set that is no owned tree (what a terminal's shell left running, an extension host's children),
 * resolved afresh by the caller's function in every round. `resolve` must return only proven members (pid +
 * start time, or a parent link from one) and never a protected process (it gets the kill's guard); they are
 * signalled one by one, never as a group.
 *
 * `ownGroup: 'one-by-one'`: members in our own process group are signalled too, each on its own proof. An
 * extension host shares its process group with its editor (the server, the pty host, other windows' hosts), and
 * so do its children: the guard's own-group rule would refuse every one of them. Such a kill still never sends
 * a group signal, and never signals PID 1, this process or its ancestors.
 */
export type KillTarget =
  | { kind: 'tree'; tree: TreeIdentity }
  | { kind: 'subtree'; pid: number; startKey: number }
  | { kind: 'members'; id: string; resolve: (snap: Snapshot, guard: SignalGuard) => Membership; ownGroup?: 'one-by-one' };

/** The id a kill of `target` reports and joins on: the tree id, `process-<pid>-<start key>`, or the caller's id. */
export function targetId(target: KillTarget): string {
  if (target.kind === 'tree') return target.tree.id;
  if (target.kind === 'subtree') return `process-${target.pid}-${target.startKey}`;
  return target.id;
}

export interface KillOptions extends Pick<ResolveOptions, 'extraSeeds' | 'rootAliveAt'> {
  /** How long members get after SIGTERM before SIGKILL. 0 kills at once. */
  graceMs: number;
  /** The caller spawned the tree and has owned it ever since (see `ResolveOptions`). */
  continuouslyOwned: boolean;
  /** The tree's cgroup was checked to be ours. */
  cgroupVerified: boolean;
  /**
   * Whether the root still runs, where only its owner can tell (Windows: the owner holds the root's handle, and
   * a pid alone proves nothing there).
   */
  rootAlive?: () => boolean;
  log?: Logger;
}

export interface KillReport {
  treeId: string;
  /** Distinct processes that were sent SIGTERM or SIGKILL and are gone at the end: what "ended N" counts. */
  signalled: number;
  /** Members still alive at the end (zombies count as dead), those signalled included. */
  survivors: number;
  survivorPids: number[];
  /** Whether SIGKILL was needed. */
  escalated: boolean;
  /** Processes that were members but must not be signalled, and why. */
  refused: string[];
  /** Where the group or session could not be trusted, why. */
  groupDoubt?: string;
}

export function emptyReport(treeId: string): KillReport {
  return { treeId, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: [] };
}

export type KillPhase = 'terminate' | 'escalate';
