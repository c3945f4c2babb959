/**
 * Whether this extension host can keep its records: the folder made (0700, ours) and a file written and flushed in
 * it. Without a record no tree is started (the core refuses: a tree nobody recorded could not be found and ended
 * after a crash), so activation says once what is wrong and where, and everything that needs no record (the view,
 * the window's terminals and what they leave, killing from the view) works as usual. Pure Node (no `vscode`).
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
    // A record's size, flushed: a full disk may accept the write and fail only when the data goes to disk.
    fs.writeSync(fd, Buffer.alloc(512, 0x20));
    fs.fsyncSync(fd);
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    return explained(`records folder ${store.dir}: cannot be written (${code ?? (e as Error).message})`, code);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
    try {
      fs.rmSync(probe, { force: true });
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
