/**
 * The names of the files in a records folder, and the process tags in them: a record `<pid>.json`; its owner's
 * link to it, `.<pid>.json.<owner tag>.current`; a temp file `.<pid>.json.<writer tag>.<random>.tmp`; a claim
 * `<pid>.json.claimed-<claimant tag>-<random>`; what a watchdog could not do, `watchdog-<pid>-<start key>.log`. A tag names a process (pid and start, on one machine and boot),
 * so whether its process still runs can be told from the name alone.
 */
import { createHash, randomBytes } from 'crypto';
import * as path from 'path';
import { OwnerInfo } from '../identity/ownerIdentity';
import type { HostClock } from '../platform/bootClock';

export const RECORD_NAME = /^(\d+)\.json$/;
/** `<pid>-t<ticks>-h<machine hash>-b<boot hash>-n<pid ns>` or, without a boot clock, `<pid>-m<start ms>`. */
const PROCESS_TAG = String.raw`(\d+)-(?:t(\d+)-h([0-9a-f]{8})-b([0-9a-f]{8})-n(\d+)|m(\d+))`;
export const CLAIM_NAME = new RegExp(String.raw`^(\d+)\.json\.claimed-${PROCESS_TAG}-[0-9a-f]{12}$`);
/** Claims of older versions: `<pid>.json.claimed-<claimant pid>-<claimant start ms>`. */
export const OLD_CLAIM_NAME = /^(\d+)\.json\.claimed-(\d+)-(\d+)$/;
export const TEMP_NAME = new RegExp(String.raw`^\.(\d+)\.json\.${PROCESS_TAG}\.[0-9a-f]{12}\.tmp$`);
/** Temp files of older versions: `.<pid>.json.<writer pid>.<base-36 random>.tmp`. */
export const OLD_TEMP_NAME = /^\.(\d+)\.json\.(\d+)\.[0-9a-z]+\.tmp$/;
/** What an owner's watchdog could not do (see owner/watchdog.ts): `watchdog-<owner pid>-<owner start key>.log`. */
export const WATCHDOG_LOG_NAME = /^watchdog-(\d+)-(\d+)\.log$/;
/** An owner's link to its current record (see claims.ts): `.<pid>.json.<owner tag>.current`. */
export const CURRENT_NAME = new RegExp(String.raw`^\.(\d+)\.json\.${PROCESS_TAG}\.current$`);

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
export function identityOfTag(m: RegExpExecArray, at: number, clock: HostClock | undefined): OwnerInfo {
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

export const randomSuffix = () => randomBytes(6).toString('hex');

/** A record's file: `<dir>/<owner pid>.json`. */
export function recordPath(dir: string, ownerPid: number): string {
  return path.join(dir, `${ownerPid}.json`);
}

/** The owner's link to its current record: `.<pid>.json.<owner tag>.current`. */
export function currentPath(dir: string, owner: OwnerInfo): string {
  return path.join(dir, `.${owner.pid}.json.${processTag(owner)}.current`);
}

/** A fresh temp file for a record of `ownerPid`, named after its writer. */
export function tempPath(dir: string, ownerPid: number, writer: OwnerInfo): string {
  return path.join(dir, `.${ownerPid}.json.${processTag(writer)}.${randomSuffix()}.tmp`);
}

/** Where the watchdog of the owner `pid` (started at `startKey`) leaves what it could not do. */
export function watchdogLogPath(dir: string, owner: { pid: number; startKey: number }): string {
  return path.join(dir, `watchdog-${owner.pid}-${owner.startKey}.log`);
}

/** A fresh claim of the record of `ownerPid`, named after its claimant. */
export function claimPath(dir: string, ownerPid: number, claimant: OwnerInfo): string {
  return path.join(dir, `${ownerPid}.json.claimed-${processTag(claimant)}-${randomSuffix()}`);
}
