/**
 * Members of several trees, terminals and records in one snapshot, as plain data with command lines (what the tree
 * view shows, and what the owner's watch looks at). The same functions run on the caller's thread or in a worker
 * (snapshotWorker.ts) when the process table is large.
 */
import { CgroupProber } from '../cgroup/probe';
import { cgroupVerified } from '../cgroup/treeCgroup';
import { HostMemberDeps, HostQuery, resolveHostProcesses } from '../hostChildren/membership';
import { MemberDeps, TreeIdentity } from '../members/membership';
import { resolveTreeMembers } from '../members/treeMembers';
import { ProcessInfo, Snapshot } from '../platform/processTable';
import { RecordFile, TreeRecord } from '../records/schema';
import { resolveTerminalTrees, TerminalMembership, TerminalQuery, windowRecords } from '../terminals/membership';

export interface MemberInfo extends ProcessInfo {
  command: string;
  /** The file it runs, for an extension host's process whose parent is not one (what attribution reads). */
  exe?: string;
}

/** What a listing answers: every member asked about, each with its command line. */
export interface MemberListing {
  takenAt: number;
  /** Processes read for this answer (the whole machine after a full scan): decides where the next one runs. */
  processCount: number;
  /** Whether this answer looked at every process on the machine (a full scan). */
  fullScan?: boolean;
  /** Processes on the machine, when this answer listed them all. */
  listed?: number;
  /**
   * `beside`: the processes below the members that are none (a spared watchdog, and what descends from it without
   * being a member): a walk down from the members passes through them, so a child of theirs can be a member.
   */
  trees: { id: string; members: MemberInfo[]; beside?: number[] }[];
  /** The window's terminal trees, when asked for (see `ViewExtras`). */
  terminals: TerminalMembers[];
  /** Of the live owners' records asked about, those of this window, with their trees' members. */
  windowRecords: { file: string; trees: { id: string; members: MemberInfo[] }[] }[];
  /** The extension host's processes of other extensions, when asked for (see `ViewExtras.host`). */
  host?: { members: MemberInfo[] };
}

export interface TerminalMembers extends Omit<TerminalMembership, 'members'> {
  members: MemberInfo[];
}

/** What the view asks for besides its own trees, resolved in the same snapshot. */
export interface ViewExtras {
  terminals?: TerminalQuery;
  /** Records of live owners (other than us): which belong to this window is decided in the same snapshot. */
  liveRecords?: RecordFile[];
  /** This extension host's processes of other extensions (hostChildren/). */
  host?: HostQuery;
}

export interface TreeQuery extends TreeIdentity {
  /** Trees the asker spawned and has owned ever since (see ResolveOptions.continuouslyOwned). */
  continuouslyOwned: boolean;
  cgroupVerified: boolean;
  /**
   * Its members that left its cgroup count too (a budget counts them): a refresh walks from its members and
   * leaders as for a tree without a cgroup, besides reading its cgroup.
   */
  beyondCgroup?: boolean;
  /** Also list the processes below its members that are none (`MemberListing.trees[].beside`): the budget asks. */
  withBeside?: boolean;
}

/** Where our cgroups live: to know which recorded trees a cgroup of their own holds. */
export interface CgroupLocator {
  cgroupProber: Pick<CgroupProber, 'location'>;
}

/** What a listing of several trees reads: the guard, the cgroups, and where our cgroups live. */
export type ListingDeps = MemberDeps & CgroupLocator & HostMemberDeps;

/** How to resolve a tree recorded by another owner: not owned by us throughout; its cgroup only once checked ours. */
export function recordedTreeQuery(tree: TreeRecord, deps: CgroupLocator): TreeQuery {
  return { ...tree, continuouslyOwned: false, cgroupVerified: cgroupVerified(tree, deps) };
}

/** What a listing asks besides trees, and how it reads what its snapshot lacks. */
export interface ListingExtras {
  extras?: ViewExtras;
  /**
   * Reads a process the snapshot does not hold (a snapshot of some processes only: a tagged process is under the
   * editor only if its ancestors up to the editor are read).
   */
  readProcess?: (pid: number) => ProcessInfo | undefined;
}

/** The processes of `snap` below `members` that are no member themselves (see `MemberListing.trees`), in pid order. */
function besideMembers(snap: Snapshot, members: ProcessInfo[]): number[] {
  const children = snap.children();
  const memberPids = new Set(members.map((p) => p.pid));
  const beside = new Set<number>();
  const queue = [...members];
  while (queue.length > 0) {
    for (const child of children.get(queue.pop()!.pid) ?? []) {
      if (memberPids.has(child.pid) || beside.has(child.pid)) continue;
      beside.add(child.pid);
      queue.push(child);
    }
  }
  return [...beside].sort((a, b) => a - b);
}

/**
 * Everything the view asks for, resolved in one snapshot by the core's rules (resolveTreeMembers, resolveTerminalTrees,
 * windowRecords), with command lines. Members come in pid order, whatever order the snapshot read them in: the
 * view compares refreshes to fire only what changed.
 */
export function listMembers(snap: Snapshot, trees: TreeQuery[], deps: ListingDeps, more: ListingExtras = {}): MemberListing {
  const { extras = {}, readProcess } = more;
  const withCommand = (members: ProcessInfo[]) =>
    [...members].sort((a, b) => a.pid - b.pid).map((p) => ({ ...p, command: snap.commandLine(p.pid) }));
  const terminals = extras.terminals?.shells.length ? resolveTerminalTrees(snap, extras.terminals, { deps, readProcess }) : [];
  const ofWindow =
    extras.liveRecords && extras.terminals
      ? windowRecords(
          extras.liveRecords,
          snap,
          extras.terminals.windowTags,
          terminals.flatMap((t) => t.members),
        )
      : [];
  return {
    takenAt: snap.takenAt,
    processCount: snap.processes.size,
    listed: snap.listed,
    ...(extras.host ? { host: { members: hostMembers(snap, extras.host, deps) } } : {}),
    trees: trees.map((t) => {
      const members = resolveTreeMembers(t, snap, t, deps).members;
      return { id: t.id, members: withCommand(members), ...(t.withBeside ? { beside: besideMembers(snap, members) } : {}) };
    }),
    terminals: terminals.map((t) => ({ ...t, members: withCommand(t.members) })),
    windowRecords: ofWindow.map(({ file, record }) => ({
      file,
      trees: record.trees.map((t) => {
        const q = recordedTreeQuery(t, deps);
        return { id: t.id, members: withCommand(resolveTreeMembers(q, snap, q, deps).members) };
      }),
    })),
  };
}

/** The host's processes with their command lines, and what runs those whose parent is not one of them. */
function hostMembers(snap: Snapshot, query: HostQuery, deps: ListingDeps): MemberInfo[] {
  const members = resolveHostProcesses(snap, query, deps).members;
  const pids = new Set(members.map((p) => p.pid));
  return members.map((p) => ({
    ...p,
    command: snap.commandLine(p.pid),
    ...(pids.has(p.ppid) ? {} : { exe: snap.executable?.(p.pid) }),
  }));
}
