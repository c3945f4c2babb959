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
