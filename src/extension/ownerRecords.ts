/**
 * The records folder as the view and the terminals see it: whose record is whose (the core's classifyRecords),
 * read again when the folder changes (records are written by rename, which changes the folder's mtime) and at
 * least every 10 s (an owner can die without touching the folder). One stat per refresh otherwise.
 */
import * as fs from 'fs';
import { classifyRecords, OwnerInfo, OwnerRecords, processCore, RecordStore } from '../proc';

const MAX_AGE_MS = 10_000;

export class OwnerRecordsReader {
  private cached: OwnerRecords | undefined;
  private readAt = 0;
  private dirMtime = -1;

  constructor(
    private readonly store: RecordStore,
    private readonly self: OwnerInfo,
  ) {}

  get(): OwnerRecords {
    const mtime = folderMtime(this.store.dir);
    if (!this.cached || mtime !== this.dirMtime || Date.now() - this.readAt > MAX_AGE_MS) {
      this.cached = classifyRecords(this.store, this.self, processCore().table);
      this.readAt = Date.now();
      this.dirMtime = mtime;
    }
    return this.cached;
  }

  /** Read again on the next `get()` (after a sweep, say). */
  invalidate(): void {
    this.cached = undefined;
  }
}

function folderMtime(dir: string): number {
  try {
    return fs.statSync(dir).mtimeMs;
  } catch {
    return 0;
  }
}
