/** Main-thread side of deadWatcher.ts, and tree-kill run in a process of its own (treeKillRunner.ts). */
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import { Worker } from 'worker_threads';
import { Member, nowNs, processCpuMs, realKill, registerGroup } from './lib';

export interface WatchResult {
  /** hrtime (ns) when the last member was seen dead; undefined at the timeout. */
  allDeadAtNs?: bigint;
  survivors: number[];
}

export class DeadWatcher {
  private readonly worker = new Worker(path.join(__dirname, 'deadWatcher.js'));
  private seq = 0;

  /**
   * Starts watching; resolves `armed` once the worker polls, `done` when every member is dead (or timeout).
   * Call the kill only after `armed`.
   */
  watch(members: Member[], timeoutMs: number): { armed: Promise<void>; done: Promise<WatchResult> } {
    const id = ++this.seq;
    let armedResolve!: () => void;
    const armed = new Promise<void>((r) => (armedResolve = r));
    const done = new Promise<WatchResult>((resolve, reject) => {
      const onMessage = (msg: { id: number; type: string; allDeadAtNs?: string | null; survivors?: number[] }) => {
        if (msg.id !== id) return;
        if (msg.type === 'armed') {
          armedResolve();
          return;
        }
        this.worker.off('message', onMessage);
        this.worker.off('error', onError);
        resolve({ allDeadAtNs: msg.allDeadAtNs ? BigInt(msg.allDeadAtNs) : undefined, survivors: msg.survivors ?? [] });
      };
      const onError = (e: Error) => reject(e);
      this.worker.on('message', onMessage);
      this.worker.once('error', onError);
    });
    this.worker.postMessage({ id, members: members.map((m) => [m.pid, m.startKey]), timeoutMs });
    return { armed, done };
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

export interface TreeKillResult {
  t0Ns: bigint;
  t1Ns: bigint;
  cpuMs: number;
  blocked: number;
}

/** One tree-kill call in a process of its own (treeKillRunner.js), started detached so its group can be killed. */
export class TreeKillProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<TreeKillResult | undefined>;
  readonly exited: Promise<unknown>;
  goAt: bigint | undefined;

  constructor(spec: { rootPid: number; members?: [number, number][]; tagVar?: string; tag?: string }) {
    this.child = spawn(process.execPath, [path.join(__dirname, 'treeKillRunner.js'), JSON.stringify(spec)], {
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.on('error', () => {});
    this.child.stdin!.on('error', () => {});
    registerGroup(this.child.pid);
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    let text = '';
    let readyResolve!: () => void;
    this.ready = new Promise((r) => (readyResolve = r));
    this.result = new Promise((resolve) => {
      this.child.stdout!.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('ready\n')) readyResolve();
        const line = text.split('\n').find((l) => l.startsWith('{'));
        if (line) {
          const r = JSON.parse(line) as { t0Ns: string; t1Ns: string; cpuMs: number; blocked: number };
          resolve({ t0Ns: BigInt(r.t0Ns), t1Ns: BigInt(r.t1Ns), cpuMs: r.cpuMs, blocked: r.blocked });
        }
      });
      this.child.once('exit', () => {
        readyResolve();
        resolve(undefined);
      });
    });
  }

  /** Starts the call; returns the moment the request was written. */
  go(): bigint {
    this.goAt = nowNs();
    this.child.stdin!.write('go\n');
    return this.goAt;
  }

  /** CPU ms so far of the runner and every `ps` call it has reaped (read before abort(), at the cap). */
  cpuSoFar(): number {
    return processCpuMs(this.child.pid!);
  }

  /** Stops it (and every `ps` it started): SIGKILL to its process group. */
  abort(): void {
    try {
      realKill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
