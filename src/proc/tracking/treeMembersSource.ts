/**
 * Where the view's memberships come from: each refresh reads the members only, with a full scan now and then (see
 * memberTracker.ts). A refresh runs on this thread while it reads few processes, in a worker thread once it reads
 * many (measured on the previous refresh of the same kind), with the same result either way.
 */
import * as fs from 'fs';
import { Worker } from 'worker_threads';
import { freshProcessTable } from '../platform/createProcessTable';
import { LinuxProcessTable } from '../platform/linuxProcessTable';
import { ProcessTable } from '../platform/processTable';
import { ListingDeps, MemberListing, TreeQuery, ViewExtras } from './listing';
import { canTrack, MemberTracker, MemberTrackerOptions, refreshMembers, RefreshRequest } from './memberTracker';

/** Above this many processes a refresh costs enough (~5 ms and up) to move off the caller's thread. */
const WORKER_THRESHOLD = 400;

/**
 * The worker's data that makes dist/cli.js serve refreshes (see esbuild.js): the bundle ships the core once, so the
 * worker runs the command line's bundle rather than a copy of the core of its own.
 */
export const SNAPSHOT_WORKER = 'agent-trees snapshot worker';

/** A message to the snapshot worker: one refresh. */
export interface WorkerRequest {
  seq: number;
  request: RefreshRequest;
}

export interface WorkerReply {
  seq: number;
  result?: MemberListing;
  error?: string;
  /** The worker table's reads so far. */
  reads?: number;
}

export interface SourceStats {
  refreshes: number;
  /** Refreshes that looked at every process on the machine. */
  fullScans: number;
  /** Refreshes that ran in the worker thread. */
  inWorker: number;
  /** Files under /proc read so far by this thread's process table and the worker's: every process read of ours. */
  processReads: number;
}

type Kind = 'tracked' | 'full';

/** What a source reads through: the table, the guard, the cgroups and where ours live (see core.ts). */
export type SourceParts = ListingDeps & { table: ProcessTable };

export interface TreeMembersSourceOptions {
  /** The worker's script: dist/cli.js, or snapshotWorker.js compiled; without it everything runs on this thread. */
  workerScript?: string;
  /** Processes a refresh of a kind read last time above which the next one runs in the worker. */
  workerThreshold?: number;
  tracker?: MemberTrackerOptions;
}

/** The view's members: one tracker per asker, each refresh on this thread or in the worker (see the top of this file). */
export class TreeMembersSource {
  private worker: Worker | undefined;
  private seq = 0;
  private pending = new Map<number, { resolve: (r: MemberListing) => void; reject: (e: Error) => void }>();
  /** Processes the last refresh of each kind read: where the next one of that kind runs. */
  private lastCount = new Map<Kind, number>();
  /** One tracker per asker (the view, the look at terminals while it is hidden): each knows its own members. */
  private readonly trackers = new Map<string, MemberTracker>();
  private refreshes = 0;
  private fullScans = 0;
  private workerReads = 0;
  private workerRefreshes = 0;
  /** Whether the last call ran in the worker (for the log and tests). */
  lastInWorker = false;
  private readonly workerScript: string | undefined;
  private readonly threshold: number;

  constructor(
    private readonly core: SourceParts,
    private readonly options: TreeMembersSourceOptions = {},
  ) {
    this.workerScript = options.workerScript;
    this.threshold = options.workerThreshold ?? WORKER_THRESHOLD;
  }

  /** The members of `trees` and what `extras` asks, for the asker `channel` (see MemberTracker). */
  async query(trees: TreeQuery[], extras: ViewExtras = {}, channel = 'view'): Promise<MemberListing> {
    const table = await freshProcessTable(this.core.table);
    const tracker = this.trackerOf(channel);
    const request = tracker.next(trees, extras, canTrack(table, trees, extras, this.core));
    const kind: Kind = request.full ? 'full' : 'tracked';
    const useWorker =
      this.workerScript !== undefined && (this.lastCount.get(kind) ?? 0) > this.threshold && fs.existsSync(this.workerScript);
    this.lastInWorker = useWorker;
    const result = useWorker ? await this.inWorker({ seq: 0, request }) : refreshMembers(table, request, this.core);
    tracker.learn(result);
    this.lastCount.set(kind, result.processCount);
    this.counted(result, useWorker);
    return result;
  }

  /**
   * The members of `trees` now, read on this thread, for a caller that cannot wait (the API's `list()`): the same
   * rules, and a tracker of its own (`channel`), as `query`. Where the table refreshes asynchronously (Windows) it
   * answers from the last listing.
   */
  queryNow(trees: TreeQuery[], channel: string): MemberListing {
    const table = this.core.table;
    const tracker = this.trackerOf(channel);
    const result = refreshMembers(table, tracker.next(trees, {}, canTrack(table, trees, {}, this.core)), this.core);
    tracker.learn(result);
    this.counted(result, false);
    return result;
  }

  private trackerOf(channel: string): MemberTracker {
    let tracker = this.trackers.get(channel);
    if (!tracker) this.trackers.set(channel, (tracker = new MemberTracker(this.core, this.options.tracker, channel)));
    return tracker;
  }

  private counted(result: MemberListing, inWorker: boolean): void {
    this.refreshes++;
    if (result.fullScan) this.fullScans++;
    if (inWorker) this.workerRefreshes++;
  }

  /** Whether each refresh must read every process: this kernel lists no children (CONFIG_PROC_CHILDREN), say. */
  readsEveryProcess(): boolean {
    return this.core.table.snapshotOf === undefined || !(this.core.table.listsChildren?.() ?? false);
  }

  /** The next tracked refresh of every asker reads every process (the user asked for a fresh look). */
  scanSoon(): void {
    for (const t of this.trackers.values()) t.scanSoon();
  }

  stats(): SourceStats {
    const table = this.core.table;
    const own = table instanceof LinuxProcessTable ? table.reads : 0;
    return { refreshes: this.refreshes, fullScans: this.fullScans, inWorker: this.workerRefreshes, processReads: own + this.workerReads };
  }

  private inWorker(message: WorkerRequest): Promise<MemberListing> {
    if (!this.worker) {
      this.worker = new Worker(this.workerScript!, { workerData: SNAPSHOT_WORKER });
      this.worker.unref();
      this.worker.on('message', (m: WorkerReply) => {
        if (m.reads !== undefined) this.workerReads = m.reads;
        const p = this.pending.get(m.seq);
        this.pending.delete(m.seq);
        if (m.result) p?.resolve(m.result);
        else p?.reject(new Error(m.error ?? 'snapshot worker failed'));
      });
      this.worker.on('error', (e) => this.failAll(e));
      this.worker.on('exit', () => {
        this.worker = undefined;
        this.failAll(new Error('snapshot worker exited'));
      });
    }
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.worker!.postMessage({ ...message, seq });
    });
  }

  private failAll(e: Error): void {
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  dispose(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
