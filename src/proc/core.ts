/**
 * The composition root: the parts every path through the core needs (the process table, the signaller, the
 * guard, the cgroups and their probe, and the one killer), built in one place. The front ends take this process's
 * core from `processCore()` and pass its parts down, so the CLI and the extension each have one table (warm
 * caches) and one killer (requests for one tree join); nothing below them builds or looks up a core. Tests build
 * their own with synthetic parts (`createCore`).
 */
import { CgroupMode, CgroupProber, CgroupProbeResult } from './cgroup/probe';
import { CgroupControl, linuxCgroups } from './cgroup/treeCgroup';
import { currentSelf, SignalGuard } from './identity/guard';
import { TreeKiller } from './kill/treeKiller';
import { MemberDeps } from './members/membership';
import { createProcessTable } from './platform/createProcessTable';
import { execAsync, ExecAsync } from './platform/execAsync';
import { ProcessTable } from './platform/processTable';
import { processSignaller, Signaller } from './platform/signaller';
import { SweepOptions } from './sweep/sweepOrphans';

export interface Core extends MemberDeps {
  readonly platform: NodeJS.Platform;
  readonly table: ProcessTable;
  readonly signaller: Signaller;
  readonly cgroups: CgroupControl;
  /** Where tree cgroups live and whether this process can make them (probed once, never blocking). */
  readonly cgroupProber: CgroupProber;
  readonly killer: TreeKiller;
  /** The guard for this process now; rebuilt when our parent changes (we were re-parented). */
  readonly guard: SignalGuard;
  /** The cgroup tier for spawning, as known now (see `CgroupProber.now`). */
  cgroupTier(mode: CgroupMode): CgroupProbeResult;
}

export interface CoreParts {
  platform: NodeJS.Platform;
  table: ProcessTable;
  signaller: Signaller;
  cgroups: CgroupControl;
  cgroupProber: CgroupProber;
  /** Builds the guard; by default this process's, walked through `table`. */
  makeGuard: (table: ProcessTable) => SignalGuard;
  /** Windows: runs taskkill. */
  exec: ExecAsync;
}

export function createCore(parts: Partial<CoreParts> = {}): Core {
  const platform = parts.platform ?? process.platform;
  const table = parts.table ?? createProcessTable(platform);
  const signaller = parts.signaller ?? processSignaller;
  const cgroups = parts.cgroups ?? linuxCgroups;
  const cgroupProber = parts.cgroupProber ?? new CgroupProber();
  const makeGuard = parts.makeGuard ?? ((t: ProcessTable) => new SignalGuard(t, currentSelf()));
  let guard: SignalGuard | undefined;
  const currentGuard = (): SignalGuard => {
    if (!guard || (!parts.makeGuard && guard.self.ppid !== process.ppid)) guard = makeGuard(table);
    return guard;
  };
  const killer = new TreeKiller({ platform, table, signaller, guard: currentGuard, cgroups, exec: parts.exec ?? execAsync });
  return {
    platform,
    table,
    signaller,
    cgroups,
    cgroupProber,
    killer,
    get guard() {
      return currentGuard();
    },
    cgroupTier: (mode) => cgroupProber.now(mode),
  };
}

let shared: Core | undefined;

/** This process's core context, built on first use: what the front ends use. */
export function processCore(): Core {
  return (shared ??= createCore());
}

/**
 * The parts of `core` a sweep works through, for front ends: `sweepOrphans` itself takes them as parameters
 * (unit tests pass synthetic ones).
 */
export function localSweepParts(core: Core): Pick<SweepOptions, 'table' | 'killer' | 'guard' | 'cgroupParts'> {
  return { table: core.table, killer: core.killer, guard: core.guard, cgroupParts: core };
}
