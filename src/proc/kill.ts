/**
 * Killing a whole owned tree: SIGTERM to every member, a grace period, then SIGKILL to whatever is left.
 * This module is the only place in Agent Trees that sends a signal.
 *
 * Members are frozen with SIGSTOP before each signal round, and membership is resolved again until no new
 * member appears, so a member cannot fork its way out of the kill. Every signal goes to a process whose
 * identity (pid + start time) was just re-read, or to the recorded process group while it provably is ours.
 */
import { EventEmitter } from 'events';
import { execFile } from 'child_process';
import { killCgroup, removeCgroup } from './cgroup';
import { SignalGuard } from './guard';
import { startedNoLaterThanTracking } from './identity';
import { Logger, silentLogger } from './log';
import { Membership, resolveMembers, subtreeMembers, TreeIdentity } from './members';
import { ProcessInfo, processTable, ProcessTable, Snapshot } from './processTable';

export interface KillOptions {
  /** How long members get after SIGTERM before SIGKILL. 0 kills at once. */
  graceMs: number;
  /** The caller spawned the tree and has owned it ever since (see `ResolveOptions`). */
  continuouslyOwned: boolean;
  /** The tree's cgroup was checked to be ours. */
  cgroupVerified: boolean;
  log?: Logger;
}

export interface KillReport {
  treeId: string;
  /** Distinct processes that were sent SIGTERM or SIGKILL. */
  signalled: number;
  /** Members still alive at the end (zombies count as dead). */
  survivors: number;
  survivorPids: number[];
  /** Whether SIGKILL was needed. */
  escalated: boolean;
  /** Processes that were members but must not be signalled, and why. */
  refused: string[];
  /** Where the group or session could not be trusted, why. */
  groupDoubt?: string;
}

const STOP_ROUNDS = 8;
const KILL_ROUNDS = 10;
/** How long to wait for SIGKILLed processes to finish exiting (uninterruptible sleep can delay it). */
const REAP_WAIT_MS = 3000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type Phase = 'terminate' | 'escalate';

/** One kill of one tree, from request to report. */
class TreeKill {
  private readonly table: ProcessTable = processTable();
  private readonly guard = SignalGuard.current(this.table);
  /** Pids signalled (a pid is not reused within one kill: its holder is frozen or dead). */
  private readonly signalled = new Set<number>();
  private readonly refused = new Set<string>();
  private groupDoubt: string | undefined;
  private graceDeadline = Infinity;

  constructor(
    private readonly tree: TreeIdentity,
    private readonly options: KillOptions,
    private readonly onPhase: (phase: Phase) => void,
    /** Membership other than a whole tree's (a subtree); default: resolveMembers. */
    private readonly resolver?: (snap: Snapshot) => Membership,
  ) {}

  async run(): Promise<KillReport> {
    if (this.options.graceMs > 0) {
      const stopped = this.freeze();
      if (stopped.length === 0) return this.report(false, []);
      this.onPhase('terminate');
      this.signalAll(stopped, 'SIGTERM');
      this.signalAll(stopped, 'SIGCONT', { quiet: true });
      this.hurry(this.options.graceMs);
      if (await this.waitForEmpty(stopped)) return this.finish(false);
    }
    return this.finish(await this.escalate());
  }

  private resolve(): Membership {
    const snap = this.table.snapshot();
    const m = this.resolver ? this.resolver(snap) : resolveMembers(this.tree, snap, this.options);
    if (m.groupDoubt) this.groupDoubt = m.groupDoubt;
    for (const why of m.excluded) this.refused.add(why);
    return m;
  }

  /**
   * SIGSTOPs every member, resolving again until a round finds no one new, so the set cannot grow behind our
   * back. Returns the stopped members (the caller must SIGCONT or SIGKILL them).
   */
  private freeze(): ProcessInfo[] {
    const stopped = new Map<number, ProcessInfo>();
    for (let round = 0; round < STOP_ROUNDS; round++) {
      const m = this.resolve();
      const fresh = m.members.filter((p) => stopped.get(p.pid)?.startKey !== p.startKey);
      if (fresh.length === 0) break;
      for (const p of this.signalMembers({ ...m, members: fresh }, 'SIGSTOP', { quiet: true })) stopped.set(p.pid, p);
    }
    return [...stopped.values()];
  }

  /** Signals members of one resolution: the proven group at once, the rest one by one. Returns who got it. */
  private signalMembers(m: Membership, signal: NodeJS.Signals, opts: { quiet?: boolean } = {}): ProcessInfo[] {
    let groupDone = false;
    if (m.groupProven) {
      const inGroup = m.members.filter((p) => p.pgid === this.tree.pgid);
      const why = this.guard.groupRefusal(this.tree.pgid, inGroup);
      if (!why) groupDone = sendGroup(this.tree.pgid, signal);
    }
    const got: ProcessInfo[] = [];
    for (const p of m.members) {
      if (groupDone && p.pgid === this.tree.pgid) {
        got.push(p);
        if (!opts.quiet) this.signalled.add(p.pid);
        continue;
      }
      if (this.signalOne(p, signal, opts)) got.push(p);
    }
    return got;
  }

  /** Signals a list of processes one by one (each identity re-read first). */
  private signalAll(list: ProcessInfo[], signal: NodeJS.Signals, opts: { quiet?: boolean } = {}): void {
    for (const p of list) this.signalOne(p, signal, opts);
  }

  private signalOne(p: ProcessInfo, signal: NodeJS.Signals, opts: { quiet?: boolean }): boolean {
    const why = this.guard.refusal(p);
    if (why) {
      this.refused.add(why);
      return false;
    }
    const now = this.table.read(p.pid);
    if (!now || now.startKey !== p.startKey) return false; // gone, or the pid is someone else's now
    if (!sendPid(p.pid, signal)) return false;
    if (!opts.quiet) this.signalled.add(p.pid);
    return true;
  }

  /** Polls until every listed member is dead and a fresh resolution finds no one; false at the grace deadline. */
  private async waitForEmpty(members: ProcessInfo[]): Promise<boolean> {
    let known = members;
    let interval = 5;
    while (Date.now() < this.graceDeadline) {
      await sleep(Math.min(interval, Math.max(1, this.graceDeadline - Date.now())));
      interval = Math.min(interval * 2, 100);
      known = known.filter((p) => this.isAlive(p));
      if (known.length > 0) continue;
      const stopped = this.freeze();
      if (stopped.length === 0) return true;
      // Born during the grace period: they get their SIGTERM too.
      this.signalAll(stopped, 'SIGTERM');
      this.signalAll(stopped, 'SIGCONT', { quiet: true });
      known = stopped;
    }
    return false;
  }

  private isAlive(p: ProcessInfo): boolean {
    return this.table.read(p.pid)?.startKey === p.startKey;
  }

  /** SIGKILL for everything left, round after round until a resolution finds no one. */
  private async escalate(): Promise<boolean> {
    const hit = this.killAtomically();
    let escalated = hit.length > 0;
    if (escalated) this.onPhase('escalate');
    // Let the kernel finish the exits it has started before scanning: a scan of a dying tree competes with
    // that work (on 2 cores it doubled the time to death) and would find only the dying.
    await this.waitDead(hit, 500);
    for (let round = 0; round < KILL_ROUNDS; round++) {
      const stopped = this.freeze();
      if (stopped.length === 0) break;
      if (!escalated) {
        escalated = true;
        this.onPhase('escalate');
      }
      this.signalAll(stopped, 'SIGKILL');
      await this.waitDead(stopped, 500);
    }
    return escalated;
  }

  /**
   * The atomic SIGKILLs, before any full scan: the cgroup (`cgroup.kill`), else the process group while it
   * provably is the recorded one. Nothing they reach can fork again. Returns whom they reached (counted).
   */
  private killAtomically(): ProcessInfo[] {
    const tree = this.tree;
    if (tree.cgroup && this.options.cgroupVerified) {
      const hit: ProcessInfo[] = [];
      const pids = killCgroup(tree.cgroup, (pid) => {
        const p = this.table.read(pid);
        if (p) this.signalOne(p, 'SIGKILL', {});
      });
      for (const pid of pids) {
        this.signalled.add(pid);
        hit.push({ pid, startKey: NaN } as ProcessInfo);
      }
      if (hit.length > 0) return hit; // every member was born in the cgroup: the group is in it too
    }
    if (!this.groupIsProvenCheaply()) return [];
    // One plain scan (no command lines, no environments) to count the group, then the group SIGKILL.
    const inGroup = [...this.table.snapshot().processes.values()].filter((p) => p.pgid === tree.pgid && !this.guard.protectedReason(p));
    if (inGroup.length === 0 || this.guard.groupRefusal(tree.pgid, inGroup) || !sendGroup(tree.pgid, 'SIGKILL')) return [];
    for (const p of inGroup) this.signalled.add(p.pid);
    return inGroup;
  }

  /**
   * One synchronous SIGKILL round, no waiting, for a process that is exiting now: the atomic kills, then
   * every other member, frozen first. Returns whether anything was signalled.
   */
  killNow(): boolean {
    const hit = this.killAtomically();
    const stopped = this.freeze();
    this.signalAll(stopped, 'SIGKILL');
    return hit.length > 0 || stopped.length > 0;
  }

  /** The group is ours without a full scan: its leader started before tracking, or we owned it throughout. */
  private groupIsProvenCheaply(): boolean {
    const leader = this.table.read(this.tree.pgid);
    if (leader) return leader.pgid === this.tree.pgid && startedNoLaterThanTracking(leader, this.tree);
    return this.options.continuouslyOwned;
  }

  /** A later request with a shorter grace period wins: SIGKILL comes no later than it asks. */
  hurry(graceMs: number): void {
    this.graceDeadline = Math.min(this.graceDeadline, Date.now() + graceMs);
  }

  /**
   * Waits (up to `ms`) until every listed process is dead. Checks one at a time and moves on once it is gone,
   * so waiting on 1000 dying processes reads about 1000 files, not 1000 per poll. A NaN start key (known by
   * pid only, from cgroup.procs) means any process at that pid.
   */
  private async waitDead(list: ProcessInfo[], ms: number): Promise<ProcessInfo[]> {
    const deadline = Date.now() + ms;
    let i = 0;
    while (i < list.length) {
      const p = list[i];
      const now = this.table.read(p.pid);
      if (now && (Number.isNaN(p.startKey) || now.startKey === p.startKey)) {
        if (Date.now() >= deadline) break;
        await sleep(5);
        continue;
      }
      i++;
    }
    return list.slice(i).filter((p) => { const now = this.table.read(p.pid); return now && (Number.isNaN(p.startKey) || now.startKey === p.startKey); });
  }

  private async finish(escalated: boolean): Promise<KillReport> {
    let left = this.resolve().members;
    if (left.length > 0) {
      left = await this.waitDead(left, REAP_WAIT_MS);
      if (left.length > 0) left = this.resolve().members;
    }
    if (this.tree.cgroup && this.options.cgroupVerified && left.length === 0) removeCgroup(this.tree.cgroup);
    return this.report(escalated, left);
  }

  private report(escalated: boolean, survivors: ProcessInfo[]): KillReport {
    return {
      treeId: this.tree.id,
      signalled: this.signalled.size,
      survivors: survivors.length,
      survivorPids: survivors.map((p) => p.pid),
      escalated,
      refused: [...this.refused],
      groupDoubt: this.groupDoubt,
    };
  }
}

/**
 * The two places a signal leaves this module. Each checks the guard once more, whatever the caller proved:
 * our own group may be leaderless (its leader gone), and nothing else would stop kill(-ourGroup).
 */
function sendGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (pgid <= 1 || SignalGuard.current(processTable()).groupRefusal(pgid, [])) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is empty
  }
}

function sendPid(pid: number, signal: NodeJS.Signals): boolean {
  if (pid <= 1 || SignalGuard.current(processTable()).isProtectedPid(pid)) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGINT to a tree's process group, as Ctrl-C in a terminal sends it: only for a group that provably is the
 * tree's (its leader started no later than tracking, or the caller owned it throughout).
 */
export function interruptGroup(tree: TreeIdentity, continuouslyOwned: boolean): boolean {
  if (process.platform === 'win32') return false;
  const table = processTable();
  const leader = table.read(tree.pgid);
  if (leader ? !startedNoLaterThanTracking(leader, tree) : !continuouslyOwned) return false;
  if (SignalGuard.current(table).groupRefusal(tree.pgid, leader ? [leader] : [])) return false;
  return sendGroup(tree.pgid, 'SIGINT');
}

// ---------------------------------------------------------------------------------------------- Windows

export type ExecAsync = (file: string, args: string[], timeoutMs: number) => Promise<{ code: number; stdout: string }>;

const execAsync: ExecAsync = (file, args, timeoutMs) =>
  new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, windowsHide: true, encoding: 'utf8' }, (error, stdout) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : 1) : 0;
      resolve({ code, stdout: stdout ?? '' });
    });
  });

/** Longest any taskkill call may take: a stalled taskkill must never stretch the caller's own timeout. */
export const TASKKILL_TIMEOUT_MS = 3000;

/**
 * Windows: no groups or signals. `taskkill /T` walks the tree from the root (so it needs the root alive);
 * first without /F (a close request), then with /F after the grace period, then the root itself.
 * The root's identity is known only to the continuous owner, which holds its handle: sweeps of another
 * owner's tree are not attempted on Windows.
 */
export async function killWindowsTree(
  tree: TreeIdentity,
  options: Pick<KillOptions, 'graceMs' | 'continuouslyOwned' | 'log'>,
  isRootAlive: () => boolean,
  exec: ExecAsync = execAsync,
  killRoot: (pid: number) => void = (pid) => sendPid(pid, 'SIGKILL'),
): Promise<KillReport> {
  const report: KillReport = { treeId: tree.id, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: [] };
  if (!options.continuouslyOwned) {
    report.refused.push(`tree ${tree.id}: on Windows only the owner that spawned a tree can prove its root's identity`);
    return report;
  }
  if (!isRootAlive()) return report;
  const pid = String(tree.rootPid);
  await exec('taskkill', ['/T', '/PID', pid], TASKKILL_TIMEOUT_MS);
  report.signalled = 1;
  const deadline = Date.now() + options.graceMs;
  while (isRootAlive() && Date.now() < deadline) await sleep(50);
  if (isRootAlive()) {
    report.escalated = true;
    await exec('taskkill', ['/T', '/F', '/PID', pid], TASKKILL_TIMEOUT_MS);
    if (isRootAlive()) killRoot(tree.rootPid);
    await sleep(100);
  }
  if (isRootAlive()) {
    report.survivors = 1;
    report.survivorPids = [tree.rootPid];
  }
  return report;
}

// ---------------------------------------------------------------------------------------------- one kill per tree

/**
 * Kills trees, one kill per tree at a time: a second request for a tree whose kill is running joins it
 * (one grace timer, one escalation). Emits `terminate` and `escalate` with the tree id, for the log and tests.
 */
export class TreeKiller extends EventEmitter {
  private readonly running = new Map<string, Promise<KillReport>>();
  private readonly kills = new Map<string, TreeKill>();

  kill(tree: TreeIdentity, options: KillOptions): Promise<KillReport> {
    const existing = this.running.get(tree.id);
    if (existing) {
      this.kills.get(tree.id)?.hurry(options.graceMs);
      return existing;
    }
    const log = options.log ?? silentLogger;
    const started = Date.now();
    const kill = new TreeKill(tree, options, (phase) => {
      log.debug(`tree ${tree.id}: ${phase === 'terminate' ? `SIGTERM, grace ${options.graceMs} ms` : 'SIGKILL'}`);
      this.emit(phase, tree.id);
    });
    const promise = kill.run().then(
      (report) => {
        log.info(`tree ${tree.id}: ended ${report.signalled} processes in ${Date.now() - started} ms` +
          (report.escalated ? ' (SIGKILL needed)' : '') + (report.survivors ? `; ${report.survivors} survived: ${report.survivorPids.join(', ')}` : ''));
        for (const why of report.refused) log.warn(`tree ${tree.id}: not signalled: ${why}`);
        return report;
      },
    ).finally(() => {
      this.running.delete(tree.id);
      this.kills.delete(tree.id);
    });
    this.running.set(tree.id, promise);
    this.kills.set(tree.id, kill);
    return promise;
  }

  /**
   * SIGKILL for a whole tree, synchronously, with no grace and no waiting: for a process that is exiting
   * right now (the 'exit' event), where nothing asynchronous will run again. Returns whether it signalled.
   */
  killNowSync(tree: TreeIdentity, options: Omit<KillOptions, 'graceMs'>): boolean {
    return new TreeKill(tree, { ...options, graceMs: 0 }, () => {}).killNow();
  }

  /**
   * Kills one process and its descendants (SIGTERM, grace, SIGKILL), if it still is the process that started
   * at `startKey`. For "Kill Process and Its Children" on a member of an owned tree.
   */
  killSubtree(pid: number, startKey: number, graceMs: number, log?: Logger): Promise<KillReport> {
    return this.killResolved(`process-${pid}-${startKey}`, (snap) => subtreeMembers(snap, pid, startKey), graceMs, log);
  }

  /**
   * Kills whatever `resolve` finds in each snapshot it is given (SIGTERM, grace, SIGKILL, frozen first, as for
   * a tree), one process at a time (never a whole group): for member sets that are not an owned tree, such as
   * what a terminal's shell left running. `resolve` must return only proven members (pid + start time, or a
   * parent link from one). A second call with the same `id` while one runs joins it.
   */
  killResolved(id: string, resolve: (snap: Snapshot) => Membership, graceMs: number, log?: Logger): Promise<KillReport> {
    const existing = this.running.get(id);
    if (existing) {
      this.kills.get(id)?.hurry(graceMs);
      return existing;
    }
    // No group, no session, no cgroup: nothing is signalled but the members `resolve` names.
    const target: TreeIdentity = { id, rootPid: 0, pgid: 0, sid: 0, rootStartTime: 0, trackedAt: 0, cgroup: null };
    const kill = new TreeKill(target, { graceMs, continuouslyOwned: false, cgroupVerified: false, log }, (phase) => this.emit(phase, id), (snap) => {
      const m = resolve(snap);
      return { ...m, groupProven: false };
    });
    const promise = kill.run().finally(() => {
      this.running.delete(id);
      this.kills.delete(id);
    });
    this.running.set(id, promise);
    this.kills.set(id, kill);
    return promise;
  }

  isKilling(treeId: string): boolean {
    return this.running.has(treeId);
  }
}

/** The process-wide killer: every kill in this process goes through it, so requests for one tree join. */
export const treeKiller = new TreeKiller();
