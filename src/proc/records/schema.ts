/**
 * The owned-tree record's schema: one JSON file per owning process, `<dir>/<owner pid>.json`.
 *
 * Format (version 1). The original fields are kept exactly, so other tools and older versions read it:
 *   {"version":1,"owner":{"pid":N,"startTime":MS},"trees":[{"id","label","command":[...],"rootPid","pgid",
 *    "sid","rootStartTime","trackedAt","envTag","cgroup":null|path,"deadline"?:MS}]}
 * `deadline` is optional (absent: no timeout), so readers of the first version's files read these too.
 * Added compatibly (optional; a version-1 reader ignores them): `owner.startTicks`, `owner.bootId`,
 * `owner.pidNs`, `owner.machineId`, `trees[].rootStartTicks`, `trees[].trackedAtTicks`. Identities are judged
 * by these (see identity/); the epoch fields are for display. A record without them is an older writer's.
 * Also optional: `trees[].limits` (the tree's budget, see budget/) and `trees[].pidsCgroup` (a cgroup v1 pids
 * cgroup that holds its process line in the kernel, beside its own cgroup).
 * Also optional: `hostProcesses`, what an extension host records of the processes other extensions started in it
 * (see hostChildren/), for its watchdog or a sweep to end once the host is gone. An owner may record those and no
 * tree (`trees: []`).
 */
import { OwnerInfo } from '../identity/ownerIdentity';
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
  /** The tree's budget: what ends it besides its timeout; absent when it has none. */
  limits?: TreeLimits;
  /** A cgroup v1 `pids` cgroup the tree's root entered, whose `pids.max` holds its process line (see cgroup/treeLimits.ts). */
  pidsCgroup?: string;
}

/** What ends a tree besides its timeout; a field that is absent (or 0, in settings) sets no limit. */
export interface TreeLimits {
  /** The members' memory (PSS where it can be read, else RSS), in MB of 1024 * 1024 bytes. */
  maxMemoryMB?: number;
  /** Live members. */
  maxProcesses?: number;
  /** Seconds with no CPU time used by any member and no byte through the tree's terminal or stdio. */
  idleTimeoutSeconds?: number;
}

/** Bytes in one MB of `maxMemoryMB`. */
export const BYTES_PER_MB = 1024 * 1024;

/** The limits' fields, in the order they are told. */
export const LIMIT_FIELDS = ['maxMemoryMB', 'maxProcesses', 'idleTimeoutSeconds'] as const;

/** Whether `x` can be a limit: a whole number above 0 (a count, MB or seconds), no larger than a count can be exact. */
export function isLimitValue(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) > 0;
}

/**
 * What is wrong with a recorded tree's `limits` (after `limits`: ": ..." or ".field: ..."), or undefined. A field
 * this version does not know is a later version's, and left alone.
 */
function limitsProblem(limits: unknown): string | undefined {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) return ': expected an object';
  for (const key of LIMIT_FIELDS) {
    const value = (limits as Record<string, unknown>)[key];
    if (value !== undefined && !isLimitValue(value)) return `.${key}: expected a whole number above 0`;
  }
  return undefined;
}

/** A process of another extension an extension host saw: pid and start in clock ticks since boot, whose it is. */
export interface SeenHostProcess {
  pid: number;
  startTicks: number;
  /** The extension it was attributed to (`publisher.name`), `vscode` or `other`. */
  extensionId: string;
}

/** An extension whose processes are never ended, and its install folder (to know its processes by). */
export interface KeptExtension {
  extensionId: string;
  folder: string;
}

/**
 * The processes of other extensions an extension host records (see hostChildren/): its mark (the value of
 * `AGENT_TREES_HOST` every process it starts inherits), the long-lived ones it saw, and the extensions never ended.
 */
export interface HostProcessesRecord {
  mark: string;
  seen: SeenHostProcess[];
  keep: KeptExtension[];
}

export interface OwnerRecord {
  version: 1;
  owner: OwnerInfo;
  trees: TreeRecord[];
  hostProcesses?: HostProcessesRecord;
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

/** A file that was to be read as a record and is not one (corrupt, truncated, foreign, another version). */
export class RecordError extends Error {}
/** A record of another format version: left for the tool that wrote it. */
export class RecordVersionError extends RecordError {}

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
    const limits = t.limits === undefined ? undefined : limitsProblem(t.limits);
    if (limits) return `${at}.limits${limits}`;
    if (t.pidsCgroup !== undefined && typeof t.pidsCgroup !== 'string') return `${at}.pidsCgroup: expected a path, or no such field`;
  }
  if (v.hostProcesses !== undefined) return hostProcessesProblem(v.hostProcesses, owner.startTicks !== undefined);
  return undefined;
}

/** The most processes and kept extensions one record may name: far more than any host runs. */
const MAX_HOST_ENTRIES = 10_000;
const EXTENSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Says what is wrong with a record's `hostProcesses`, or undefined. */
function hostProcessesProblem(value: unknown, ownerHasTicks: boolean): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'hostProcesses: expected an object';
  if (!ownerHasTicks) return "hostProcesses: without the owner's boot identity";
  const h = value as Record<string, unknown>;
  if (typeof h.mark !== 'string' || !/^\d{1,10}:\d{1,20}$/.test(h.mark)) return 'hostProcesses.mark: expected "<pid>:<start key>"';
  if (!Array.isArray(h.seen) || h.seen.length > MAX_HOST_ENTRIES)
    return `hostProcesses.seen: expected an array of at most ${MAX_HOST_ENTRIES}`;
  for (let i = 0; i < h.seen.length; i++) {
    const p = h.seen[i] as Record<string, unknown>;
    const at = `hostProcesses.seen[${i}]`;
    if (typeof p !== 'object' || p === null) return `${at}: expected an object`;
    if (!isPid(p.pid)) return `${at}.pid: expected a positive integer`;
    if (!isTicks(p.startTicks)) return `${at}.startTicks: expected clock ticks since boot`;
    if (typeof p.extensionId !== 'string' || !EXTENSION_ID.test(p.extensionId)) return `${at}.extensionId: expected an extension id`;
  }
  if (!Array.isArray(h.keep) || h.keep.length > MAX_HOST_ENTRIES)
    return `hostProcesses.keep: expected an array of at most ${MAX_HOST_ENTRIES}`;
  for (let i = 0; i < h.keep.length; i++) {
    const k = h.keep[i] as Record<string, unknown>;
    const at = `hostProcesses.keep[${i}]`;
    if (typeof k !== 'object' || k === null) return `${at}: expected an object`;
    if (typeof k.extensionId !== 'string' || !EXTENSION_ID.test(k.extensionId)) return `${at}.extensionId: expected an extension id`;
    if (typeof k.folder !== 'string' || !k.folder.startsWith('/') || k.folder.length > 4096)
      return `${at}.folder: expected an absolute path`;
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

/** Parses a record file's text; throws RecordError (or RecordVersionError) when it is not a version-1 record. */
export function parseRecord(text: string): OwnerRecord {
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
