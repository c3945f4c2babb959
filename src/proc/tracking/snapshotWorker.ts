/**
 * The snapshot worker: in a worker thread, answers the view's refreshes (see treeMembersSource.ts) with its
 * own long-lived process table, so a large scan never blocks the extension host's event loop and the table's
 * caches stay warm between requests.
 */
import { parentPort } from 'worker_threads';
import { CgroupProber } from '../cgroup/probe';
import { linuxCgroups } from '../cgroup/treeCgroup';
import { currentSelf, SignalGuard } from '../identity/guard';
import { createProcessTable } from '../platform/createProcessTable';
import { LinuxProcessTable } from '../platform/linuxProcessTable';
import { refreshMembers } from './memberTracker';
import type { WorkerReply, WorkerRequest } from './treeMembersSource';

/** Serves refreshes on this worker thread's port, from a table of its own; dist/cli.js calls it in the worker. */
export function serveSnapshots(): void {
  const table = createProcessTable();
  const cgroupProber = new CgroupProber();
  // A worker thread shares its process's pid and parent: the same processes are protected as on the main thread.
  let guard = new SignalGuard(table, currentSelf());
  const reads = () => (table instanceof LinuxProcessTable ? table.reads : undefined);

  parentPort?.on('message', (message: WorkerRequest) => {
    let reply: WorkerReply;
    try {
      if (guard.self.ppid !== process.ppid) guard = new SignalGuard(table, currentSelf());
      const deps = { guard, cgroups: linuxCgroups, cgroupProber };
      const result = refreshMembers(table, message.request, deps);
      reply = { seq: message.seq, result, reads: reads() };
    } catch (e) {
      reply = { seq: message.seq, error: (e as Error).message, reads: reads() };
    }
    parentPort!.postMessage(reply);
  });
}
