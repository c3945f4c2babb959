/**
 * Where the view's memberships come from: on this thread while the machine has few processes, in a worker
 * thread once it has many (measured on the previous call), with the same result either way.
 */
import * as fs from 'fs';
import { Worker } from 'worker_threads';
import { Core, processCore } from './core';
import { freshProcessTable } from './processTable';
import { membersOfTrees, TreeQuery, TreesMembers, ViewExtras } from './treeMembers';

/** Above this many processes a scan costs enough (~5 ms and up) to move off the caller's thread. */
export const WORKER_THRESHOLD = 400;

export class TreeMembersSource {
  private worker: Worker | undefined;
  private seq = 0;
  private pending = new Map<number, { resolve: (r: TreesMembers) => void; reject: (e: Error) => void }>();
  private lastCount = 0;
  /** Whether the last call ran in the worker (for the log and tests). */
  lastInWorker = false;

  /** `workerScript`: the bundled snapshotWorker.js; without it everything runs on this thread. */
  constructor(
    private readonly workerScript?: string,
    private readonly threshold = WORKER_THRESHOLD,
    private readonly core: Pick<Core, 'table' | 'guard' | 'cgroups' | 'cgroupProber'> = processCore(),
  ) {}

  async query(trees: TreeQuery[], extras: ViewExtras = {}): Promise<TreesMembers> {
    const useWorker = this.workerScript !== undefined && this.lastCount > this.threshold && fs.existsSync(this.workerScript);
    this.lastInWorker = useWorker;
    const result = useWorker ? await this.inWorker(trees, extras) : membersOfTrees(await freshProcessTable(this.core.table), trees, this.core, extras);
    this.lastCount = result.processCount;
    return result;
  }

  private inWorker(trees: TreeQuery[], extras: ViewExtras): Promise<TreesMembers> {
    if (!this.worker) {
      this.worker = new Worker(this.workerScript!);
      this.worker.unref();
      this.worker.on('message', (m: { seq: number; result?: TreesMembers; error?: string }) => {
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
      this.worker!.postMessage({ seq, trees, extras });
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
