/**
 * Owned-tree records on disk: one JSON file per owning process, `<dir>/<owner pid>.json`, written atomically
 * (temp file in the same folder, then rename) and removed when the owner tracks nothing.
 *
 * Format (version 1), kept exactly so other tools can read it:
 *   {"version":1,"owner":{"pid":N,"startTime":MS},"trees":[{"id","label","command":[...],"rootPid","pgid",
 *    "sid","rootStartTime","trackedAt","envTag","cgroup":null|path,"deadline"?:MS}]}
 * `deadline` is optional (absent: no timeout), so readers of the first version's files read these too.
 */
import * as fs from 'fs';
import * as path from 'path';

import { TREE_ID_VARIABLE } from './processTable';

export const RECORD_VERSION = 1;

export interface TreeRecord {
  id: string;
  label: string;
  command: string[];
  rootPid: number;
  pgid: number;
  sid: number;
  /** Root's start time, ms since the epoch. */
  rootStartTime: number;
  /** When tracking began, ms since the epoch; the root started no later than this. */
  trackedAt: number;
  /** `AGENT_TREES_TREE_ID=<id>`, the exact environment entry every member inherits. */
  envTag: string;
  /** The tree's own cgroup directory, or null. */
  cgroup: string | null;
  /** When the owner kills the tree (its timeout), ms since the epoch; absent when it has none. */
  deadline?: number;
}

export interface OwnerInfo {
  pid: number;
  startTime: number;
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
  /** Where the file was moved so it is not read again, if it was. */
  setAsideTo?: string;
}

const RECORD_NAME = /^(\d+)\.json$/;
const CLAIM_NAME = /^(\d+)\.json\.claimed-(\d+)-(\d+)$/;

/** Says what is wrong with a parsed record, or undefined when it has the version-1 shape. */
export function recordShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const v = value as Record<string, unknown>;
  if (v.version !== RECORD_VERSION) return `version is ${JSON.stringify(v.version)}, expected ${RECORD_VERSION}`;
  const owner = v.owner as Record<string, unknown> | undefined;
  if (typeof owner !== 'object' || owner === null) return 'owner: missing';
  if (!isPid(owner.pid)) return 'owner.pid: expected a positive integer';
  if (!isTime(owner.startTime)) return 'owner.startTime: expected ms since the epoch';
  if (!Array.isArray(v.trees)) return 'trees: expected an array';
  for (let i = 0; i < v.trees.length; i++) {
    const t = v.trees[i] as Record<string, unknown>;
    const at = `trees[${i}]`;
    if (typeof t !== 'object' || t === null) return `${at}: expected an object`;
    if (typeof t.id !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(t.id)) return `${at}.id: expected an id of letters, digits, '.', '_', '-'`;
    if (typeof t.label !== 'string') return `${at}.label: expected a string`;
    if (!Array.isArray(t.command) || !t.command.every((c) => typeof c === 'string')) return `${at}.command: expected an array of strings`;
    for (const key of ['rootPid', 'pgid', 'sid'] as const) if (!isPid(t[key])) return `${at}.${key}: expected a positive integer`;
    for (const key of ['rootStartTime', 'trackedAt'] as const) if (!isTime(t[key])) return `${at}.${key}: expected ms since the epoch`;
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

export class RecordStore {
  constructor(readonly dir: string) {}

  ensureDir(): void {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  fileOf(ownerPid: number): string {
    return path.join(this.dir, `${ownerPid}.json`);
  }

  /** Writes the owner's record atomically, or removes it when `trees` is empty. */
  write(owner: OwnerInfo, trees: TreeRecord[]): void {
    const file = this.fileOf(owner.pid);
    if (trees.length === 0) {
      rmQuiet(file);
      return;
    }
    const record: OwnerRecord = { version: RECORD_VERSION, owner, trees };
    this.writeAtomic(file, record);
  }

  private writeAtomic(file: string, record: OwnerRecord): void {
    this.ensureDir();
    const tmp = path.join(this.dir, `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
    fs.writeFileSync(tmp, JSON.stringify(record) + '\n', { mode: 0o600 });
    try {
      fs.renameSync(tmp, file);
    } catch (e) {
      rmQuiet(tmp);
      throw e;
    }
  }

  /** Reads one owner's record; undefined when there is none. Throws on a corrupt file. */
  read(ownerPid: number): OwnerRecord | undefined {
    const file = this.fileOf(ownerPid);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    return parseRecord(text);
  }

  /**
   * Every readable record. Corrupt, truncated or foreign files are reported and set aside (renamed to
   * `<name>.bad-<time>`), so no reader trips on them again; a record of another format version is reported and
   * left where it is, for the tool that wrote it.
   */
  list(): { records: RecordFile[]; problems: RecordProblem[] } {
    const records: RecordFile[] = [];
    const problems: RecordProblem[] = [];
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { records, problems };
      problems.push({ file: this.dir, problem: `cannot list the records folder: ${(e as Error).message}` });
      return { records, problems };
    }
    for (const name of names) {
      const m = RECORD_NAME.exec(name);
      if (!m) continue;
      const file = path.join(this.dir, name);
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') problems.push({ file, problem: `unreadable: ${(e as Error).message}` });
        continue;
      }
      try {
        const record = parseRecord(text);
        if (record.owner.pid !== Number(m[1])) throw new RecordError(`owner.pid ${record.owner.pid} does not match the file name`);
        records.push({ file, record });
      } catch (e) {
        const problem = (e as Error).message;
        if (e instanceof RecordVersionError) {
          problems.push({ file, problem });
          continue;
        }
        problems.push({ file, problem, setAsideTo: this.setAside(file) });
      }
    }
    return { records, problems };
  }

  private setAside(file: string): string | undefined {
    const to = `${file}.bad-${Date.now()}`;
    try {
      fs.renameSync(file, to);
      return to;
    } catch {
      return undefined;
    }
  }

  /**
   * Claims a record for sweeping by renaming it, so two sweepers never handle one record: the rename succeeds
   * for one of them only. Returns the claimed path, or undefined when someone else got it first.
   */
  claim(ownerPid: number, claimant: OwnerInfo): string | undefined {
    const to = path.join(this.dir, `${ownerPid}.json.claimed-${claimant.pid}-${Math.round(claimant.startTime)}`);
    try {
      fs.renameSync(this.fileOf(ownerPid), to);
      return to;
    } catch {
      return undefined;
    }
  }

  /** Claims left by sweepers that died mid-sweep: (file, owner pid, claimant). */
  claims(): { file: string; ownerPid: number; claimant: OwnerInfo }[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    const out = [];
    for (const name of names) {
      const m = CLAIM_NAME.exec(name);
      if (m) out.push({ file: path.join(this.dir, name), ownerPid: Number(m[1]), claimant: { pid: Number(m[2]), startTime: Number(m[3]) } });
    }
    return out;
  }

  /** Takes over a stale claim (its claimant died) by renaming it to a claim of ours. */
  reclaim(claimFile: string, ownerPid: number, claimant: OwnerInfo): string | undefined {
    const to = path.join(this.dir, `${ownerPid}.json.claimed-${claimant.pid}-${Math.round(claimant.startTime)}`);
    try {
      fs.renameSync(claimFile, to);
      return to;
    } catch {
      return undefined;
    }
  }

  readClaim(claimFile: string): OwnerRecord {
    return parseRecord(fs.readFileSync(claimFile, 'utf8'));
  }

  /** Ends a claim: trees still alive go back under the owner's name for a later sweep; none left, no file. */
  release(claimFile: string, record: OwnerRecord, remaining: TreeRecord[]): void {
    if (remaining.length > 0) this.writeAtomic(this.fileOf(record.owner.pid), { ...record, trees: remaining });
    rmQuiet(claimFile);
  }

  /** Removes temp files left by writers that died between write and rename (older than a minute). */
  removeStaleTempFiles(now = Date.now()): void {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith('.') || !name.endsWith('.tmp')) continue;
      const file = path.join(this.dir, name);
      try {
        if (now - fs.statSync(file).mtimeMs > 60_000) fs.rmSync(file, { force: true });
      } catch {
        /* gone already */
      }
    }
  }
}

export class RecordError extends Error {}
class RecordVersionError extends RecordError {}

function parseRecord(text: string): OwnerRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const what = text.trim() === '' ? 'empty file' : `not valid JSON (${(e as Error).message})`;
    throw new RecordError(what);
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
