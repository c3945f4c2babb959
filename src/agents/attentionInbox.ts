/**
 * The owner's end of the attention channel: the trees it launched with hooks, each with a key of its own and a
 * tracker, and the hook calls addressed to it, taken from the folder whenever it changes. A call is shown (given to
 * its tree's tracker) only when it names a live tree of this owner's that was launched with hooks, with that
 * tree's key; every other call is refused and logged with why, and never shown. The calls are read a batch at a
 * time, one batch per turn of the event loop: a flood of them (a runaway script calling notify) never holds up the
 * process that owns the trees (the extension host), and every one is still taken, in order. Pure Node.
 */
import { randomBytes, timingSafeEqual } from 'crypto';
import { Logger } from '../proc';
import type { AttentionTracker } from './attention';
import { AttentionFolder, ChannelError, ChannelOwner, formatAddress, HookMessage, NOTIFY_VARIABLE } from './attentionChannel';
import { hookSignal } from './attentionHooks';

interface Hooked {
  key: string;
  tracker: AttentionTracker;
}

/** What a hook call was: shown, or refused (and why). */
export interface HookCallOutcome {
  tree: string;
  agent: string;
  event?: string;
  refused?: string;
}

/** Hook calls read in one turn of the event loop, at most. */
const BATCH = 64;

const sameKey = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export class AttentionInbox {
  private readonly hooked = new Map<string, Hooked>();
  private readonly onChanged = () => {
    this.unread = true;
    this.takeSoon();
  };
  private listening = false;
  /** Calls found and not read yet, in order; whether the folder changed since they were listed; a batch scheduled. */
  private queue: string[] = [];
  private unread = false;
  private scheduled = false;
  private disposed = false;
  /** The last hook calls (at most 50), for the log's readers and the tests. */
  readonly outcomes: HookCallOutcome[] = [];

  constructor(
    readonly folder: AttentionFolder,
    readonly owner: ChannelOwner,
    private readonly log: Logger,
  ) {}

  /**
   * A tree about to be launched with hooks: its key, and the variable that carries it and the address. Throws
   * ChannelError when the folder cannot be used (the launch then goes on without hooks).
   */
  open(tree: string, tracker: AttentionTracker): Record<string, string> {
    this.folder.ensure();
    if (!this.listening) {
      this.folder.on('changed', this.onChanged);
      this.listening = true;
    }
    this.folder.watch();
    if (!this.folder.watching) throw new ChannelError(`attention folder ${this.folder.dir} cannot be watched`);
    const key = randomBytes(16).toString('hex');
    this.hooked.set(tree, { key, tracker });
    return { [NOTIFY_VARIABLE]: formatAddress({ owner: this.owner, key, folder: this.folder.dir }) };
  }

  /** The tree ended: a later call for it is stale. */
  close(tree: string): void {
    this.hooked.delete(tree);
  }

  /** Takes the calls addressed to this owner and gives each to its tree, or refuses it: a batch now, the rest later. */
  take(): void {
    this.unread = true;
    this.takeBatch();
  }

  private takeBatch(): void {
    if (this.disposed) return;
    if (this.queue.length === 0 && this.unread) {
      this.unread = false;
      this.queue = this.folder.messageNames(this.owner).sort();
    }
    for (const name of this.queue.splice(0, BATCH)) {
      const found = this.folder.takeMessage(name);
      if (found.problem === 'gone before it was read') continue;
      if (found.problem || !found.value) this.refuse({ tree: '?', agent: '?' }, `${found.file}: ${found.problem}`);
      else this.deliver(found.value);
    }
    if (this.queue.length > 0 || this.unread) this.takeSoon();
  }

  private takeSoon(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.takeBatch();
    });
  }

  private deliver(m: HookMessage): void {
    const call: HookCallOutcome = { tree: m.tree, agent: m.agent, event: m.event.name };
    const tree = this.hooked.get(m.tree);
    if (!tree) return this.refuse(call, `tree ${m.tree} is not a live tree this owner launched with hooks (stale, or another owner's)`);
    if (!sameKey(tree.key, m.key)) return this.refuse(call, `the call for tree ${m.tree} does not carry that tree's key`);
    const signal = hookSignal(m.agent, m.event);
    this.record(call);
    if (!signal) {
      this.log.info(
        `tree ${m.tree}: ${m.agent} hook ${m.event.name ?? '?'}${m.event.type ? ` (${m.event.type})` : ''}: says nothing about waiting`,
      );
      return;
    }
    if (tree.tracker.signal(signal)) {
      const a = tree.tracker.current;
      this.log.info(`tree ${m.tree}: ${a.state}${a.message ? `: ${a.message}` : ''} (${m.agent} hook ${m.event.name ?? '?'})`);
    }
  }

  private refuse(call: HookCallOutcome, why: string): void {
    this.record({ ...call, refused: why });
    this.log.warn(`attention: refused a hook call: ${why}`);
  }

  private record(call: HookCallOutcome): void {
    this.outcomes.push(call);
    if (this.outcomes.length > 50) this.outcomes.shift();
  }

  dispose(): void {
    this.disposed = true;
    this.folder.off('changed', this.onChanged);
    this.hooked.clear();
    this.queue = [];
  }
}
