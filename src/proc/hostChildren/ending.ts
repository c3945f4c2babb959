/**
 * Ending an extension host's processes of other extensions (membership.ts says which they are): all of them but
 * the kept extensions' once the host is gone (its watchdog's or any sweep's phase, sweep/sweepOrphans.ts) or has
 * been replaced by its window's next host (the takeover); or, while it lives, only what the user asks for (one
 * process and its descendants, an extension's, what an exited process left). Through the one killer, as trees
 * are: frozen, SIGTERM, the grace, SIGKILL, each member proven again (pid and start key) before each signal, one by
 * one, never a group (the host's children share its editor's process group).
 */
import type { SignalGuard } from '../identity/guard';
import { ProcessIdentity, processKey } from '../identity/processIdentity';
import { emptyReport, KillReport, KillTarget } from '../kill/killTarget';
import type { TreeKiller } from '../kill/treeKiller';
import { Membership } from '../members/membership';
import { resolveSubtreeMembers } from '../members/subtreeMembers';
import { Logger, processCount } from '../platform/log';
import { ProcessInfo, Snapshot } from '../platform/processTable';
import { HostProcessesRecord, OwnerRecord } from '../records/schema';
import { attribute, InstallFolder, OTHER_ID } from './attribution';
import { HostMemberDeps, hostProtection, HostQuery, resolveHostProcesses } from './membership';

/** What is never ended: the kept extensions (by id, and by install folder for what was never seen), and whose each seen process is. */
export interface KeepSpec {
  /** Kept extensions' ids (Agent Trees' own among them). */
  ids: string[];
  /** Their install folders. */
  folders: InstallFolder[];
  /** Whose each process seen before is, by key (`pid:startKey`). */
  whose: Record<string, string>;
}

/** What an ending works through: the killer, the grace, the log. */
export interface HostEndingParts {
  killer: Pick<TreeKiller, 'killTarget'>;
  graceMs: number;
  log?: Logger;
}

/**
 * The host's processes to end in `snap`: every member but a kept extension's (seen as a kept extension's, or
 * running a file of a kept extension's folder) and what descends from one.
 */
export function membersToEnd(snap: Snapshot, query: HostQuery, keep: KeepSpec, deps: HostMemberDeps): Membership & { spared: number } {
  const m = resolveHostProcesses(snap, query, deps);
  const kept = new Set(keep.ids);
  const isKept = (p: ProcessInfo) => {
    const whose = keep.whose[processKey(p)];
    if (whose !== undefined) return kept.has(whose);
    return (
      keep.folders.length > 0 && attribute({ exe: snap.executable?.(p.pid), command: snap.commandLine(p.pid) }, keep.folders) !== OTHER_ID
    );
  };
  const byPid = new Map(m.members.map((p) => [p.pid, p]));
  const spared = new Set<number>();
  const queue = m.members.filter(isKept);
  const children = snap.children();
  while (queue.length > 0) {
    const p = queue.pop()!;
    if (spared.has(p.pid)) continue;
    spared.add(p.pid);
    for (const c of children.get(p.pid) ?? []) if (byPid.has(c.pid)) queue.push(c);
  }
  const members = m.members.filter((p) => !spared.has(p.pid));
  return { members, groupProven: false, inCgroup: 0, excluded: m.excluded, spared: spared.size };
}

/** What is never ended, from the kept extensions a record names and whose each process is. */
function keepSpec(keep: HostProcessesRecord['keep'], whose: Record<string, string>): KeepSpec {
  return { ids: keep.map((k) => k.extensionId), folders: keep.map((k) => ({ id: k.extensionId, folder: k.folder })), whose };
}

/** The query and what is kept, from a record's `hostProcesses` (the host is its owner). */
export function recordedHostQuery(
  record: Pick<OwnerRecord, 'owner'> & { hostProcesses: HostProcessesRecord },
  exclude: string[] = [],
): { query: HostQuery; keep: KeepSpec } {
  const hp = record.hostProcesses;
  const whose: Record<string, string> = {};
  for (const s of hp.seen) whose[`${s.pid}:${s.startTicks}`] = s.extensionId;
  return {
    query: { host: { pid: record.owner.pid, startKey: record.owner.startTicks ?? -1 }, mark: hp.mark, seen: Object.keys(whose), exclude },
    keep: keepSpec(hp.keep, whose),
  };
}

/**
 * What a live host ends of its own when its window went to a newer host (the takeover): its processes as its last
 * look asks for them (`query`), but the kept extensions' its record names, judged by whose it knows each process
 * to be (`whose`: every process it placed, the young ones too).
 */
export function liveHostTarget(
  query: HostQuery,
  recorded: HostProcessesRecord,
  whose: Record<string, string>,
): { query: HostQuery; keep: KeepSpec } {
  return { query, keep: keepSpec(recorded.keep, whose) };
}

/** How an ending went: what was signalled and what survived (the report), and how many were spared as kept. */
export interface HostEnding {
  report: KillReport;
  /** Members found before the kill (0: nothing of the host's runs). */
  found: number;
  spared: number;
}

/**
 * Ends every process of the host's but the kept extensions' (a gone host's, or a replaced one's). Resolved in
 * `snap` first: nothing is signalled when nothing runs.
 */
export async function endHostProcesses(
  snap: Snapshot,
  target: { query: HostQuery; keep: KeepSpec },
  deps: HostMemberDeps,
  parts: HostEndingParts,
): Promise<HostEnding> {
  const id = `host-processes-${target.query.host.pid}`;
  const first = membersToEnd(snap, target.query, target.keep, deps);
  if (first.members.length === 0) return { report: emptyReport(id), found: 0, spared: first.spared };
  const kill: KillTarget = {
    kind: 'members',
    id,
    ownGroup: 'one-by-one',
    resolve: (s: Snapshot, guard: SignalGuard) => membersToEnd(s, target.query, target.keep, { guard }),
  };
  const report = await parts.killer.killTarget(kill, {
    graceMs: parts.graceMs,
    continuouslyOwned: false,
    cgroupVerified: false,
    log: parts.log,
  });
  parts.log?.info(
    `other extensions' processes of extension host ${target.query.host.pid}: ended ${processCount(report.signalled)}` +
      (first.spared ? `, kept ${processCount(first.spared)} of extensions never ended` : '') +
      (report.survivors ? `; ${report.survivors} could not be ended` : ''),
  );
  return { report, found: first.members.length, spared: first.spared };
}

/**
 * Ends these processes of the host's and their descendants, at the user's word (one process and its children, an
 * extension's processes, what an exited process left), if each still is the process seen and one of the host's.
 * Roots that are not (any more) are reported refused and left alone.
 */
export async function endHostSubtrees(
  snap: Snapshot,
  target: { query: HostQuery; roots: ProcessIdentity[]; id: string },
  deps: HostMemberDeps,
  parts: HostEndingParts,
): Promise<KillReport> {
  const members = new Set(resolveHostProcesses(snap, target.query, deps).members.map(processKey));
  const roots = target.roots.filter((r) => members.has(processKey(r)));
  const refused = target.roots
    .filter((r) => !members.has(processKey(r)))
    .map((r) => `pid ${r.pid} is not (any more) a process of this extension host`);
  if (roots.length === 0) return { ...emptyReport(target.id), refused };
  const resolve = (s: Snapshot, guard: SignalGuard): Membership => {
    const protection = hostProtection(s, target.query, { guard });
    return resolveSubtreeMembers(s, roots, { guard: { protectedReason: protection } });
  };
  const report = await parts.killer.killTarget(
    { kind: 'members', id: target.id, ownGroup: 'one-by-one', resolve },
    { graceMs: parts.graceMs, continuouslyOwned: false, cgroupVerified: false, log: parts.log },
  );
  return { ...report, refused: [...refused, ...report.refused] };
}
