/**
 * Worker thread entry: answers `membersOfTrees` requests with its own long-lived process table, so a large
 * scan never blocks the extension host's event loop and the table's caches stay warm between requests.
 */
import { parentPort } from 'worker_threads';
import { CgroupProber, linuxCgroups } from './cgroup';
import { currentSelf, SignalGuard } from './guard';
import { createProcessTable } from './processTable';
import { membersOfTrees, TreeQuery, ViewExtras } from './treeMembers';

const table = createProcessTable();
const cgroupProber = new CgroupProber();
// A worker thread shares its process's pid and parent: the same processes are protected as on the main thread.
let guard = new SignalGuard(table, currentSelf());

parentPort?.on('message', (message: { seq: number; trees: TreeQuery[]; extras?: ViewExtras }) => {
  try {
    if (guard.self.ppid !== process.ppid) guard = new SignalGuard(table, currentSelf());
    const result = membersOfTrees(table, message.trees, { guard, cgroups: linuxCgroups, cgroupProber }, message.extras);
    parentPort!.postMessage({ seq: message.seq, result });
  } catch (e) {
    parentPort!.postMessage({ seq: message.seq, error: (e as Error).message });
  }
});
