/**
 * Output to a terminal that never blocks this process. Node writes to a terminal synchronously: one that stops
 * reading (an ssh connection that stalls, scroll lock, a terminal whose window is frozen) would block `run` in
 * write(2), and with it the timeout, every signal and the kill of the tree. This opens the terminal again, as a
 * file description of its own in non-blocking mode (stdout's own flags are left as they are, for whoever else
 * shares them), and writes from a queue: while the terminal takes nothing, the queue waits, `write()` answers
 * false, and 'drain' follows once it reads again (the relay then holds the agent back, see relay.ts).
 *
 * Linux only (`/proc/self/fd/N` opens the terminal device afresh; elsewhere it would share stdout's flags):
 * elsewhere the caller keeps its blocking stream.
 */
import * as fs from 'fs';
import { Writable } from 'stream';

/** How long a write that the terminal refused waits before it is tried again, at most (ms). */
const RETRY_MAX_MS = 100;

export class TerminalOutput extends Writable {
  constructor(private readonly fd: number) {
    super({ highWaterMark: 64 * 1024 });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.writeFrom(chunk, 0, done, 5);
  }

  private writeFrom(chunk: Buffer, offset: number, done: () => void, retryMs: number): void {
    fs.write(this.fd, chunk, offset, chunk.length - offset, null, (error, written) => {
      if (error && (error as NodeJS.ErrnoException).code === 'EAGAIN') {
        // The terminal reads nothing now: try again a little later, never blocking.
        setTimeout(() => this.writeFrom(chunk, offset, done, Math.min(retryMs * 2, RETRY_MAX_MS)), retryMs).unref();
        return;
      }
      // Any other error: the terminal is gone (EIO after a hang-up); nothing more can be shown on it.
      if (error || offset + written >= chunk.length) return done();
      this.writeFrom(chunk, offset + written, done, 5);
    });
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      /* closed already */
    }
    done(error);
  }

  /** Waits (up to `ms`) until the terminal has taken everything written; returns whether it has. */
  async flush(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.writableLength > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return this.writableLength === 0;
  }
}

/**
 * A non-blocking writer to the terminal on descriptor `fd` (1 or 2), or undefined when that is no terminal or
 * the platform cannot reopen it (then the caller's own stream is used).
 */
export function openTerminalOutput(fd: number, stream: { isTTY?: boolean }): TerminalOutput | undefined {
  if (process.platform !== 'linux' || stream.isTTY !== true) return undefined;
  try {
    const { O_WRONLY, O_NONBLOCK, O_NOCTTY } = fs.constants;
    return new TerminalOutput(fs.openSync(`/proc/self/fd/${fd}`, O_WRONLY | O_NONBLOCK | O_NOCTTY));
  } catch {
    return undefined;
  }
}
