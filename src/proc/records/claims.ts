/**
 * The claim protocol: a sweeper takes a record by renaming it (a claim), so two sweepers never handle one record,
 * and gives a live owner's back. What it gives back is the owner's word, not the claimed copy: every write also
 * links the record as `.<pid>.json.<owner tag>.current` (before the record itself), a name no sweeper renames, and
 * the owner removes that link first when it removes its record. A give-back links `.current` under the owner's
 * name, so it puts back the owner's latest record or, once the owner removed it, nothing: a record never comes back
 * for trees its owner has finished with.
 */
import * as fs from 'fs';
import * as path from 'path';
import { OwnerInfo } from '../identity/ownerIdentity';
import type { HostClock } from '../platform/bootClock';
import { CLAIM_NAME, claimPath, identityOfTag, OLD_CLAIM_NAME } from './fileNames';
import { OwnerRecord, parseRecord, RecordError, TreeRecord } from './schema';
import { RecordFolder } from './store';
import { fileTrustProblem, readTrusted, rmQuiet } from './trustedFiles';

/** A claim found in the folder: whose record it holds, and who claimed it. */
export interface ClaimFile {
  file: string;
  ownerPid: number;
  claimant: OwnerInfo;
  /** Why the file under the claim name cannot be a claim (a FIFO, a folder, another user's): it is left in place. */
  problem?: string;
}

/** The records folder with the claim protocol: what every front end and the sweep use. */
export class RecordStore extends RecordFolder {
  /**
   * Claims a record for sweeping by renaming it, so two sweepers never handle one record: the rename succeeds
   * for one of them only. Every claim has a name of its own (claimant and a random part), so no claim ever
   * replaces another. Returns the claim's path, or undefined when someone else got the record first. The
   * caller must read and judge the claim's content again: the file may have changed since it was read.
   */
  claim(ownerPid: number, claimant: OwnerInfo): string | undefined {
    return this.renameNoReplace(this.fileOf(ownerPid), claimPath(this.dir, ownerPid, claimant));
  }

  /** Takes over a claim whose claimant is gone, under a claim name of our own. */
  takeOverClaim(claimFile: string, ownerPid: number, claimant: OwnerInfo): string | undefined {
    return this.renameNoReplace(claimFile, claimPath(this.dir, ownerPid, claimant));
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
   * Ends a sweep of a claimed record: the trees still alive (`remaining`), and the host processes `record` still
   * names, go back under the owner's name for a later sweep, never over a record written since under that name
   * (then they stay in the claim, rewritten); with nothing left, the claim is deleted.
   */
  finishClaim(claimFile: string, record: OwnerRecord, remaining: TreeRecord[], writer: OwnerInfo): void {
    rmQuiet(this.currentOf(record.owner)); // the owner is gone: this sweep's word replaces its own
    if (remaining.length === 0 && !record.hostProcesses) {
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
}
