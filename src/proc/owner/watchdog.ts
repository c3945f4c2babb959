/**
 * The owner's watchdog: one small process per tree owner that outlives it and sweeps the owner's record the
 * moment the owner dies, however it dies (a crash, SIGKILL, the OOM killer, the whole editor killed), whether
 * or not any window ever opens again.
 *
 * It is `/bin/sh` blocked in `read` on stdin: the read end of a pipe whose only write end the owner holds (Node
 * opens it close-on-exec, so no other child of the owner keeps a copy). When the owner dies the kernel closes
 * that end, `read` returns, and the shell runs `<node> - sweep --owner PID:START` on the CLI bundle it opened when
 * it started (so an update that removed the bundle meanwhile does not stop it), which confirms the owner is really
 * gone (pid + boot-relative start key) and sweeps that one record with the sweep's own proofs and claims; what
 * fails is left in the records folder for the next sweep to report. Idle it costs no CPU (no timer, no poll) and
 * about 1.6 MB RSS, most of it shared with every other sh. A clean stop writes `quit` into the pipe and the shell
 * exits without running anything.
 *
 * It runs in a session of its own (a Ctrl-C, a hang-up or a group kill aimed at the owner does not reach it),
 * without the tree tag, and, on the root cgroup tier, in a cgroup of its own beside the trees' (so it is in no
 * tree's cgroup and outlives a cgroup-wide kill of the owner's). When it is killed itself, nothing is lost: the
 * record stays for the next activation or periodic sweep.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { CgroupMode, CgroupProbeResult } from '../cgroup/probe';
import { OwnerInfo } from '../identity/ownerIdentity';
import { ProcessIdentity, processKey } from '../identity/processIdentity';
import { hostClock, START_KEYS_ARE_BOOT_TICKS, TICKS_PER_SECOND } from '../platform/bootClock';
import { Logger, silentLogger } from '../platform/log';
import { pidPresence } from '../platform/pidPresence';
import { HOST_MARK_VARIABLE, ProcessTable, TREE_ID_VARIABLE, WATCHDOG_VARIABLE } from '../platform/processTable';
import { watchdogLogPath } from '../records/fileNames';

export { WATCHDOG_VARIABLE };

/** Grace the dead owner's trees get between SIGTERM and SIGKILL: short, so everything ends within 2 s even on a loaded machine (a Node start there can take 0.5-1 s). */
export const WATCHDOG_GRACE_MS = 500;

/** How long the watchdog waits for the owner to finish exiting after the pipe closed (it closes first). */
export const OWNER_EXIT_WAIT_MS = 5000;

/** The process name the watchdog shows in `ps` (`$0` of its shell). */
const WATCHDOG_NAME = 'agent-trees-watchdog';

/**
 * The watchdog: `sh -c WATCHDOG_SCRIPT agent-trees-watchdog CLI LOG NODE sweep ARGS...`. It opens the CLI bundle at
 * once and keeps it open, so an update or uninstall that removes the bundle meanwhile takes nothing it needs: Node
 * reads the script from that descriptor (`node -`). Then it waits for one line: `quit` ends it, anything else (the
 * owner's end closed) starts the sweep. What the sweep says on stderr goes to LOG in the records folder, which is
 * removed when the sweep succeeds and otherwise left for the next sweep to report (see records/store.ts).
 */
const WATCHDOG_SCRIPT = [
  'umask 077; cli=$1; log=$2; node=$3; shift 3',
  'exec 9<"$cli" || exit 1',
  'read -r line; [ "$line" = quit ] && exit 0',
  ': 2>>"$log" || log=/dev/null',
  '"$node" - "$@" <&9 9<&- 2>>"$log"; status=$?',
  'if [ "$status" = 0 ]; then rm -f "$log"; fi',
  'exit "$status"',
].join('\n');

/** What a watchdog is started through: the table (this process's start key) and the cgroup tier (see core.ts). */
export interface WatchdogParts {
  table: Pick<ProcessTable, 'read'>;
  cgroupTier(mode: CgroupMode): CgroupProbeResult;
}

export interface WatchdogOptions {
  /** The `agent-trees` command-line bundle (dist/cli.js) the watchdog runs to sweep. */
  cliPath: string;
  /** The Node binary; default this process's (Electron's in desktop VS Code, run as Node). */
  nodePath?: string;
  /** Grace for the dead owner's trees (ms). Default WATCHDOG_GRACE_MS. */
  graceMs?: number;
}

/**
 * The full identity of a watchdog's owner, as its record states it (`selfIdentity` in the owner): the watchdog
 * runs on the owner's machine, boot and pid namespace, so those come from here. The sweep's `onlyOwner`.
 */
export function ownerInfoOf(owner: ProcessIdentity): OwnerInfo {
  const clock = hostClock();
  if (START_KEYS_ARE_BOOT_TICKS && clock && clock.procIsOurs) {
    let startTime = Date.now();
    try {
      startTime = Math.round(Date.now() - ((clock.nowTicks() - owner.startKey) * 1000) / TICKS_PER_SECOND);
    } catch {
      /* display only */
    }
    return { pid: owner.pid, startTime, startTicks: owner.startKey, bootId: clock.bootId, pidNs: clock.pidNs, machineId: clock.machineId };
  }
  // Elsewhere the start key is the listing's start time in seconds since the epoch (macOS `ps`).
  return { pid: owner.pid, startTime: owner.startKey * 1000 };
}

/** The watchdog of one owner, as seen from the owner. */
export class Watchdog {
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly owner: ProcessIdentity,
    private readonly log: Logger,
  ) {
    child.on('exit', (code, signal) => {
      this.exited = true;
      if (!this.stopping)
        this.log.warn(`watchdog ${child.pid} ended on its own (${signal ?? `code ${code}`}); the next tree starts another`);
    });
    child.on('error', (e) => this.log.warn(`watchdog: ${e.message}`));
    // Writing `quit` to a watchdog that is already gone must not throw (EPIPE).
    child.stdin?.on('error', () => {});
  }

  private stopping = false;

  /**
   * Starts the watchdog of this process for the records in `recordsDir`. Undefined (and logged) where it cannot
   * run: no POSIX shell (Windows), or this process's start key cannot be read.
   */
  static start(
    core: WatchdogParts,
    options: WatchdogOptions & { recordsDir: string; log?: Logger; cgroups?: CgroupMode },
  ): Watchdog | undefined {
    const { recordsDir, log = silentLogger, cgroups = 'auto' } = options;
    const table = core.table;
    if (process.platform === 'win32') return undefined;
    const me = table.read(process.pid);
    if (!me || !(me.startKey > 0)) {
      log.warn("watchdog: cannot read this process's start time; no watchdog (the next activation sweeps after a crash)");
      return undefined;
    }
    const owner = { pid: process.pid, startKey: me.startKey };
    const spec = processKey(owner);
    const env: NodeJS.ProcessEnv = { ...process.env, [WATCHDOG_VARIABLE]: spec, ELECTRON_RUN_AS_NODE: '1' };
    delete env[TREE_ID_VARIABLE]; // an owner running inside another tree: its watchdog is not that tree's member
    delete env[HOST_MARK_VARIABLE]; // nor another extension's process of the host it watches
    const node = options.nodePath ?? process.execPath;
    const grace = String((options.graceMs ?? WATCHDOG_GRACE_MS) / 1000);
    let child: ChildProcess;
    try {
      const log = watchdogLogPath(recordsDir, owner);
      const sweep = ['sweep', '--owner', spec, '--records', recordsDir, '--grace', grace];
      child = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, WATCHDOG_NAME, options.cliPath, log, node, ...sweep], {
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true,
        env,
        cwd: '/',
      });
    } catch (e) {
      log.warn(`watchdog: cannot start /bin/sh: ${(e as Error).message}`);
      return undefined;
    }
    if (child.pid === undefined) {
      child.on('error', () => {});
      log.warn('watchdog: /bin/sh could not be started');
      return undefined;
    }
    // Neither the child nor its pipe may keep this process's event loop alive.
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    const watchdog = new Watchdog(child, owner, log);
    moveOutOfTreeCgroups(child.pid, cgroups, log, core);
    log.info(`watchdog ${child.pid} started for owner ${spec}`);
    return watchdog;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Whether it still runs (as far as this process has been told). */
  get running(): boolean {
    return !this.exited && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Tells it to quit without sweeping (the owner's record is gone). */
  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    if (!this.running) return;
    try {
      this.child.stdin?.end('quit\n');
    } catch {
      /* gone already */
    }
    this.log.info(`watchdog ${this.child.pid}: told to quit (its owner records nothing now)`);
  }
}

/**
 * On the root cgroup tier, puts the watchdog in `<base>/watchdogs`: a cgroup of ours that is no tree's, so a
 * tree kill never reaches it, nor does a cgroup-wide kill of the owner's own cgroup (a service stopped, an owner
 * running inside another tree). Best effort: where it fails, the watchdog stays in the owner's cgroup.
 */
function moveOutOfTreeCgroups(pid: number, cgroups: CgroupMode, log: Logger, core: Pick<WatchdogParts, 'cgroupTier'>): void {
  const tier = core.cgroupTier(cgroups).tier;
  if (tier?.kind !== 'directory') return;
  const dir = path.join(tier.base, 'watchdogs');
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  } catch (e) {
    log.debug(`watchdog ${pid}: stays in the owner's cgroup (${(e as Error).message})`);
  }
}

export type OwnerExit = 'dead' | 'alive' | 'unknown';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The watchdog's side: waits until the owner is proven gone (its pid absent, a zombie, or held by a process with
 * another start key), since its end of the pipe closes a moment before it finishes exiting. 'alive' or 'unknown'
 * (its /proc entry unreadable) after `timeoutMs`: then nothing may be swept.
 */
export async function awaitOwnerExit(
  owner: ProcessIdentity,
  table: Pick<ProcessTable, 'read'>,
  timeoutMs = OWNER_EXIT_WAIT_MS,
): Promise<OwnerExit> {
  // Monotonic: a wall-clock step forward must not cut the owner's exit short (nothing would be swept).
  const deadline = performance.now() + timeoutMs;
  let delay = 5;
  for (;;) {
    const state = ownerExitState(owner, table);
    if (state === 'dead' || performance.now() >= deadline) return state;
    await sleep(delay);
    delay = Math.min(delay * 2, 100);
  }
}

function ownerExitState(owner: ProcessIdentity, table: Pick<ProcessTable, 'read'>): OwnerExit {
  let p;
  try {
    p = table.read(owner.pid); // undefined for a zombie or a pid that is gone
  } catch {
    return 'unknown';
  }
  if (p) return p.startKey === owner.startKey ? 'alive' : 'dead';
  // Absent from the table: gone or a zombie is dead; a pid that exists and cannot be read is unknown, never dead.
  const seen = pidPresence(owner.pid);
  if (seen === 'gone') return 'dead';
  if (seen === 'unreadable') return 'unknown';
  return seen.startKey === owner.startKey ? 'unknown' : 'dead';
}
