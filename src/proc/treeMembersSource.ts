/**
 * Where the view's memberships come from. Tracked (the default): each refresh reads the members only, with a
 * full scan now and then (see memberTracker.ts). Full scan: the refresh before member tracking, kept as the
 * benchmark's baseline. A refresh runs on this thread while it reads few processes, in a worker thread once it
 * reads many (measured on the previous refresh of the same kind), with the same result either way.
 */
import * as fs from 'fs';
import { Worker } from 'worker_threads';
import { Core, processCore } from './core';
import { canTrack, MemberTracker, MemberTrackerOptions, RefreshRequest, refreshMembers } from './memberTracker';
import { freshProcessTable } from './platform/createProcessTable';
import { LinuxProcessTable } from './platform/linuxProcessTable';
import { membersOfTrees, TreeQuery, TreesMembers, ViewExtras } from './treeMembers';

/** Above this many processes a refresh costs enough (~5 ms and up) to move off the caller's thread. */
const WORKER_THRESHOLD = 400;

export type RefreshMode = 'tracked' | 'full-scan';

/** A message to the snapshot worker: a tracked refresh (`request`), or the full-scan refresh (`trees`, `extras`). */
export interface WorkerRequest {
  seq: number;
  request?: RefreshRequest;
  trees?: TreeQuery[];
  extras?: ViewExtras;
}

export interface WorkerReply {
  seq: number;
  result?: TreesMembers;
  error?: string;
  /** The worker table's reads so far. */
  reads?: number;
}

export interface SourceStats {
  mode: RefreshMode;
  refreshes: number;
  /** Refreshes that looked at every process on the machine. */
  fullScans: number;
  /** Refreshes that ran in the worker thread. */
  inWorker: number;
  /** Files under /proc read so far by this thread's process table and the worker's: every process read of ours. */
  processReads: number;
}

type Kind = 'tracked' | 'full' | 'full-scan mode';

export class TreeMembersSource {
  private worker: Worker | undefined;
  private seq = 0;
  private pending = new Map<number, { resolve: (r: TreesMembers) => void; reject: (e: Error) => void }>();
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
  mode: RefreshMode = 'tracked';

  /** `workerScript`: the bundled snapshotWorker.js; without it everything runs on this thread. */
  constructor(
    private readonly workerScript?: string,
    private readonly threshold = WORKER_THRESHOLD,
    private readonly core: Pick<Core, 'table' | 'guard' | 'cgroups' | 'cgroupProber'> = processCore(),
    private readonly trackerOptions: MemberTrackerOptions = {},
  ) {}

  /** The members of `trees` and what `extras` asks, for the asker `channel` (see MemberTracker). */
  async query(trees: TreeQuery[], extras: ViewExtras = {}, channel = 'view'): Promise<TreesMembers> {
    const table = await freshProcessTable(this.core.table);
    const tracker = this.trackerOf(channel);
    const request = this.mode === 'tracked' ? tracker.next(trees, extras, canTrack(table, trees, extras, this.core)) : undefined;
    const kind: Kind = request ? (request.full ? 'full' : 'tracked') : 'full-scan mode';
    const useWorker = this.workerScript !== undefined && (this.lastCount.get(kind) ?? 0) > this.threshold && fs.existsSync(this.workerScript);
    this.lastInWorker = useWorker;
    let result: TreesMembers;
    if (useWorker) result = await this.inWorker(request ? { seq: 0, request } : { seq: 0, trees, extras });
    else result = request ? refreshMembers(table, request, this.core) : membersOfTrees(table, trees, this.core, extras);
    if (request) tracker.learn(result);
    this.lastCount.set(kind, result.processCount);
    this.counted(result, useWorker);
    return result;
  }

  /**
   * The members of `trees` now, read on this thread, for a caller that cannot wait (the API's `list()`): the same
   * rules, and a tracker of its own (`channel`), as `query`. Where the table refreshes asynchronously (Windows) it
   * answers from the last listing.
   */
  queryNow(trees: TreeQuery[], channel: string): TreesMembers {
    const table = this.core.table;
    const tracker = this.trackerOf(channel);
    const request = this.mode === 'tracked' ? tracker.next(trees, {}, canTrack(table, trees, {}, this.core)) : undefined;
    const result = request ? refreshMembers(table, request, this.core) : membersOfTrees(table, trees, this.core);
    if (request) tracker.learn(result);
    this.counted(result, false);
    return result;
  }

  private trackerOf(channel: string): MemberTracker {
    let tracker = this.trackers.get(channel);
    if (!tracker) this.trackers.set(channel, (tracker = new MemberTracker(this.core, this.trackerOptions, channel)));
    return tracker;
  }

  private counted(result: TreesMembers, inWorker: boolean): void {
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
    return { mode: this.mode, refreshes: this.refreshes, fullScans: this.fullScans, inWorker: this.workerRefreshes, processReads: own + this.workerReads };
  }

  private inWorker(message: WorkerRequest): Promise<TreesMembers> {
    if (!this.worker) {
      this.worker = new Worker(this.workerScript!);
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
