/**
 * Window takeover: an extension host that outlives its window hands its trees over to the window's next host.
 *
 * A reload normally ends the old extension host (deactivate(), then its exit; the watchdog removes what is left
 * of its record). But a server-side host (code-server, Remote-SSH, WSL, containers) whose window went away
 * without a goodbye (a renderer that died, a reload that cut the connection first) is kept alive for the
 * reconnection grace, 3 hours by default, with its agents running, and no sweep may touch a live owner's trees.
 *
 * So each host says which window it serves, and the old one gives up its trees when both hold:
 *   1. a newer host of the same window key registered: a file `window-<key>-<pid>-<start key>` in the records
 *      folder, written at activation. The key is derived from what survives a reload (the extension uses the
 *      window id it keeps in workspaceState), so two windows open on one workspace share it;
 *   2. its own window no longer answers, and last answered before that newer host started. While it owns trees,
 *      a host sends its window a cheap round trip every second (one at a time, never piling up while
 *      disconnected); the window counts as silent once one has waited `silentMs` (3 s: a background tab's timers
 *      are throttled to 1 s). A second window of the same workspace answers, so it is never taken over; a window
 *      whose network drops keeps its trees until a newer host of its key appears after its last answer.
 * Then the old host ends its own trees (the owner's proofs, short grace) and its record goes with them.
 *
 * A registration is never opened, only listed and lstat'ed: a symlink, FIFO or another user's file named like
 * one is ignored, and a registration whose process is gone (pid + start key) is removed.
 */
import * as crypto from 'crypto';
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as path from 'path';
import { ProcessIdentity } from '../identity/processIdentity';
import { readUptimeTicks, START_KEYS_ARE_BOOT_TICKS } from '../platform/bootClock';
import { Logger, silentLogger } from '../platform/log';
import { pidPresence } from '../platform/pidPresence';
import { ProcessTable } from '../platform/processTable';

export const WINDOW_FILE_PREFIX = 'window-';
const WINDOW_FILE = /^window-([0-9a-f]{16})-(\d{1,10})-(\d{1,20})$/;

/** A short, stable key for a window's identity (whatever survives its reloads), safe in a file name. */
export function windowKey(identity: string): string {
  return crypto.createHash('sha256').update(identity).digest('hex').slice(0, 16);
}

/**
 * Now, in the unit of `ProcessInfo.startKey`, so a moment compares with a process start: clock ticks since boot
 * on Linux (CLOCK_BOOTTIME, as the kernel reports start times; wall-clock steps do not move it), seconds since
 * the epoch on macOS. Undefined where start keys are not comparable (Windows).
 */
function nowAsStartKey(): number | undefined {
  if (START_KEYS_ARE_BOOT_TICKS) {
    try {
      return readUptimeTicks();
    } catch {
      return undefined;
    }
  }
  if (process.platform === 'darwin') return Date.now() / 1000;
  return undefined;
}

/** How much later than a moment a start key must be to count as "started after it" (Linux: 5 ticks = 50 ms). */
const START_KEY_SLACK = process.platform === 'darwin' ? 1 : 5;

export interface WindowLeaseOptions {
  /** The records folder (shared by every host of the profile). */
  dir: string;
  /** This host's window key (`windowKey(...)`). */
  key: string;
  /** A round trip to this host's window; it never settles while the window is gone. */
  probe: () => PromiseLike<unknown>;
  /** The window is gone and a newer host of its key runs: end every tree. Called once per silence. */
  onGone: (newer: ProcessIdentity) => void;
  log?: Logger;
  /** Between round trips while active (ms). */
  probeIntervalMs?: number;
  /** A round trip unanswered this long means the window is silent (ms). */
  silentMs?: number;
  /** How often the folder is looked at while the window is silent (ms). */
  scanIntervalMs?: number;
  /** Where hosts are looked up by pid (see core.ts). */
  table: Pick<ProcessTable, 'read'>;
}

/**
 * One host's registration, and its watch over its own window while it owns trees. Emits `checked` (silent:
 * boolean) after each look, for tests and tooling.
 */
export class WindowLease extends EventEmitter {
  private readonly self: ProcessIdentity | undefined;
  private readonly file: string | undefined;
  private readonly log: Logger;
  private readonly table: Pick<ProcessTable, 'read'>;
  private active = false;
  private disposed = false;
  private timer: NodeJS.Timeout | undefined;
  /** When the window last answered (start-key units), or when watching began. */
  private lastAnswer: number | undefined;
  /** When the round trip in flight was sent (ms, monotonic), if one is. */
  private pendingSince: number | undefined;
  private goneReported = false;
  /** Between round trips while active, when `setActive` said (ms). */
  private probeIntervalMs: number | undefined;

  constructor(private readonly options: WindowLeaseOptions) {
    super();
    this.log = options.log ?? silentLogger;
    this.table = options.table;
    const me = nowAsStartKey() === undefined ? undefined : this.table.read(process.pid);
    this.self = me && me.startKey > 0 ? { pid: process.pid, startKey: me.startKey } : undefined;
    this.file = this.self
      ? path.join(options.dir, `${WINDOW_FILE_PREFIX}${options.key}-${this.self.pid}-${this.self.startKey}`)
      : undefined;
  }

  /** Announces this host as the newest of its window; removes registrations of hosts that are gone. */
  register(): void {
    if (!this.file) return;
    this.live(); // drops stale registrations
    try {
      fs.mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
      const fd = fs.openSync(
        this.file,
        fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | (fs.constants.O_NOFOLLOW ?? 0),
        0o600,
      );
      fs.closeSync(fd);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
        this.log.warn(`cannot register this window in ${this.options.dir}: ${(e as Error).message}`);
    }
  }

  /**
   * Watches the window while `active` (this host owns trees, or records other extensions' processes); stops when
   * not. `probeIntervalMs`: between round trips from now on (default the option's): a host with nothing but other
   * extensions' processes at stake probes less often, and takes a little longer to notice it was replaced.
   */
  setActive(active: boolean, probeIntervalMs?: number): void {
    this.probeIntervalMs = probeIntervalMs;
    if (this.disposed || !this.self || active === this.active) return;
    this.active = active;
    if (active) {
      this.lastAnswer = nowAsStartKey();
      this.goneReported = false;
      this.schedule(0);
    } else if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  dispose(): void {
    this.disposed = true;
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.file) rmQuiet(this.file);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), ms);
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.active || this.disposed) return;
    const now = performance.now();
    if (this.pendingSince === undefined) this.sendProbe(now);
    const silent = this.pendingSince !== undefined && now - this.pendingSince >= (this.options.silentMs ?? 3000);
    if (silent && !this.goneReported) {
      const newer = this.newerHost();
      if (newer) {
        this.goneReported = true;
        this.log.warn(
          `this window has not answered for ${((now - this.pendingSince!) / 1000).toFixed(1)} s and a newer host of it ` +
            `(pid ${newer.pid}) started since: its trees are ended here`,
        );
        this.options.onGone(newer);
      }
    }
    this.schedule(silent ? (this.options.scanIntervalMs ?? 250) : (this.probeIntervalMs ?? this.options.probeIntervalMs ?? 1000));
    this.emit('checked', silent);
  }

  private sendProbe(now: number): void {
    this.pendingSince = now;
    let answered: PromiseLike<unknown>;
    try {
      answered = this.options.probe();
    } catch {
      this.pendingSince = undefined; // a probe that cannot even be sent says nothing about the window
      return;
    }
    answered.then(
      () => this.answered(),
      () => this.answered(),
    );
  }

  private answered(): void {
    // A rejection is an answer too: the window's side ran and replied.
    if (this.pendingSince !== undefined && this.goneReported) this.log.info('the window answers again');
    this.pendingSince = undefined;
    this.lastAnswer = nowAsStartKey() ?? this.lastAnswer;
    this.goneReported = false;
  }

  /** A live host of this key, not this one, that started after the window last answered. */
  private newerHost(): ProcessIdentity | undefined {
    if (this.lastAnswer === undefined) return undefined;
    return this.live().find(
      (h) => h.key === this.options.key && h.pid !== this.self!.pid && h.startKey > this.lastAnswer! + START_KEY_SLACK,
    );
  }

  /** Registrations of live hosts (any key); removes those of hosts that are gone. */
  private live(): (ProcessIdentity & { key: string })[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.options.dir);
    } catch {
      return [];
    }
    const uid = process.getuid?.();
    const out: (ProcessIdentity & { key: string })[] = [];
    for (const name of names) {
      const m = WINDOW_FILE.exec(name);
      if (!m) continue;
      const file = path.join(this.options.dir, name);
      let st: fs.Stats;
      try {
        st = fs.lstatSync(file);
      } catch {
        continue;
      }
      if (!st.isFile() || (uid !== undefined && st.uid !== uid)) continue; // not ours: neither trusted nor removed
      const host = { key: m[1], pid: Number(m[2]), startKey: Number(m[3]) };
      let p;
      try {
        p = this.table.read(host.pid);
      } catch {
        continue; // unknown: neither live nor stale
      }
      if (p && p.startKey === host.startKey) out.push(host);
      else if (!p && !procEntryExists(host.pid)) rmQuiet(file);
      else if (p && p.startKey !== host.startKey) rmQuiet(file);
    }
    return out;
  }
}

/** Whether the pid may still exist (not provably gone); true off Linux, where nothing is removed on a guess. */
function procEntryExists(pid: number): boolean {
  return process.platform !== 'linux' || pidPresence(pid) !== 'gone';
}

function rmQuiet(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* gone already */
  }
}
