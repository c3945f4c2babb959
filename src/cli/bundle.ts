/**
 * The entry of dist/cli.js, which ships the core once. Loaded as a module (dist/extension.js requires it) it only
 * exports the core and the agents' layer. It runs as the command line when Node runs it as its main script or from
 * standard input (`node -`, as the watchdog runs it: src/proc/owner/watchdog.ts), and as the view's snapshot worker
 * in a worker thread started with SNAPSHOT_WORKER (src/proc/tracking/treeMembersSource.ts). Each part loads only in
 * its own case.
 */
import { isMainThread, workerData } from 'worker_threads';
import { serveSnapshots, SNAPSHOT_WORKER } from '../proc';

export * from '../proc';
// What the extension imports of the agents' layer (esbuild.js checks that every module it imports is here).
export * from '../agents/attention';
export * from '../agents/attentionChannel';
export * from '../agents/attentionInbox';
export * from '../agents/definition';
export * from '../agents/definitionSource';
export * from '../agents/resolveDefinition';
export * from '../agents/runs';

if (workerData === SNAPSHOT_WORKER) serveSnapshots();
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the command line's side effects run only here
else if (isMainThread && (require.main === module || module.id === '[stdin]')) require('./main');
