/**
 * The reads every `/proc` file goes through: one open, read and close per file (readFileSync would also fstat),
 * into buffers kept for the next read, so a snapshot of a thousand processes allocates almost nothing.
 */
import * as fs from 'fs';

const readBuffer = Buffer.allocUnsafe(4096);

/** Runs `read` on the open file; undefined when the file cannot be opened or read (the process is gone). */
function withOpenFile<T>(path: string, read: (fd: number) => T): T | undefined {
  let fd: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    return read(fd);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads a small /proc file with one open/read/close (readFileSync also fstat()s). */
export function readSmall(path: string): string | undefined {
  return withOpenFile(path, (fd) => {
    const n = fs.readSync(fd, readBuffer, 0, readBuffer.length, 0);
    return readBuffer.toString('latin1', 0, n);
  });
}

let wholeBuffer = Buffer.allocUnsafe(64 * 1024);

/**
 * Reads a whole /proc file (cmdline, environ) into a shared buffer with one open, reads until EOF and one
 * close: no fstat and no fresh 64 KiB buffer per file, as readFileSync would. The result is a view into the
 * shared buffer, valid until the next call.
 */
export function readWhole(path: string): Buffer | undefined {
  return withOpenFile(path, (fd) => {
    let length = 0;
    for (;;) {
      if (length === wholeBuffer.length) {
        const bigger = Buffer.allocUnsafe(wholeBuffer.length * 2);
        wholeBuffer.copy(bigger, 0, 0, length);
        wholeBuffer = bigger;
      }
      const n = fs.readSync(fd, wholeBuffer, length, wholeBuffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return wholeBuffer.subarray(0, length);
  });
}

/** At most this many files kept open by one `OpenProcFiles`. */
const MAX_OPEN = 256;
/** A kept file not read again for this long is closed. */
const UNUSED_MS = 30_000;

/**
 * Files of /proc read again and again (a tracked member's stat and children list), kept open: a read is one
 * pread, not an open, a read and a close (2.5x cheaper here). A descriptor holds its process, not its pid: once
 * the process is gone its stat fails (ESRCH), that file is closed, and the pid is read again by its path, which
 * finds whoever holds it now; a children list finds nothing then, so the caller keys it by its process (pid and
 * start), never by its path alone. Descriptors are close-on-exec (libuv opens them so): no child inherits one.
 */
export class OpenProcFiles {
  /** Each kept file, and what `readParsed` last made of its text (with the context it was parsed in). */
  private readonly files = new Map<string, { fd: number; usedAt: number; parsed?: { text: string; context: number; value: unknown } }>();
  private readonly buffer = Buffer.allocUnsafe(4096);

  /**
   * The file's text, or undefined when it cannot be read (the process is gone) or is longer than 4 KiB (read it
   * by its path then). `key`: what the open file stands for, its path by default.
   */
  read(path: string, key = path): string | undefined {
    return this.readKept(key) ?? this.openAndRead(path, key);
  }

  /**
   * What `parse` makes of the file's text (see `read`), or undefined where it cannot be read. Where the text and
   * `context` are what they were at the last read of `key`, the value made then: a process that did not run since
   * reads the same, and is not parsed again. The value is shared, so it is never changed.
   */
  readParsed<T>(path: string, parse: (text: string, context: number) => T, context: number, key = path): T | undefined {
    const text = this.read(path, key);
    if (text === undefined) return undefined;
    const kept = this.files.get(key);
    const last = kept?.parsed;
    if (last && last.text === text && last.context === context) return last.value as T;
    const value = parse(text, context);
    if (kept) kept.parsed = { text, context, value };
    return value;
  }

  /**
   * The file's text through the descriptor kept for `key`, never reopened by its path: undefined once that file's
   * process is gone. The first read opens the file, then asks `belongs()` whether it is the one `key` stands for
   * (a pid can be another process's by then): a check made after the open proves what the descriptor holds.
   */
  readHeld(path: string, key: string, belongs: () => boolean): string | undefined {
    const kept = this.readKept(key);
    if (kept !== null || this.files.size >= MAX_OPEN) return kept ?? undefined;
    return this.openAndRead(path, key, belongs);
  }

  /**
   * The text through the descriptor kept for `key`; undefined where it cannot be read any more (it is closed), null
   * where none is kept.
   */
  private readKept(key: string): string | undefined | null {
    const kept = this.files.get(key);
    if (!kept) return null;
    const text = this.pread(kept.fd);
    if (text === undefined) this.close(key);
    else kept.usedAt = performance.now();
    return text;
  }

  /** Opens the file and reads it; the descriptor is kept for `key` where `belongs()` and there is room. */
  private openAndRead(path: string, key: string, belongs = () => true): string | undefined {
    let fd: number;
    try {
      fd = fs.openSync(path, 'r');
    } catch {
      return undefined;
    }
    const text = belongs() ? this.pread(fd) : undefined;
    if (text === undefined || this.files.size >= MAX_OPEN) fs.closeSync(fd);
    else this.files.set(key, { fd, usedAt: performance.now() });
    return text;
  }

  /** Closes the files not read for a while. */
  closeUnused(): void {
    const before = performance.now() - UNUSED_MS;
    for (const [key, kept] of this.files) if (kept.usedAt < before) this.close(key);
  }

  /** Closes the file kept for `key`, if any. */
  closeFile(key: string): void {
    this.close(key);
  }

  /** Closes every file kept. */
  closeAll(): void {
    for (const key of [...this.files.keys()]) this.close(key);
  }

  /** The whole file from its start: up to the buffer (a stat line, a children list); past it, read by its path. */
  private pread(fd: number): string | undefined {
    try {
      const n = fs.readSync(fd, this.buffer, 0, this.buffer.length, 0);
      return n < this.buffer.length ? this.buffer.toString('latin1', 0, n) : undefined;
    } catch {
      return undefined;
    }
  }

  private close(key: string): void {
    const kept = this.files.get(key);
    this.files.delete(key);
    if (kept) fs.closeSync(kept.fd);
  }
}

/**
 * A process's PSS in bytes (`Pss:` of /proc/<pid>/smaps_rollup, Linux 4.14+: its pages, each shared one divided
 * among the processes that map it); undefined where it cannot be read (gone, another user's, an older kernel).
 * A walk of its page tables: 50 µs for a `sleep`, up to a millisecond for a Node process.
 */
export function readPssBytes(pid: number): number | undefined {
  const text = readSmall(`/proc/${pid}/smaps_rollup`);
  const m = text === undefined ? null : /^Pss:\s+(\d+) kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * A process's CPU time in ns (the first field of /proc/<pid>/schedstat: its time on a CPU, exact, where stat's
 * clock ticks round a short run away); undefined where it cannot be read.
 */
export function readCpuNs(pid: number): number | undefined {
  const text = readSmall(`/proc/${pid}/schedstat`);
  const ns = text === undefined ? NaN : Number(text.split(' ')[0]);
  return Number.isFinite(ns) ? ns : undefined;
}
