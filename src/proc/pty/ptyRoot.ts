/**
 * The root of an owned tree on a pseudo-terminal of its own (spawnPtyTree.ts starts it). Interactive agent CLIs
 * (Claude Code, Codex, Gemini, Aider) need a terminal: on pipes they refuse to start or drop to a print mode.
 * forkpty() makes the root the leader of a new session with the terminal as its controlling tty, so its group is
 * the terminal's foreground group: Ctrl-C, Ctrl-Z and Ctrl-D are the tty's business, as in any terminal.
 *
 * Nothing here signals a process: node-pty's kill() and destroy() (which SIGHUPs a pid that may have been
 * reused) are never called. Kills go through the killer (kill/treeKiller.ts); the master side closes by itself
 * once the root exits.
 */
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as os from 'os';
import { StringDecoder } from 'string_decoder';
import { TreeRoot } from '../spawn/spawnTree';

/** The part of `@lydell/node-pty`'s IPty this module uses. */
export interface NodePty {
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
 * It has no kill: see kill/treeKiller.ts.
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
