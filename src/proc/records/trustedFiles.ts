/**
 * The file operations of a records folder, none of which trusts the folder's contents: a record is read only
 * when it is a regular file of ours (owner uid, not writable by others), opened without following a symlink or
 * blocking on a FIFO, and read up to a bound. Anything else is reported and left where it is.
 */
import * as fs from 'fs';
import * as path from 'path';
import { MAX_RECORD_BYTES } from './schema';

/** A file that is not ours to read, or not a record file at all: reported, never acted on, never moved. */
export class UntrustedFileError extends Error {}

const OPEN_FOR_READING = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

export function euid(): number | undefined {
  return typeof process.geteuid === 'function' ? process.geteuid() : undefined;
}

function kindOf(st: fs.Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a folder';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Why a file's metadata makes it untrustworthy, or undefined. */
export function fileTrustProblem(st: fs.Stats, uid: number | undefined): string | undefined {
  if (!st.isFile()) return `${kindOf(st)}, not a regular file`;
  if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not by this user (uid ${uid})`;
  if (uid !== undefined && (st.mode & 0o022) !== 0) return `writable by other users (mode ${(st.mode & 0o7777).toString(8)})`;
  if (st.size > MAX_RECORD_BYTES) return `${st.size} bytes, more than a record can be (${MAX_RECORD_BYTES})`;
  return undefined;
}

/**
 * Reads a file only if it is a regular file of ours, never following a symlink and never blocking (a FIFO
 * opened with O_NONBLOCK returns at once, and fstat then refuses it). Undefined when it does not exist.
 * Messages never quote the file's content or a link's target.
 */
export function readTrusted(file: string, uid: number | undefined): string | undefined {
  if (!fs.constants.O_NOFOLLOW) {
    // No O_NOFOLLOW (Windows): look before opening.
    try {
      if (fs.lstatSync(file).isSymbolicLink()) throw new UntrustedFileError('a symbolic link, not a regular file: not followed');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }
  let fd: number;
  try {
    fd = fs.openSync(file, OPEN_FOR_READING);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new UntrustedFileError('a symbolic link, not a regular file: not followed');
    throw new UntrustedFileError(`cannot be opened (${code ?? 'error'})`);
  }
  try {
    const st = fs.fstatSync(fd);
    const problem = fileTrustProblem(st, uid);
    if (problem) throw new UntrustedFileError(problem);
    let buf = Buffer.allocUnsafe(Math.min(MAX_RECORD_BYTES + 1, Math.max(st.size + 1, 4096)));
    let length = 0;
    for (;;) {
      if (length === buf.length) {
        if (length > MAX_RECORD_BYTES) throw new UntrustedFileError(`more than a record can be (${MAX_RECORD_BYTES} bytes)`);
        const bigger = Buffer.allocUnsafe(Math.min(MAX_RECORD_BYTES + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, length);
        buf = bigger;
      }
      const n = fs.readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return buf.toString('utf8', 0, length);
  } catch (e) {
    if (e instanceof UntrustedFileError) throw e;
    throw new UntrustedFileError(`cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * mkdir -p with mode 0700, one level at a time. (Node's recursive mkdirSync loops forever where mkdir answers
 * ENOENT under a parent that exists, as in /proc.)
 */
export function makeFolders(dir: string): void {
  const missing: string[] = [];
  for (let d = path.resolve(dir); !fs.existsSync(d); d = path.dirname(d)) {
    missing.unshift(d);
    if (path.dirname(d) === d) break;
  }
  for (const d of missing) {
    try {
      fs.mkdirSync(d, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

export function rmQuiet(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* nothing to remove */
  }
}
