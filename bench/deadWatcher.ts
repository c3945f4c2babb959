/**
 * Worker thread that watches a list of processes and reports the moment the last one is dead (gone, a zombie,
 * or its pid now belongs to another process). It runs off the main thread so the kill under test (which may
 * block the main thread with its own synchronous work) cannot delay the observation.
 *
 * In:  { id, members: [pid, startKey][], timeoutMs }
 * Out: { id, type: 'armed' }, then { id, type: 'done', allDeadAtNs, survivors: pid[] }
 * Times are process.hrtime.bigint() (CLOCK_MONOTONIC, the same clock in every thread), as decimal strings.
 */
import { parentPort } from 'worker_threads';
import { isAlive } from './lib';

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Dead: gone, a zombie, or its pid now belongs to another process. */
const dead = (pid: number, startKey: number): boolean => !isAlive(pid, startKey);

parentPort!.on('message', (msg: { id: number; members: [number, number][]; timeoutMs: number }) => {
  parentPort!.postMessage({ id: msg.id, type: 'armed' });
  const members = msg.members;
  const deadline = Date.now() + msg.timeoutMs;
  let i = 0;
  for (;;) {
    // Members verified dead stay dead (a pid reused later has another start key): only the rest are read.
    while (i < members.length && dead(members[i][0], members[i][1])) i++;
    if (i === members.length) {
      parentPort!.postMessage({ id: msg.id, type: 'done', allDeadAtNs: process.hrtime.bigint().toString(), survivors: [] });
      return;
    }
    if (Date.now() > deadline) {
      const survivors = members
        .slice(i)
        .filter(([pid, key]) => !dead(pid, key))
        .map(([pid]) => pid);
      parentPort!.postMessage({ id: msg.id, type: 'done', allDeadAtNs: null, survivors });
      return;
    }
    Atomics.wait(pause, 0, 0, 1);
  }
});
