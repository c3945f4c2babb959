/**
 * Worker thread entry: answers `membersOfTrees` requests with its own long-lived process table, so a large
 * scan never blocks the extension host's event loop and the table's caches stay warm between requests.
 */
import { parentPort } from 'worker_threads';
import { processTable } from './processTable';
import { membersOfTrees, TreeQuery, ViewExtras } from './treeMembers';

parentPort?.on('message', (message: { seq: number; trees: TreeQuery[]; extras?: ViewExtras }) => {
  try {
    parentPort!.postMessage({ seq: message.seq, result: membersOfTrees(processTable(), message.trees, message.extras) });
  } catch (e) {
    parentPort!.postMessage({ seq: message.seq, error: (e as Error).message });
  }
});
