/**
 * Owned trees on a pseudo-terminal of their own. Interactive agent CLIs (Claude Code, Codex, Gemini, Aider) need
 * a terminal: on pipes they refuse to start or drop to a print mode. The root is spawned through the same path as
 * every tree (spawn.ts: tag, cgroup launcher, record) by `@lydell/node-pty`, a prebuilt N-API module (one binary
 * serves Node and Electron, no compiler), never VS Code's own node-pty. forkpty() makes the root the leader of
 * a new session with the terminal as its controlling tty, so its group is the terminal's foreground group:
 * Ctrl-C, Ctrl-Z and Ctrl-D are the tty's business, as in any terminal.
 *
 * Nothing here signals a process: node-pty's kill() and destroy() (which SIGHUPs a pid that may have been
 * reused) are never called. Kills go through the killer (treeKiller.ts); the master side closes by itself once the root exits.
 */
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as os from 'os';
import { StringDecoder } from 'string_decoder';
import { ProcessTable } from './platform/processTable';
import { Core, processCore } from './core';
import { SpawnedTree, SpawnError, spawnTreeWith, SpawnTreeOptions, TreeRoot } from './spawn';

/** The part of `@lydell/node-pty`'s IPty this module uses. */
interface NodePty {
  readonly pid: number;
  readonly cols: number;
  readonly rows: number;
  /** The master's file descriptor, and the slave's device (Unix). */
  readonly fd?: number;
  readonly ptsName?: string;
  onData(listener: (data: string | Buffer) => void): unknown;
  onExit(listener: (e: { exitCode: number; signal?: number }) => void): unknown;
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  on(event: 'error', listener: (e: Error) => void): void;
}

interface NodePtyModule {
  spawn(
    file: string,
    args: string[],
    options: {
      name: string;
      cols: number;
      rows: number;
      cwd: string;
      env: NodeJS.ProcessEnv;
      encoding: string | null;
    },
  ): NodePty;
}

/** The module, or why there is none (the caller falls back to pipes and says so). */
export interface PtyAvailability {
  module?: NodePtyModule;
  problem?: string;
}

let cached: PtyAvailability | undefined;

/** Loads `@lydell/node-pty` once (see `loadPtyWith`). */
function loadPty(): PtyAvailability {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a native module, loaded on first use, that may be missing
  return (cached ??= loadPtyWith(() => require('@lydell/node-pty')));
}

/**
 * Loads the module through `load` and says why not, when not. Windows keeps pipes: ConPTY and its console host
 * have not been tried with the Windows kill path (taskkill /T from the root).
 */
export function loadPtyWith(load: () => unknown, platform: NodeJS.Platform = process.platform): PtyAvailability {
  if (platform === 'win32') return { problem: 'pseudo-terminals are used on Linux and macOS; on Windows agents run on pipes' };
  try {
    const m = load() as Partial<NodePtyModule> | undefined;
    return typeof m?.spawn === 'function' ? { module: m as NodePtyModule } : { problem: 'cannot load @lydell/node-pty: it has no spawn()' };
  } catch (e) {
    const first =
      String((e as Error)?.message ?? e)
        .split('\n')
        .find((l) => l.trim()) ?? 'unknown error';
    return { problem: `cannot load @lydell/node-pty (${platform}-${process.arch}): ${first}` };
  }
}

/** Why agents cannot get a pseudo-terminal here, or undefined when they can. */
export function ptyProblem(): string | undefined {
  return loadPty().problem;
}

const DEFAULT_COLS = 80;
const DEFAULT_ROWS = 24;

/** A terminal size the kernel accepts (1..65535 each); anything else becomes the default. */
export function clampSize(cols: number | undefined, rows: number | undefined): { cols: number; rows: number } {
  const fit = (n: number | undefined, d: number) =>
    typeof n === 'number' && Number.isFinite(n) && n >= 1 ? Math.min(Math.floor(n), 65535) : d;
  return { cols: fit(cols, DEFAULT_COLS), rows: fit(rows, DEFAULT_ROWS) };
}

/** The stream node-pty reads the master with (internal to node-pty 1.1.0, pinned in package.json). */
interface MasterSocket {
  read(): Buffer | null;
  destroy(...args: unknown[]): unknown;
}

/**
 * The root of a tree on a pseudo-terminal, as the owner sees any root (pid, exitCode, signalCode, 'exit',
 * 'error'), plus the terminal's side: 'data' (output), write (input, raw), resize, pause/resume (flow control).
 * It has no kill: see treeKiller.ts.
 *
 * Every byte the agent wrote arrives before 'exit'. On Linux a master whose slave side has closed may answer
 * EIO while output is still queued (node-pty issues #72, #85, #726: the tail of a fast writer's output is lost),
 * and node-pty gives up reading 200 ms after the root's exit. So this holds the slave side open itself (nothing
 * reads it), which leaves the master no EIO to answer, and when node-pty gives up it first reads what is left,
 * synchronously, paused or not (at most the kernel's buffer), then lets the slave go.
 */
export class PtyRoot extends EventEmitter implements TreeRoot {
  readonly pid: number;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private exited = false;
  private slave: number | undefined;

  constructor(
    private readonly pty: NodePty,
    private readonly decoder?: StringDecoder,
  ) {
    super();
    this.pid = pty.pid;
    // A second 'error' listener keeps node-pty from throwing. EIO is how the master side learns that the
    // terminal's last holder has gone (the normal end); EAGAIN is a retry.
    pty.on('error', (e) => {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      if (code.includes('EIO') || code.includes('EAGAIN')) return;
      if (this.listenerCount('error') > 0) this.emit('error', e);
    });
    pty.onData((data) => this.deliver(data));
    this.holdSlave();
    // node-pty reports the exit once the output is drained (see above).
    pty.onExit(({ exitCode, signal }) => {
      this.exited = true;
      this.releaseSlave();
      const tail = this.decoder?.end();
      if (tail) this.emit('data', tail);
      const name = signal
        ? (Object.entries(os.constants.signals).find(([, n]) => n === signal)?.[0] as NodeJS.Signals | undefined)
        : undefined;
      this.signalCode = signal ? (name ?? null) : null;
      this.exitCode = signal ? null : exitCode;
      this.emit('exit', this.exitCode, this.signalCode);
    });
  }

  private deliver(data: string | Buffer): void {
    if (this.decoder && typeof data !== 'string') {
      const text = this.decoder.write(data);
      if (text) this.emit('data', text);
    } else if (data.length > 0) {
      this.emit('data', data);
    }
  }

  private holdSlave(): void {
    const socket = (this.pty as unknown as { _socket?: MasterSocket })._socket;
    const { fd, ptsName } = this.pty;
    if (!socket || fd === undefined || !ptsName || process.platform === 'win32') return;
    try {
      this.slave = fs.openSync(ptsName, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
    } catch {
      return; // not ours to open: node-pty's own behaviour, tail losses included
    }
    const destroy = socket.destroy;
    socket.destroy = (...args: unknown[]) => {
      this.drain(socket, fd);
      this.releaseSlave();
      return destroy.apply(socket, args);
    };
  }

  /** Everything still queued for us: what the stream has buffered (while paused), then the master itself. */
  private drain(socket: MasterSocket, fd: number): void {
    if (this.slave === undefined) return;
    try {
      // read() hands each buffered chunk to the 'data' listeners itself, in order.
      while (socket.read() !== null);
    } catch {
      /* nothing buffered */
    }
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = fs.readSync(fd, buf, 0, buf.length, null);
      } catch {
        break; // EAGAIN: all read
      }
      if (n <= 0) break;
      this.deliver(Buffer.from(buf.subarray(0, n)));
    }
  }

  private releaseSlave(): void {
    if (this.slave === undefined) return;
    try {
      fs.closeSync(this.slave);
    } catch {
      /* already closed */
    }
    this.slave = undefined;
  }

  get cols(): number {
    return this.pty.cols;
  }

  get rows(): number {
    return this.pty.rows;
  }

  get hasExited(): boolean {
    return this.exited;
  }

  /** Input as typed: raw bytes, the tty's line discipline does the rest. */
  write(data: string | Buffer): void {
    if (!this.exited) this.pty.write(data);
  }

  /** A new window size: the kernel sends SIGWINCH to the terminal's foreground group. */
  resize(cols: number, rows: number): void {
    const size = clampSize(cols, rows);
    if (this.exited || (size.cols === this.pty.cols && size.rows === this.pty.rows)) return;
    try {
      this.pty.resize(size.cols, size.rows);
    } catch {
      /* the terminal is closing: nothing to resize */
    }
  }

  /** Stops reading output: once the kernel's buffer is full the agent's writes block (flow control). */
  pause(): void {
    if (!this.exited) this.pty.pause();
  }

  resume(): void {
    if (!this.exited) this.pty.resume();
  }
}

export interface PtySpawnOptions extends Omit<SpawnTreeOptions, 'stdio'> {
  cols?: number;
  rows?: number;
  /** 'utf8' (default): output as strings, decoded across chunk boundaries; null: raw Buffers (a relay). */
  encoding?: 'utf8' | null;
}

/** The terminal type when the environment names none: what VS Code's own terminals set. */
export const DEFAULT_TERM = 'xterm-256color';

/** Keyboard protocols off: kitty's progressive enhancement (pop every level, then flags 0) and xterm's modifyOtherKeys. */
const KEYBOARD_PLAIN = '\x1b[<99u\x1b[=0;1u\x1b[>4;0m';

/**
 * Modes a full-screen program may leave on when it is killed: keyboard protocols (VS Code 1.139's terminal honours
 * kitty's: left on, every key reaches the shell as `CSI … u` and the terminal is unusable), back to the normal
 * screen (without moving the cursor; keyboard modes again, since each screen keeps its own), cursor shown, mouse
 * reporting, focus events and bracketed paste off, normal cursor keys and keypad, autowrap on, default colours.
 * Written by the agent terminal (extension) and by `agent-trees run`'s relay when the agent has ended.
 */
export const RESTORE_TERMINAL_MODES =
  KEYBOARD_PLAIN +
  '\x1b[?1047l' +
  KEYBOARD_PLAIN +
  '\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b[?1l\x1b>\x1b[?7h\x1b[0m';

/**
 * Spawns an owned tree whose root runs on a new pseudo-terminal. Throws SpawnError when nothing could start,
 * including when the module cannot load (check `ptyProblem()` first to fall back to pipes).
 */
export function spawnPtyTree(options: PtySpawnOptions, core: Pick<Core, 'table' | 'cgroupTier'> = processCore()): SpawnedTree<PtyRoot> {
  const { module, problem } = loadPty();
  if (!module) throw new SpawnError(problem!, 'EINVAL');
  const size = clampSize(options.cols, options.rows);
  return spawnTreeWith<PtyRoot>(
    options,
    (launch) => {
      const env = { ...launch.env };
      // A size inherited from the spawning process would contradict the terminal's own.
      delete env.COLUMNS;
      delete env.LINES;
      const pty = module.spawn(launch.file, launch.args, {
        name: env.TERM || DEFAULT_TERM,
        cols: size.cols,
        rows: size.rows,
        cwd: launch.cwd,
        env,
        encoding: null, // bytes: PtyRoot decodes, so what it drains at the end decodes the same way
      });
      awaitOwnSession(pty.pid, core.table);
      return { root: new PtyRoot(pty, options.encoding === null ? undefined : new StringDecoder('utf8')), sessionLeader: true };
    },
    core,
  );
}

/**
 * node-pty returns right after fork(), before the child's setsid(): until then the child is in our own session
 * and group, which the kill guard rightly refuses to signal, so a kill in that window would miss the root.
 * Waits (synchronously, normally well under a millisecond) until the child leads its own session or is gone.
 */
function awaitOwnSession(pid: number, table: Pick<ProcessTable, 'read'> = processCore().table, timeoutMs = 2000): void {
  const until = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const p = table.read(pid);
    if (!p || p.sid === pid || Date.now() > until) return;
    try {
      Atomics.wait(pause, 0, 0, 1);
    } catch {
      /* a thread that may not block: spin */
    }
  }
}
