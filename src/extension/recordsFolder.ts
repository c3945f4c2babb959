/**
 * Whether this extension host can keep its records: the folder made (0700, ours), a file written in it, and room
 * left on its disk. Without a record no tree is started (the core refuses: a tree nobody recorded could not be
 * found and ended after a crash), so activation says once what is wrong and where, and everything that needs no
 * record (the view, the window's terminals and what they leave, killing from the view) works as usual. Pure Node
 * (no `vscode`).
 */
import * as fs from 'fs';
import * as path from 'path';
import type { RecordStore } from '../proc';

/** What an errno means for a folder the user has to fix. */
const CAUSES: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  ENOTDIR: 'a file stands where a folder should be',
  EEXIST: 'a file stands where a folder should be',
};

/** Less room than this on the folder's disk counts as full: a window's records and their claims take a few KiB each. */
const MIN_FREE_BYTES = 64 * 1024;

/** Why records cannot be kept in `store`'s folder (a sentence naming the folder and the cause), or undefined. */
export function recordsFolderProblem(store: Pick<RecordStore, 'dir' | 'ensureDir'>): string | undefined {
  try {
    store.ensureDir();
  } catch (e) {
    const message = (e as Error).message;
    return explained(message, errnoOf(e) ?? /\((E[A-Z]+)\)/.exec(message)?.[1]);
  }
  const probe = path.join(store.dir, `.write-check-${process.pid}.tmp`);
  let fd: number | undefined;
  try {
    fd = fs.openSync(probe, 'wx', 0o600);
    fs.writeSync(fd, Buffer.alloc(512, 0x20)); // a record's size
    // A full disk may accept the write and fail only when the data goes to disk: its free space tells, where a
    // flush would cost every activation milliseconds (more on a busy or a network disk).
    const { bavail, bfree, bsize } = fs.statfsSync(store.dir);
    const free = (process.getuid?.() === 0 ? bfree : bavail) * bsize;
    if (free < MIN_FREE_BYTES) return explained(`records folder ${store.dir}: cannot be written (ENOSPC)`, 'ENOSPC');
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    return explained(`records folder ${store.dir}: cannot be written (${code ?? (e as Error).message})`, code);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
    try {
      fs.unlinkSync(probe); // not rmSync: its first call loads Node's rimraf, a millisecond of activation
    } catch {}
  }
}

function errnoOf(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

function explained(message: string, code: string | undefined): string {
  const cause = code === undefined ? undefined : CAUSES[code];
  return cause ? `${message}: ${cause}` : message;
}
