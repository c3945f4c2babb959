/**
 * At an owner's start: what to do with a record already under its pid (pids restart in containers, and after a
 * reboot), written by an earlier process.
 */
import { OwnerInfo, sameProcess } from '../identity/ownerIdentity';
import { RecordStore } from './claims';
import { OwnerRecord } from './schema';

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
