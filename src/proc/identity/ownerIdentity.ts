/**
 * Process identity: a pid names a process only together with its start time, on one boot, in one pid
 * namespace, since pids are reused.
 *
 * On Linux every comparison is in clock ticks since boot (see platform/bootClock.ts): exact, and blind to wall-clock
 * steps. A record written by an older version has only epoch milliseconds; those are never compared with the
 * clock (a step of a few seconds made a live owner look replaced, a step back made a fresh process look
 * older than a record), so such a record's owner counts as dead only once its pid is gone, and its trees are
 * reached only through their tag and cgroup, never through a pid or group id on the strength of a time.
 * macOS and Windows have no boot clock here and keep the epoch rules with their slack.
 */
import { HostClock, hostClock, START_KEYS_ARE_BOOT_TICKS } from '../platform/bootClock';
import { pidPresence } from '../platform/pidPresence';
import { ProcessInfo, ProcessTable } from '../platform/processTable';

/** A process's identity as records and claim names carry it. */
export interface OwnerInfo {
  pid: number;
  /** Start time, ms since the epoch (display, and the identity where there is no boot clock). */
  startTime: number;
  /** Start time in clock ticks since boot. */
  startTicks?: number;
  /** The boot those ticks count from (`/proc/sys/kernel/random/boot_id`). */
  bootId?: string;
  /** The pid namespace the pid is of (inode of `/proc/self/ns/pid`). */
  pidNs?: number;
  /** The machine (`/etc/machine-id`, else `host:<name>`). */
  machineId?: string;
}

/** Clock slack when comparing epoch start times taken at different moments (platforms without a boot clock). */
export const OWNER_CLOCK_SLACK_MS = 2000;

/** Our own identity, as records and claim names carry it. */
export function selfIdentity(table: ProcessTable, clock: HostClock | undefined = hostClock()): OwnerInfo {
  const me = safeRead(table, process.pid);
  const self: OwnerInfo = { pid: process.pid, startTime: me?.startTime ?? Date.now() };
  if (clock && clock.procIsOurs && me && START_KEYS_ARE_BOOT_TICKS) {
    self.startTicks = me.startKey;
    self.bootId = clock.bootId;
    self.pidNs = clock.pidNs;
    self.machineId = clock.machineId;
  }
  return self;
}

/** Whether a record's owner carries a full boot-clock identity (written by this version on Linux). */
export function hasBootIdentity(o: OwnerInfo): o is OwnerInfo & Required<Pick<OwnerInfo, 'startTicks' | 'bootId' | 'pidNs' | 'machineId'>> {
  return o.startTicks !== undefined && o.bootId !== undefined && o.pidNs !== undefined && o.machineId !== undefined;
}

/** Whether two identities are provably one process: same boot, namespace, pid and start tick. */
export function sameProcess(a: OwnerInfo, b: OwnerInfo): boolean {
  if (hasBootIdentity(a) && hasBootIdentity(b)) {
    return a.pid === b.pid && a.startTicks === b.startTicks && a.bootId === b.bootId && a.pidNs === b.pidNs && a.machineId === b.machineId;
  }
  if (START_KEYS_ARE_BOOT_TICKS) return false; // one of them lacks a boot identity: not provably the same
  return a.pid === b.pid && Math.abs(a.startTime - b.startTime) <= OWNER_CLOCK_SLACK_MS;
}

/**
 * Where a record comes from, as far as its identities can be compared here:
 *  - 'here': this machine, this boot, this pid namespace (ticks comparable);
 *  - 'earlier-boot': this machine, another boot: none of its processes runs any more;
 *  - 'elsewhere': another machine (a shared home folder) or another pid namespace: not ours to judge;
 *  - 'no-boot-identity': an older writer's record (epoch times only), or we have no boot clock.
 */
export type RecordOrigin = 'here' | 'earlier-boot' | 'elsewhere' | 'no-boot-identity';

export function recordOrigin(owner: OwnerInfo, clock: HostClock | undefined = hostClock()): RecordOrigin {
  if (!clock || !hasBootIdentity(owner)) return 'no-boot-identity';
  // One boot id is one kernel, so one machine; another boot id is an earlier boot only on the same machine.
  if (owner.bootId === clock.bootId) return owner.pidNs === clock.pidNs ? 'here' : 'elsewhere';
  return owner.machineId === clock.machineId ? 'earlier-boot' : 'elsewhere';
}

/**
 * 'alive', 'dead' (pid gone, or only a zombie left), 'replaced' (the pid now belongs to a later process),
 * 'unknown' (cannot tell: unreadable /proc, EMFILE, an older writer's record whose pid is held by someone, a
 * record from elsewhere), or 'earlier-boot'. Only 'dead', 'replaced' and 'earlier-boot' let a sweep act: a
 * missed reap can be retried, a wrong kill cannot be undone.
 */
export type OwnerState = 'alive' | 'dead' | 'replaced' | 'unknown' | 'earlier-boot';

/**
 * A table that can tell "gone" from "could not look" for one pid. Optional: without it, a pid the table does
 * not answer for is asked of the kernel directly (kill(pid, 0), then `/proc/<pid>/stat`). Test tables give it.
 */
export interface PresenceProbe {
  probe?(pid: number): ProcessInfo | 'gone' | 'unreadable';
}

export function ownerState(table: ProcessTable & PresenceProbe, owner: OwnerInfo, clock: HostClock | undefined = hostClock()): OwnerState {
  const origin = recordOrigin(owner, clock);
  if (origin === 'earlier-boot') return 'earlier-boot';
  if (origin === 'elsewhere') return 'unknown';
  if (clock && !clock.procIsOurs) return 'unknown'; // every pid read from this /proc is someone else's
  const seen = lookUp(table, owner.pid);
  if (seen === 'unreadable') return 'unknown';
  if (seen === 'gone') return 'dead';
  if (origin === 'here') {
    if (seen.startKey === owner.startTicks) return 'alive';
    // A process cannot have taken the pid before the owner, which held it from its start to its end.
    return seen.startKey > owner.startTicks! ? 'replaced' : 'unknown';
  }
  if (START_KEYS_ARE_BOOT_TICKS || !(seen.startTime > 0)) return 'unknown'; // held by someone: who, cannot be told
  return seen.startTime > owner.startTime + OWNER_CLOCK_SLACK_MS ? 'replaced' : 'alive';
}

/**
 * One process as the table sees it, telling "gone" (or a zombie) from "could not look": a table's `read`
 * answers undefined for both, and under EMFILE a live process must not pass for a dead one.
 */
function lookUp(table: ProcessTable & PresenceProbe, pid: number): ProcessInfo | 'gone' | 'unreadable' {
  try {
    if (table.probe) return table.probe(pid);
    return table.read(pid) ?? pidPresence(pid);
  } catch {
    return 'unreadable';
  }
}

function safeRead(table: ProcessTable, pid: number): ProcessInfo | undefined {
  try {
    return table.read(pid);
  } catch {
    return undefined;
  }
}

/**
 * Whether a record's owner is, right now, that very process (pid and start time) and a child of `parentPid`: the
 * MCP wrappers VS Code starts from the extension host, say.
 */
export function ownerIsChildOf(owner: OwnerInfo, parentPid: number, table: ProcessTable): boolean {
  if (ownerState(table, owner) !== 'alive') return false;
  return table.read(owner.pid)?.ppid === parentPid;
}
