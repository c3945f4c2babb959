/**
 * The two calls that send a signal. Every signal Agent Trees sends leaves through a `Signaller`: the real one
 * here, or a recording one in tests. What may be signalled is decided before (the guard, the proofs of
 * membership); the kill checks the guard once more right before each call (see kill/posixKill.ts).
 */

/** 'sent'; 'gone' (ESRCH: no such process or group); 'denied' (EPERM: not ours to signal). */
export type SignalResult = 'sent' | 'gone' | 'denied';

export interface Signaller {
  /** kill(pid, signal) */
  signalProcess(pid: number, signal: NodeJS.Signals): SignalResult;
  /** kill(-pgid, signal): every process of the group at once. */
  signalGroup(pgid: number, signal: NodeJS.Signals): SignalResult;
}

function send(target: number, signal: NodeJS.Signals): SignalResult {
  try {
    process.kill(target, signal);
    return 'sent';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM' ? 'denied' : 'gone';
  }
}

/** The operating system's kill(2). */
export const processSignaller: Signaller = {
  signalProcess: (pid, signal) => (pid > 1 ? send(pid, signal) : 'denied'),
  signalGroup: (pgid, signal) => (pgid > 1 ? send(-pgid, signal) : 'denied'),
};
