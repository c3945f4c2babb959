/**
 * A tree's budget as the front ends take it and tell it: the limits as given (a setting, a definition's field, a
 * command-line option) checked field by field, a tree's own limits over the defaults, and the one line that says
 * which limit ended a tree ("memory limit 512 MB exceeded (611 MB)"), which every front end completes with what
 * was ended. The limits as recorded are the record schema's (records/schema.ts).
 */
import { asWritten, formatBytes, Localizer } from '../platform/log';
import { ProcessInfo } from '../platform/processTable';
import { BYTES_PER_MB, isLimitValue, LIMIT_FIELDS, TreeLimits } from '../records/schema';
import { MemoryUse } from './memoryUse';

export type LimitField = (typeof LIMIT_FIELDS)[number];

/** A limit of 0 is none; unset fields take the default. */
export type GivenLimits = Partial<Record<LimitField, number>>;

const UNITS: Record<LimitField, string> = { maxMemoryMB: 'MB', maxProcesses: 'processes', idleTimeoutSeconds: 'seconds' };

/** What is wrong with a limit as given (0 = none), said after its name; undefined when it is fine. */
export function limitProblem(field: LimitField, value: unknown): string | undefined {
  if (value === 0 || isLimitValue(value)) return undefined;
  return `must be a whole number of ${UNITS[field]}, 0 or more (0 = no limit)`;
}

/**
 * A tree's limits: each field its own where given, else the default; 0 is none. Undefined when it has none, so
 * a tree without limits costs nothing to watch.
 */
export function limitsOf(own: GivenLimits = {}, defaults: GivenLimits = {}): TreeLimits | undefined {
  const limits: TreeLimits = {};
  for (const field of LIMIT_FIELDS) {
    const value = own[field] ?? defaults[field] ?? 0;
    if (value > 0) limits[field] = value;
  }
  return Object.keys(limits).length > 0 ? limits : undefined;
}

/** How far a tree got past one of its limits, as seen when it was ended. */
export type Breach =
  | {
      kind: 'memory';
      limitMB: number;
      /** The members' memory when it was seen past the limit (the kernel's peak when the kernel ended it). */
      bytes: number;
      /** Ended by the kernel (cgroup `memory.max` with `memory.oom.group`): how many processes it killed. */
      kernelEnded?: number;
    }
  | { kind: 'processes'; limit: number; count: number }
  | { kind: 'idle'; seconds: number };

/**
 * Which limit ended a tree and how far past it the tree was: "memory limit 512 MB exceeded (611 MB)", "process
 * limit 50 exceeded (87)", "idle for 900 s". The front ends add what was ended: ": ended 7 processes".
 */
export function breachText(breach: Breach, l10n: Localizer = asWritten): string {
  switch (breach.kind) {
    case 'memory': {
      const limit = `${breach.limitMB} MB`;
      // Past the limit shows past it, however little: rounded up.
      const seen = `${Math.ceil(breach.bytes / BYTES_PER_MB)} MB`;
      return breach.kernelEnded === undefined
        ? l10n.t('memory limit {0} exceeded ({1})', limit, seen)
        : l10n.t('memory limit {0} exceeded ({1}, out of memory in the kernel)', limit, seen);
    }
    case 'processes':
      return l10n.t('process limit {0} exceeded ({1})', breach.limit, breach.count);
    case 'idle':
      return l10n.t('idle for {0} s', breach.seconds);
  }
}

/** Where a tree stands against its limits, as last seen. */
export interface BudgetUse {
  /** Live members. */
  processes: number;
  memory: MemoryUse;
  /** Seconds since a member last used CPU time or a byte went through its terminal or stdio (where watched). */
  idleSeconds?: number;
  /** The lines the kernel holds for it (cgroup/treeLimits.ts); the watch holds the others. */
  kernel?: { memory: boolean; processes: boolean };
}

/** A tree's use as its members show it, for a tree this process does not watch (another owner's): RSS, no idle time. */
export function useOfMembers(members: readonly Pick<ProcessInfo, 'rssBytes'>[]): BudgetUse {
  return { processes: members.length, memory: { bytes: members.reduce((n, p) => n + p.rssBytes, 0), measure: 'RSS' } };
}

/** How near a tree is to the limit it is nearest: the largest of use / limit (1 = at it). */
export function nearestLimit(use: BudgetUse, limits: TreeLimits): number {
  const shares = [
    limits.maxMemoryMB ? use.memory.bytes / (limits.maxMemoryMB * BYTES_PER_MB) : 0,
    limits.maxProcesses ? use.processes / limits.maxProcesses : 0,
    limits.idleTimeoutSeconds && use.idleSeconds !== undefined ? use.idleSeconds / limits.idleTimeoutSeconds : 0,
  ];
  return Math.max(...shares);
}

/** From this share of a limit on, a tree is shown as near it (the warning colour). */
export const NEAR_LIMIT = 0.8;

/** A tree's use against one of its limits: "612 MB of 1.0 GB", "41 of 200 processes", "idle 12 s of 900 s". */
export function usePart(field: LimitField, use: BudgetUse, limits: TreeLimits, l10n: Localizer = asWritten): string | undefined {
  const limit = limits[field];
  if (!limit) return undefined;
  switch (field) {
    case 'maxMemoryMB':
      return l10n.t('{0} of {1}', formatBytes(use.memory.bytes), formatBytes(limit * BYTES_PER_MB));
    case 'maxProcesses':
      return l10n.t('{0} of {1} processes', use.processes, limit);
    case 'idleTimeoutSeconds':
      return use.idleSeconds === undefined
        ? l10n.t('ends after {0} s idle', limit)
        : l10n.t('idle {0} s of {1} s', Math.floor(use.idleSeconds), limit);
  }
}
