/**
 * Owned-tree records on disk: one JSON file per owning process, `<dir>/<owner pid>.json`, written atomically
 * (temp file in the same folder, then rename) and removed when the owner tracks nothing.
 *
 * A sweeper takes a record by renaming it (a claim), and gives a live owner's back. What it gives back is the
 * owner's word, not the claimed copy: every write also links the record as `.<pid>.json.<owner tag>.current`
 * (before the record itself), a name no sweeper renames, and the owner removes that link first when it removes
 * its record. A give-back links `.current` under the owner's name, so it puts back the owner's latest record or,
 * once the owner removed it, nothing: a record never comes back for trees its owner has finished with.
 *
 * Format (version 1). The original fields are kept exactly, so other tools and older versions read it:
 *   {"version":1,"owner":{"pid":N,"startTime":MS},"trees":[{"id","label","command":[...],"rootPid","pgid",
 *    "sid","rootStartTime","trackedAt","envTag","cgroup":null|path,"deadline"?:MS}]}
 * `deadline` is optional (absent: no timeout), so readers of the first version's files read these too.
 * Added compatibly (optional; a version-1 reader ignores them): `owner.startTicks`, `owner.bootId`,
 * `owner.pidNs`, `owner.machineId`, `trees[].rootStartTicks`, `trees[].trackedAtTicks`. Identities are judged
 * by these (see identity.ts); the epoch fields are for display. A record without them is an older writer's.
 *
 * Nothing here trusts the folder's contents: a record is read only when it is a regular file of ours (owner
 * uid, not writable by others) in a folder of ours that others cannot write, opened without following a
 * symlink or blocking on a FIFO, and read up to a bound. Anything else is reported and left where it is.
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash, randomBytes } from 'crypto';
import type { HostClock } from '../platform/bootClock';
import { hasBootIdentity, OwnerInfo, sameProcess } from '../identity/ownerIdentity';
import { TreeTimes } from '../identity/startTimes';
import { TREE_ID_VARIABLE } from '../platform/processTable';

export const RECORD_VERSION = 1;

/** A record is a few hundred bytes per tree; anything past this is not one of ours. */
export const MAX_RECORD_BYTES = 1 << 20;

export interface TreeRecord extends TreeTimes {
  id: string;
  label: string;
  command: string[];
  pgid: number;
  sid: number;
  /** `AGENT_TREES_TREE_ID=<id>`, the exact environment entry every member inherits. */
  envTag: string;
  /** The tree's own cgroup directory, or null. */
  cgroup: string | null;
  /** When the owner kills the tree (its timeout), ms since the epoch; absent when it has none. */
  deadline?: number;
}

export interface OwnerRecord {
  version: 1;
  owner: OwnerInfo;
  trees: TreeRecord[];
}

export interface RecordFile {
  file: string;
  record: OwnerRecord;
}

export interface RecordProblem {
  file: string;
  problem: string;
  /** Where the file was moved so it is not read again, if it was (by a sweep only). */
  setAsideTo?: string;
}

/** A claim found in the folder: whose record it holds, and who claimed it. */
export interface ClaimFile {
  file: string;
  ownerPid: number;
  claimant: OwnerInfo;
  /** Why the file under the claim name cannot be a claim (a FIFO, a folder, another user's): it is left in place. */
  problem?: string;
}

const RECORD_NAME = /^(\d+)\.json$/;
/** `<pid>-t<ticks>-h<machine hash>-b<boot hash>-n<pid ns>` or, without a boot clock, `<pid>-m<start ms>`. */
const PROCESS_TAG = String.raw`(\d+)-(?:t(\d+)-h([0-9a-f]{8})-b([0-9a-f]{8})-n(\d+)|m(\d+))`;
const CLAIM_NAME = new RegExp(String.raw`^(\d+)\.json\.claimed-${PROCESS_TAG}-[0-9a-f]{12}$`);
/** Claims of older versions: `<pid>.json.claimed-<claimant pid>-<claimant start ms>`. */
const OLD_CLAIM_NAME = /^(\d+)\.json\.claimed-(\d+)-(\d+)$/;
const TEMP_NAME = new RegExp(String.raw`^\.(\d+)\.json\.${PROCESS_TAG}\.[0-9a-f]{12}\.tmp$`);
/** Temp files of older versions: `.<pid>.json.<writer pid>.<base-36 random>.tmp`. */
const OLD_TEMP_NAME = /^\.(\d+)\.json\.(\d+)\.[0-9a-z]+\.tmp$/;
/** An owner's link to its current record (see the top of this file): `.<pid>.json.<owner tag>.current`. */
const CURRENT_NAME = new RegExp(String.raw`^\.(\d+)\.json\.${PROCESS_TAG}\.current$`);

/** Says what is wrong with a parsed record, or undefined when it has the version-1 shape. */
export function recordShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const v = value as Record<string, unknown>;
  if (v.version !== RECORD_VERSION) return `version is ${String(JSON.stringify(v.version)).slice(0, 20)}, expected ${RECORD_VERSION}`;
  const owner = v.owner as Record<string, unknown> | undefined;
  if (typeof owner !== 'object' || owner === null) return 'owner: missing';
  if (!isPid(owner.pid)) return 'owner.pid: expected a positive integer';
  if (!isTime(owner.startTime)) return 'owner.startTime: expected ms since the epoch';
  const ticks = ['startTicks', 'bootId', 'pidNs', 'machineId'].filter((k) => owner[k] !== undefined);
  if (ticks.length > 0 && ticks.length < 4) return `owner: ${ticks.join(', ')} without the rest of startTicks, bootId, pidNs, machineId`;
  if (owner.startTicks !== undefined && !isTicks(owner.startTicks)) return 'owner.startTicks: expected clock ticks since boot';
  if (owner.bootId !== undefined && (typeof owner.bootId !== 'string' || !/^[0-9a-f-]{16,64}$/.test(owner.bootId)))
    return 'owner.bootId: expected a boot id';
  if (owner.pidNs !== undefined && !isPid(owner.pidNs)) return 'owner.pidNs: expected a namespace inode';
  if (owner.machineId !== undefined && (typeof owner.machineId !== 'string' || owner.machineId.length > 300))
    return 'owner.machineId: expected a string';
  if (!Array.isArray(v.trees)) return 'trees: expected an array';
  for (let i = 0; i < v.trees.length; i++) {
    const t = v.trees[i] as Record<string, unknown>;
    const at = `trees[${i}]`;
    if (typeof t !== 'object' || t === null) return `${at}: expected an object`;
    if (typeof t.id !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(t.id))
      return `${at}.id: expected an id of letters, digits, '.', '_', '-'`;
    if (typeof t.label !== 'string') return `${at}.label: expected a string`;
    if (!Array.isArray(t.command) || !t.command.every((c) => typeof c === 'string')) return `${at}.command: expected an array of strings`;
    for (const key of ['rootPid', 'pgid', 'sid'] as const) if (!isPid(t[key])) return `${at}.${key}: expected a positive integer`;
    for (const key of ['rootStartTime', 'trackedAt'] as const) if (!isTime(t[key])) return `${at}.${key}: expected ms since the epoch`;
    for (const key of ['rootStartTicks', 'trackedAtTicks'] as const) {
      if (t[key] !== undefined && !isTicks(t[key])) return `${at}.${key}: expected clock ticks since boot`;
    }
    if ((t.rootStartTicks !== undefined || t.trackedAtTicks !== undefined) && owner.startTicks === undefined) {
      return `${at}: start ticks without the owner's boot identity`;
    }
    if (t.envTag !== `${TREE_ID_VARIABLE}=${t.id}`) return `${at}.envTag: expected "${TREE_ID_VARIABLE}=${t.id}"`;
    if (t.cgroup !== null && typeof t.cgroup !== 'string') return `${at}.cgroup: expected a path or null`;
    if (t.deadline !== undefined && !isTime(t.deadline)) return `${at}.deadline: expected ms since the epoch, or no such field`;
  }
  return undefined;
}

function isPid(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) > 0;
}
function isTime(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0;
}
function isTicks(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

// ------------------------------------------------------------------------------------------ process tags

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);

/**
 * A process identity in a file name (claims, temp files), so whether its process still runs can be told
 * from the name alone. The machine and boot are hashed to keep names short.
 */
export function processTag(p: OwnerInfo): string {
  if (p.startTicks !== undefined && p.bootId !== undefined && p.pidNs !== undefined && p.machineId !== undefined) {
    return `${p.pid}-t${p.startTicks}-h${shortHash(p.machineId)}-b${shortHash(p.bootId)}-n${p.pidNs}`;
  }
  return `${p.pid}-m${Math.round(p.startTime)}`;
}

/**
 * The identity a tag names, in the terms of `clock`: its machine and boot are `clock`'s own when their hashes
 * match, else stand-ins that match nothing (so the judge sees "another boot" or "elsewhere", never "here").
 */
function identityOfTag(m: RegExpExecArray, at: number, clock: HostClock | undefined): OwnerInfo {
  const pid = Number(m[at]);
  if (m[at + 5] !== undefined) return { pid, startTime: Number(m[at + 5]) };
  const sameMachine = clock !== undefined && m[at + 2] === shortHash(clock.machineId);
  const sameBoot = sameMachine && m[at + 3] === shortHash(clock.bootId);
  return {
    pid,
    startTime: 0,
    startTicks: Number(m[at + 1]),
    machineId: sameMachine ? clock!.machineId : `other-machine:${m[at + 2]}`,
    bootId: sameBoot ? clock!.bootId : `00000000-other-boot-${m[at + 3]}`,
    pidNs: Number(m[at + 4]),
  };
}

const randomSuffix = () => randomBytes(6).toString('hex');

// ------------------------------------------------------------------------------------------ trusted reading

/** A file that is not ours to read, or not a record file at all: reported, never acted on, never moved. */
export class UntrustedFileError extends Error {}
export class RecordError extends Error {}
class RecordVersionError extends RecordError {}

const OPEN_FOR_READING = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

function euid(): number | undefined {
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
function fileTrustProblem(st: fs.Stats, uid: number | undefined): string | undefined {
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
function readTrusted(file: string, uid: number | undefined): string | undefined {
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

// ------------------------------------------------------------------------------------------ the store

export class RecordStore {
  /** The uid files and the folder must belong to: ours (undefined where there are no uids: Windows). */
  private readonly uid: number | undefined;

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
    return path.join(this.dir, `${ownerPid}.json`);
  }

  /**
   * Writes the owner's record atomically, or removes it when `trees` is empty. Its `.current` link is set first
   * and removed first (see the top of this file), so a claim given back can never bring back more than it says.
   */
  write(owner: OwnerInfo, trees: TreeRecord[]): void {
    const file = this.fileOf(owner.pid);
    const current = this.currentOf(owner);
    if (trees.length === 0) {
      rmQuiet(current);
      rmQuiet(file);
      return;
    }
    // Ticks mean something only with the boot they count from: without the owner's, none is written.
    const written = hasBootIdentity(owner)
      ? trees
      : trees.map(({ rootStartTicks: _start, trackedAtTicks: _tracked, ...epochOnly }) => epochOnly);
    const tmp = this.writeTemp({ version: RECORD_VERSION, owner, trees: written }, owner);
    const link = this.tempName(owner.pid, owner);
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
    return path.join(this.dir, `.${owner.pid}.json.${processTag(owner)}.current`);
  }

  private tempName(ownerPid: number, writer: OwnerInfo): string {
    return path.join(this.dir, `.${ownerPid}.json.${processTag(writer)}.${randomSuffix()}.tmp`);
  }

  /** Writes a record to a new temp file named after its writer (so a sweep can tell a dead writer's). */
  private writeTemp(record: OwnerRecord, writer: OwnerInfo): string {
    this.ensureDir();
    const tmp = this.tempName(record.owner.pid, writer);
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
   * Claims a record for sweeping by renaming it, so two sweepers never handle one record: the rename succeeds
   * for one of them only. Every claim has a name of its own (claimant and a random part), so no claim ever
   * replaces another. Returns the claim's path, or undefined when someone else got the record first. The
   * caller must read and judge the claim's content again: the file may have changed since it was read.
   */
  claim(ownerPid: number, claimant: OwnerInfo): string | undefined {
    return this.renameNoReplace(this.fileOf(ownerPid), this.claimName(ownerPid, claimant));
  }

  /** Takes over a claim whose claimant is gone, under a claim name of our own. */
  takeOverClaim(claimFile: string, ownerPid: number, claimant: OwnerInfo): string | undefined {
    return this.renameNoReplace(claimFile, this.claimName(ownerPid, claimant));
  }

  private claimName(ownerPid: number, claimant: OwnerInfo): string {
    return path.join(this.dir, `${ownerPid}.json.claimed-${processTag(claimant)}-${randomSuffix()}`);
  }

  /** rename(2) to a fresh unique name: never replaces a file (the name is new and random). */
  private renameNoReplace(from: string, to: string): string | undefined {
    if (this.folderProblem()) return undefined;
    try {
      fs.renameSync(from, to);
      return to;
    } catch {
      return undefined;
    }
  }

  /** Claims in the folder (in progress, or left by sweepers that died mid-sweep), each with its claimant. */
  claims(clock: HostClock | undefined): ClaimFile[] {
    if (this.folderProblem()) return [];
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: ClaimFile[] = [];
    const withProblem = (c: ClaimFile): ClaimFile => {
      const problem = this.claimFileProblem(c.file);
      return problem ? { ...c, problem } : c;
    };
    for (const name of names) {
      const file = path.join(this.dir, name);
      const m = CLAIM_NAME.exec(name);
      if (m) {
        out.push(withProblem({ file, ownerPid: Number(m[1]), claimant: identityOfTag(m, 2, clock) }));
        continue;
      }
      const old = OLD_CLAIM_NAME.exec(name);
      if (old) out.push(withProblem({ file, ownerPid: Number(old[1]), claimant: { pid: Number(old[2]), startTime: Number(old[3]) } }));
    }
    return out;
  }

  /** Why the file under a claim name is not one a sweep may take over and read (by its metadata, not followed). */
  private claimFileProblem(file: string): string | undefined {
    try {
      return fileTrustProblem(fs.lstatSync(file), this.uid);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : `cannot be looked at (${(e as NodeJS.ErrnoException).code})`;
    }
  }

  /** Reads a claim we hold, with the same trust checks as a record. Throws when it cannot be trusted or read. */
  readClaim(claimFile: string): OwnerRecord {
    const text = readTrusted(claimFile, this.uid);
    if (text === undefined) throw new RecordError('the claim is gone');
    return parseRecord(text);
  }

  /**
   * Gives a claimed record back to its owner (not to be swept after all), never over a record written since.
   * What goes back under the owner's name is the owner's own word, its `.current` link (see the top of this
   * file), linked in one step: its latest record, or nothing once it has removed its record, even when it did so
   * while the claim was held. A live owner (`ownerAlive`) with no such link has removed its record (or is of an
   * older version, which keeps none and writes its record again at its next change): nothing goes back. Any
   * other owner without one (gone, or not to be judged from here) gets the claimed copy back, as does any owner
   * whose `.current` name holds anything but a record of its own (a FIFO, a symlink, another file linked there).
   * Returns 'restored'; 'withdrawn' when the live owner has removed its record since (the claimed copy is
   * dropped); 'superseded' when the owner has written a newer record since (dropped too); 'kept' when another
   * process's record now has that name (the claim stays, for a later sweep to judge again).
   */
  restoreClaim(
    claimFile: string,
    record: OwnerRecord,
    isSameOwner: (a: OwnerInfo, b: OwnerInfo) => boolean,
    ownerAlive: boolean,
  ): 'restored' | 'withdrawn' | 'superseded' | 'kept' {
    const file = this.fileOf(record.owner.pid);
    const linkBack = (from: string): string => {
      try {
        fs.linkSync(from, file);
        return 'linked';
      } catch (e) {
        return (e as NodeJS.ErrnoException).code ?? 'error';
      }
    };
    // Only the owner's own record is its word: anything else under its `.current` name (a FIFO, a symlink, a
    // folder, another file linked there) is not linked back, and the claimed copy goes back instead.
    const word = this.currentOf(record.owner);
    let linked = this.isRecordOf(word, record.owner, isSameOwner) ? linkBack(word) : 'untrusted';
    if (linked === 'untrusted') linked = linkBack(claimFile);
    else if (linked === 'ENOENT') {
      if (ownerAlive) {
        rmQuiet(claimFile);
        return 'withdrawn';
      }
      linked = linkBack(claimFile);
    }
    if (linked === 'linked') {
      rmQuiet(claimFile);
      return 'restored';
    }
    if (linked !== 'EEXIST') return 'kept';
    let current: OwnerRecord | undefined;
    try {
      current = this.read(record.owner.pid);
    } catch {
      return 'kept';
    }
    if (current && isSameOwner(current.owner, record.owner)) {
      rmQuiet(claimFile);
      return 'superseded';
    }
    return 'kept';
  }

  /** Whether `file` is, or was a moment ago, a readable record of ours whose owner is `owner`. Absent: true (the link then says ENOENT). */
  private isRecordOf(file: string, owner: OwnerInfo, isSameOwner: (a: OwnerInfo, b: OwnerInfo) => boolean): boolean {
    try {
      const text = readTrusted(file, this.uid);
      return text === undefined || isSameOwner(parseRecord(text).owner, owner);
    } catch {
      return false;
    }
  }

  /**
   * Ends a sweep of a claimed record: the trees still alive (`remaining`) go back under the owner's name for a
   * later sweep, never over a record written since under that name (then they stay in the claim, rewritten);
   * with none left, the claim is deleted.
   */
  finishClaim(claimFile: string, record: OwnerRecord, remaining: TreeRecord[], writer: OwnerInfo): void {
    rmQuiet(this.currentOf(record.owner)); // the owner is gone: this sweep's word replaces its own
    if (remaining.length === 0) {
      rmQuiet(claimFile);
      return;
    }
    const tmp = this.writeTemp({ ...record, trees: remaining }, writer);
    try {
      fs.linkSync(tmp, this.fileOf(record.owner.pid));
      rmQuiet(claimFile);
      rmQuiet(tmp);
    } catch {
      try {
        fs.renameSync(tmp, claimFile);
      } catch {
        rmQuiet(tmp);
      }
    }
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

/**
 * mkdir -p with mode 0700, one level at a time. (Node's recursive mkdirSync loops forever where mkdir answers
 * ENOENT under a parent that exists, as in /proc.)
 */
function makeFolders(dir: string): void {
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

function parseRecord(text: string): OwnerRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    if (text.trim() === '') throw new RecordError('empty file');
    // Never quote the text: V8's message does ("Unexpected token 'r', "root:x:0:0"... is not valid JSON").
    const at = /position (\d+)/.exec((e as Error).message);
    throw new RecordError(
      `not valid JSON${at ? ` (at byte ${at[1]} of ${Buffer.byteLength(text)})` : ` (${Buffer.byteLength(text)} bytes)`}`,
    );
  }
  const problem = recordShapeProblem(value);
  if (problem) {
    const version = (value as { version?: unknown } | null)?.version;
    if (typeof version === 'number' && version !== RECORD_VERSION) {
      throw new RecordVersionError(`written in record format version ${version}; this version reads ${RECORD_VERSION} only: left as it is`);
    }
    throw new RecordError(`not an Agent Trees record: ${problem}`);
  }
  return value as OwnerRecord;
}

function rmQuiet(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* nothing to remove */
  }
}

export type PreviousRecord =
  { outcome: 'none' } | { outcome: 'ours' } | { outcome: 'set-aside'; claim: string } | { outcome: 'unreadable'; problem: string };

/**
 * At an owner's start: a record under our pid but of an earlier process (pids restart in containers, and
 * after a reboot) is an orphan's. It is claimed rather than overwritten with ours, in the name of that
 * earlier process: its claimant is then provably gone (we hold its pid, or it ran on an earlier boot), so
 * the next sweeper anywhere takes the claim over, judges its content and sweeps it. A claim in our own name
 * would wait for our death. An older version's record (no boot identity) is set aside the same way; its
 * claimant cannot be judged while we hold the pid, so it is swept once we are gone: never on a guess.
 */
export function setAsidePreviousRecord(store: RecordStore, self: OwnerInfo): PreviousRecord {
  if (store.folderProblem()) return { outcome: 'none' }; // missing, or not ours: nothing to read (spawns refuse it)
  let previous: OwnerRecord | undefined;
  try {
    previous = store.read(self.pid);
  } catch (e) {
    return { outcome: 'unreadable', problem: (e as Error).message };
  }
  if (!previous) return { outcome: 'none' };
  if (sameProcess(previous.owner, self)) return { outcome: 'ours' };
  const claim = store.claim(self.pid, previous.owner);
  return claim ? { outcome: 'set-aside', claim } : { outcome: 'none' };
}
