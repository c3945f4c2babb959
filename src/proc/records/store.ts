/**
 * The records folder: one record per owning process, `<dir>/<owner pid>.json`, written atomically (temp file in
 * the same folder, then rename) and removed when the owner tracks nothing; read, listed and, when corrupt, set
 * aside, through the trust checks of trustedFiles.ts. The claim protocol is claims.ts's.
 */
import * as fs from 'fs';
import * as path from 'path';
import { hasBootIdentity, OwnerInfo } from '../identity/ownerIdentity';
import type { HostClock } from '../platform/bootClock';
import {
  CURRENT_NAME,
  currentPath,
  identityOfTag,
  OLD_TEMP_NAME,
  randomSuffix,
  RECORD_NAME,
  recordPath,
  TEMP_NAME,
  tempPath,
  WATCHDOG_LOG_NAME,
} from './fileNames';
import {
  HostProcessesRecord,
  OwnerRecord,
  parseRecord,
  RECORD_VERSION,
  RecordError,
  RecordFile,
  RecordProblem,
  RecordVersionError,
  TreeRecord,
} from './schema';
import { euid, makeFolders, readTrusted, rmQuiet, UntrustedFileError } from './trustedFiles';

/** One records folder of ours: its records read, written, listed and set aside (the claims are `RecordStore`'s). */
export class RecordFolder {
  /** The uid files and the folder must belong to: ours (undefined where there are no uids: Windows). */
  protected readonly uid: number | undefined;

  constructor(
    readonly dir: string,
    options: { uid?: number } = {},
  ) {
    this.uid = options.uid ?? euid();
  }

  /** Creates the folder (0700) if needed, then checks it is ours and closed to others; throws if not. */
  ensureDir(): void {
    let made: Error | undefined;
    try {
      makeFolders(this.dir);
    } catch (e) {
      made = e as Error;
    }
    const problem = this.folderProblem();
    if (problem && problem !== 'missing') throw new UntrustedFileError(`records folder ${this.dir}: ${problem}`);
    if (made)
      throw new UntrustedFileError(
        `records folder ${this.dir}: cannot be created (${(made as NodeJS.ErrnoException).code ?? made.message})`,
      );
    if (problem) throw new UntrustedFileError(`records folder ${this.dir}: a symbolic link to nothing`);
  }

  /**
   * Why the folder cannot be trusted (someone else could plant, swap or remove records in it), or undefined.
   * Checked on every use, not only at creation: modes and owners change. 'missing' when it does not exist.
   */
  folderProblem(): string | undefined {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.dir);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : `cannot be looked at (${(e as NodeJS.ErrnoException).code})`;
    }
    if (!st.isDirectory()) return 'not a folder';
    if (this.uid === undefined) return undefined;
    if (st.uid !== this.uid) return `owned by uid ${st.uid}, not by this user (uid ${this.uid}): its records are not trusted`;
    if ((st.mode & 0o022) !== 0) return `writable by other users (mode ${(st.mode & 0o7777).toString(8)}): its records are not trusted`;
    return undefined;
  }

  fileOf(ownerPid: number): string {
    return recordPath(this.dir, ownerPid);
  }

  /**
   * Writes the owner's record atomically, or removes it when it records nothing (no tree, no host processes).
   * Its `.current` link is set first and removed first (see claims.ts), so a claim given back can never bring back
   * more than it says.
   */
  write(owner: OwnerInfo, trees: TreeRecord[], hostProcesses?: HostProcessesRecord): void {
    const file = this.fileOf(owner.pid);
    const current = this.currentOf(owner);
    // Ticks mean something only with the boot they count from: without the owner's, none is written (and so no
    // host processes, which are known by their ticks only).
    const boot = hasBootIdentity(owner);
    if (trees.length === 0 && !(hostProcesses && boot)) {
      rmQuiet(current);
      rmQuiet(file);
      return;
    }
    const written = boot ? trees : trees.map(({ rootStartTicks: _start, trackedAtTicks: _tracked, ...epochOnly }) => epochOnly);
    const record: OwnerRecord = { version: RECORD_VERSION, owner, trees: written, ...(hostProcesses && boot ? { hostProcesses } : {}) };
    const tmp = this.writeTemp(record, owner);
    const link = tempPath(this.dir, owner.pid, owner);
    try {
      fs.linkSync(tmp, link);
      fs.renameSync(link, current);
    } catch {
      // No hard links here (some network or FAT file systems): no `.current` at all, never a stale one.
      rmQuiet(link);
      rmQuiet(current);
    }
    try {
      fs.renameSync(tmp, file);
    } finally {
      // rename() leaves `tmp` when a give-back has linked this very record under `file` meanwhile.
      rmQuiet(tmp);
    }
  }

  /** The owner's link to its current record: `.<pid>.json.<owner tag>.current`. */
  currentOf(owner: OwnerInfo): string {
    return currentPath(this.dir, owner);
  }

  /** Writes a record to a new temp file named after its writer (so a sweep can tell a dead writer's). */
  protected writeTemp(record: OwnerRecord, writer: OwnerInfo): string {
    this.ensureDir();
    const tmp = tempPath(this.dir, record.owner.pid, writer);
    const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0), 0o600);
    try {
      fs.writeSync(fd, JSON.stringify(record) + '\n');
    } catch (e) {
      fs.closeSync(fd);
      rmQuiet(tmp);
      throw e;
    }
    fs.closeSync(fd);
    return tmp;
  }

  /** Reads one owner's record; undefined when there is none. Throws on a corrupt or untrusted file. */
  read(ownerPid: number): OwnerRecord | undefined {
    const problem = this.folderProblem();
    if (problem === 'missing') return undefined;
    if (problem) throw new UntrustedFileError(`records folder ${this.dir}: ${problem}`);
    const text = readTrusted(this.fileOf(ownerPid), this.uid);
    return text === undefined ? undefined : parseRecord(text);
  }

  /**
   * Every record that can be trusted and read. What cannot is reported: a folder others can write (nothing in
   * it is read), a file that is not a regular file of ours (left where it is), a record of another format
   * version (left for the tool that wrote it). A corrupt, truncated or foreign file of ours is set aside as
   * `<name>.bad-<time>-<random>` only with `setAside` (the sweep): listing alone changes nothing.
   */
  list(options: { setAside?: boolean } = {}): { records: RecordFile[]; problems: RecordProblem[] } {
    const records: RecordFile[] = [];
    const problems: RecordProblem[] = [];
    const folder = this.folderProblem();
    if (folder === 'missing') return { records, problems };
    if (folder) {
      problems.push({ file: this.dir, problem: `records folder ${folder}; nothing in it was read` });
      return { records, problems };
    }
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch (e) {
      problems.push({
        file: this.dir,
        problem: `cannot list the records folder (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      });
      return { records, problems };
    }
    for (const name of names) {
      const m = RECORD_NAME.exec(name);
      if (!m) continue;
      const file = path.join(this.dir, name);
      try {
        const text = readTrusted(file, this.uid);
        if (text === undefined) continue; // gone since the listing
        const record = parseRecord(text);
        if (record.owner.pid !== Number(m[1])) throw new RecordError(`owner.pid ${record.owner.pid} does not match the file name`);
        records.push({ file, record });
      } catch (e) {
        problems.push(this.unreadable(file, e as Error, options.setAside === true));
      }
    }
    return { records, problems };
  }

  /**
   * What to report of a file that was to be read as a record (or a claim) and could not, and where it went.
   * With `setAside` (a sweep), a corrupt, truncated or foreign file of ours is moved to `<name>.bad-<time>-<random>`,
   * a name nothing reads, so it is reported once and never handled again. A file that is not ours to trust, or
   * a record of another format version, stays where it is.
   */
  unreadable(file: string, e: Error, setAside: boolean): RecordProblem {
    if (!(e instanceof RecordError)) return { file, problem: `${e.message}; not trusted, left in place` };
    if (e instanceof RecordVersionError || !setAside) return { file, problem: e.message };
    return { file, problem: e.message, setAsideTo: this.setAside(file) };
  }

  private setAside(file: string): string | undefined {
    const to = `${file}.bad-${Date.now()}-${randomSuffix()}`;
    try {
      fs.renameSync(file, to);
      return to;
    } catch {
      return undefined;
    }
  }

  /**
   * What watchdogs that could not end their owner's trees left (`watchdog-<pid>-<start key>.log`, see
   * owner/watchdog.ts), each read once (up to 4 KiB) and removed: files of ours only, through the trust checks.
   * A trace whose watchdog is still at work (`atWork`: its owner's pid and start key) is not finished: it is left
   * to that watchdog, which removes it when it succeeds.
   */
  takeWatchdogLogs(atWork: (owner: { pid: number; startKey: number }) => boolean): { file: string; ownerPid: number; text: string }[] {
    const out: { file: string; ownerPid: number; text: string }[] = [];
    if (this.folderProblem()) return out;
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return out;
    }
    for (const name of names) {
      const m = WATCHDOG_LOG_NAME.exec(name);
      if (!m || atWork({ pid: Number(m[1]), startKey: Number(m[2]) })) continue;
      const file = path.join(this.dir, name);
      try {
        const text = readTrusted(file, this.uid);
        if (text === undefined) continue;
        rmQuiet(file);
        out.push({ file, ownerPid: Number(m[1]), text: text.slice(0, 4096).trim() });
      } catch {
        /* not ours to read: left where it is */
      }
    }
    return out;
  }

  /**
   * Removes temp files that a writer left when it died between write and rename, and the `.current` links of
   * owners that died: only files of our own naming, regular and ours, whose writer is gone (`writerGone`,
   * judged from the name's identity). Temp files of older versions (no identity in the name) go when older than
   * a minute. Anything else is left alone.
   */
  removeStaleTempFiles(writerGone: (writer: OwnerInfo) => boolean, clock: HostClock | undefined, now = Date.now()): string[] {
    const removed: string[] = [];
    if (this.folderProblem()) return removed;
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return removed;
    }
    for (const name of names) {
      const m = TEMP_NAME.exec(name) ?? CURRENT_NAME.exec(name);
      const old = m ? undefined : OLD_TEMP_NAME.exec(name);
      if (!m && !old) continue;
      const file = path.join(this.dir, name);
      try {
        const st = fs.lstatSync(file);
        if (!st.isFile() || (this.uid !== undefined && st.uid !== this.uid)) continue;
        const stale = m ? writerGone(identityOfTag(m, 2, clock)) : now - st.mtimeMs > 60_000;
        if (!stale) continue;
        fs.rmSync(file, { force: true });
        removed.push(file);
      } catch {
        /* gone already */
      }
    }
    return removed;
  }
}
