/**
 * The attention channel: how an agent's hook (`agent-trees notify`, run inside the tree) reaches the process that
 * owns the tree, and how an `agent-trees run` typed in a window's terminal tells that window its tree's state.
 * Both are small files in the records folder's `attention/` folder, watched with the file system's own
 * notifications (inotify on Linux): nothing polls, and nothing is started while the agents work.
 *
 *   to-<owner pid>-<owner start key>-<random>.msg          a hook call for that owner (HookMessage)
 *   state-<owner pid>-<owner start key>-<tree id>.json     an `agent-trees run`'s tree state, for its window
 *   .tmp-<writer pid>-<random>                             being written; renamed into place once complete
 *
 * What the channel trusts (docs/design/attention.md says the same):
 *   - the folder only when it is a folder of this user's that no one else can write (and so is the records folder
 *     around it): another user can neither list it nor put a file in it;
 *   - a file only when it is a regular file of this user's, not writable by others, at most 16 KB, opened without
 *     following a symlink or blocking on a FIFO. Anything else where a message is expected is refused, logged and
 *     removed, never read;
 *   - a hook call only for a live tree its owner launched with hooks, carrying that tree's key (128 random bits,
 *     given to that tree alone, in its environment; compared in constant time). A stale tree id, another owner's
 *     tree, a wrong or missing key: refused and logged, never shown (attentionInbox.ts);
 *   - not against the user's own processes: one that reads a tree's environment (/proc/<pid>/environ) can post for
 *     it, as it could type into the agent's terminal or kill it. The key keeps out other trees, stale environments
 *     and mistakes; the file checks keep out other users.
 * Pure Node.
 */
import { randomBytes } from 'crypto';
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as path from 'path';
import { euid, Logger, makeFolders, readTrusted, UntrustedFileError } from '../proc';
import type { Attention } from './attention';
import type { HookEvent } from './attentionHooks';

/** `<owner pid>:<owner start key>:<key>:<folder>`, in the environment of a tree launched with hooks. */
export const NOTIFY_VARIABLE = 'AGENT_TREES_NOTIFY';
const ATTENTION_FOLDER = 'attention';
/** Set by a window in its terminals: `off` when its `agentTrees.attention.hooks` is off (read by `agent-trees run`). */
export const HOOKS_SETTING_VARIABLE = 'AGENT_TREES_ATTENTION_HOOKS';

const MAX_FILE_BYTES = 16 * 1024;
const MSG_NAME = /^to-(\d{1,10})-(\d{1,20})-\d{20}-[0-9a-f]{16}\.msg$/;
const STATE_NAME = /^state-(\d{1,10})-(\d{1,20})-([A-Za-z0-9._-]{1,128})\.json$/;
const TMP_NAME = /^\.tmp-(\d{1,10})-[0-9a-f]{16}$/;

/** An owner as the channel names it: its pid and start key (so a file for a dead owner is told from a live one's). */
export interface ChannelOwner {
  pid: number;
  startKey: number;
}

/** Where a tree's hook calls go, and the tree's key. */
export interface NotifyAddress {
  owner: ChannelOwner;
  key: string;
  folder: string;
}

export function formatAddress(a: NotifyAddress): string {
  return `${a.owner.pid}:${a.owner.startKey}:${a.key}:${a.folder}`;
}

export function parseAddress(text: string | undefined): NotifyAddress | undefined {
  // The folder may hold any character a path can, a newline too.
  const m = /^(\d{1,10}):(\d{1,20}):([0-9a-f]{32}):([\s\S]+)$/.exec(text ?? '');
  if (!m || !path.isAbsolute(m[4])) return undefined;
  return { owner: { pid: Number(m[1]), startKey: Number(m[2]) }, key: m[3], folder: m[4] };
}

/** A hook call, as `agent-trees notify` writes it. */
export interface HookMessage {
  version: 1;
  tree: string;
  key: string;
  /** Which CLI's hook called (`claude`, `codex`), or `notify` for a plain `agent-trees notify`. */
  agent: string;
  event: HookEvent;
  sentAt: number;
}

/** A tree's state as its `agent-trees run` publishes it for its window. */
export interface PublishedState {
  version: 1;
  owner: ChannelOwner;
  tree: string;
  /** The window tag (`AGENT_TREES_WINDOW`) of the terminal `run` was typed in. */
  window: string;
  attention: Attention;
  /** Whether the terminal has the keyboard focus, as its focus reports last said. */
  focused?: boolean;
}

/** Says why a channel operation could not be done, in a sentence naming the folder or file. */
export class ChannelError extends Error {}

const ownerTag = (o: ChannelOwner) => `${o.pid}-${o.startKey}`;

/** Why the folder is not to be trusted (or used), or undefined. 'missing' when it does not exist. */
export function folderProblem(dir: string, uid: number | undefined = euid()): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : `cannot be looked at (${(e as NodeJS.ErrnoException).code})`;
  }
  if (st.isSymbolicLink()) return 'a symbolic link, not a folder';
  if (!st.isDirectory()) return 'not a folder';
  if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not by this user (uid ${uid})`;
  if (uid !== undefined && (st.mode & 0o022) !== 0) return `writable by other users (mode ${(st.mode & 0o7777).toString(8)})`;
  return undefined;
}

/** Writes `value` as a new file in `dir`, complete or not at all (a temp file renamed into place). */
function writeAtomically(dir: string, name: string, value: unknown): void {
  const tmp = path.join(dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}`);
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0), 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(value));
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tmp, path.join(dir, name));
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** Posts a hook call to its tree's owner (`agent-trees notify`). Throws ChannelError with what is wrong. */
export function postMessage(address: NotifyAddress, message: HookMessage, ownerAlive: (o: ChannelOwner) => boolean): void {
  const problem = folderProblem(address.folder);
  if (problem) throw new ChannelError(`attention folder ${address.folder}: ${problem === 'missing' ? 'does not exist' : problem}`);
  if (!ownerAlive(address.owner)) throw new ChannelError(`the tree's owner (pid ${address.owner.pid}) is gone`);
  try {
    // The owner takes an agent's calls in name order, so the name leads with when it was sent: on the machine's
    // monotonic clock (the same for every process, in ns), which a step of the wall clock does not reorder.
    const sent = process.hrtime.bigint().toString().padStart(20, '0');
    writeAtomically(address.folder, `to-${ownerTag(address.owner)}-${sent}-${randomBytes(8).toString('hex')}.msg`, message);
  } catch (e) {
    throw new ChannelError(
      `attention folder ${address.folder}: cannot write (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
}

/** A file found in the folder: what it held, or why it was not read. */
export interface Found<T> {
  file: string;
  value?: T;
  problem?: string;
}

function removeQuietly(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* gone already, or not ours to remove: reported by the caller */
  }
}

/**
 * One process's view of `<records>/attention/`: it watches it, takes the hook calls addressed to it, writes and
 * reads published states, and removes what owners that are gone left.
 * Events: `changed` (something in the folder changed).
 */
export class AttentionFolder extends EventEmitter {
  readonly dir: string;
  private watcher: fs.FSWatcher | undefined;
  /** The folder the watcher watches (device and inode): another there is watched anew. */
  private watched: { dev: number; ino: number } | undefined;
  /** What was last found wrong with the folder (logged once), or undefined. */
  private problem: string | undefined;
  private readonly uid = euid();

  constructor(
    recordsDir: string,
    private readonly log: Logger,
  ) {
    super();
    this.dir = path.join(recordsDir, ATTENTION_FOLDER);
  }

  /** Creates the folder (0700) if needed and checks it; throws ChannelError naming what is wrong. */
  ensure(): void {
    const problem = folderProblem(this.dir, this.uid);
    if (problem === undefined) return;
    if (problem !== 'missing') throw new ChannelError(`attention folder ${this.dir}: ${problem}: no hook call is taken from it`);
    try {
      makeFolders(this.dir);
    } catch (e) {
      throw new ChannelError(
        `attention folder ${this.dir}: cannot be created (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    const after = folderProblem(this.dir, this.uid);
    if (after) throw new ChannelError(`attention folder ${this.dir}: ${after}`);
  }

  /** Starts watching (once, and again when the folder watched is no longer the one there): `changed` on every change. */
  watch(): void {
    if (this.watcher && this.watchesFolderThere()) return;
    this.unwatch();
    try {
      const st = fs.lstatSync(this.dir);
      this.watcher = fs.watch(this.dir, { persistent: false }, (_event, name) => this.onEvent(name));
      this.watched = { dev: st.dev, ino: st.ino };
      this.watcher.on('error', (e) => {
        this.log.warn(`attention folder ${this.dir}: watching stopped (${e.message}); hook calls are not taken until it restarts`);
        this.unwatch();
      });
    } catch (e) {
      this.log.warn(`attention folder ${this.dir}: cannot be watched (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }

  get watching(): boolean {
    return this.watcher !== undefined;
  }

  private watchesFolderThere(): boolean {
    try {
      const st = fs.lstatSync(this.dir);
      return st.dev === this.watched?.dev && st.ino === this.watched.ino;
    } catch {
      return false;
    }
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watched = undefined;
  }

  /**
   * A change in the folder. One about the folder itself (its own name, or none: removed, moved away) means the
   * watch may be on a folder no longer there (a new one can even get the old one's inode), and calls made into the
   * folder there now would never be seen: it is made again if need be, and watched anew.
   */
  private onEvent(name: string | Buffer | null): void {
    if ((name === null || String(name) === ATTENTION_FOLDER) && this.watcher) {
      this.unwatch();
      try {
        this.ensure();
        this.watch();
      } catch (e) {
        this.log.warn(`${(e as Error).message}: hook calls are not taken until it is a folder of this user's again`);
      }
    }
    this.emit('changed');
  }

  /** Whether the folder can be trusted now (checked on every read); what is wrong is logged once. */
  private trusted(): boolean {
    const problem = folderProblem(this.dir, this.uid);
    if (problem !== this.problem && problem !== undefined && problem !== 'missing')
      this.log.warn(`attention folder ${this.dir}: ${problem}: nothing is taken from it until it is fixed`);
    this.problem = problem;
    return problem === undefined;
  }

  private names(): string[] {
    try {
      return fs.readdirSync(this.dir);
    } catch {
      return [];
    }
  }

  /** Reads one file the channel's way; what is not trusted is removed (it is in our folder, under our name). */
  private readFile<T>(name: string, parse: (value: unknown) => T | undefined): Found<T> {
    const file = path.join(this.dir, name);
    let text: string | undefined;
    try {
      text = readTrusted(file, this.uid);
    } catch (e) {
      const problem = e instanceof UntrustedFileError ? e.message : `cannot be read (${(e as Error).message})`;
      removeQuietly(file);
      return { file, problem };
    }
    if (text === undefined) return { file, problem: 'gone before it was read' };
    if (Buffer.byteLength(text) > MAX_FILE_BYTES) return { file, problem: `more than ${MAX_FILE_BYTES} bytes` };
    let value: T | undefined;
    try {
      value = parse(JSON.parse(text));
    } catch {
      value = undefined;
    }
    return value === undefined ? { file, problem: 'not a message of the attention channel' } : { file, value };
  }

  /** The names of the hook calls addressed to `owner` now (none while the folder is not to be trusted). */
  messageNames(owner: ChannelOwner): string[] {
    if (!this.trusted()) return [];
    const prefix = `to-${ownerTag(owner)}-`;
    return this.names().filter((n) => n.startsWith(prefix));
  }

  /** Takes (reads and removes) one hook call, named by `messageNames`. */
  takeMessage(name: string): Found<HookMessage> {
    const f = MSG_NAME.test(name) ? this.readFile(name, hookMessageOf) : { file: path.join(this.dir, name), problem: 'not a message name' };
    removeQuietly(f.file);
    return f;
  }

  /** Publishes a tree's state for its window (replacing the previous one). */
  writeState(state: PublishedState): void {
    writeAtomically(this.dir, `state-${ownerTag(state.owner)}-${state.tree}.json`, state);
  }

  removeState(owner: ChannelOwner, tree: string): void {
    removeQuietly(path.join(this.dir, `state-${ownerTag(owner)}-${tree}.json`));
  }

  /** Every published state (the caller keeps those of its window's trees); none while the folder is not to be trusted. */
  states(): Found<PublishedState>[] {
    if (!this.trusted()) return [];
    return this.names()
      .filter((n) => STATE_NAME.test(n))
      .map((n) => {
        const f = this.readFile(n, publishedStateOf);
        const m = STATE_NAME.exec(n)!;
        // The name says whose it is; a file whose content says otherwise is not that owner's.
        if (f.value && (String(f.value.owner.pid) !== m[1] || String(f.value.owner.startKey) !== m[2] || f.value.tree !== m[3]))
          return { file: f.file, problem: 'its content does not match its name' };
        return f;
      });
  }

  /**
   * Removes the files owners and writers that are gone left: messages and states named after a dead owner, temp
   * files of a dead writer. Returns the files removed.
   */
  removeLeftovers(alive: (owner: ChannelOwner) => boolean, pidAlive: (pid: number) => boolean): string[] {
    const removed: string[] = [];
    for (const name of this.names()) {
      const m = MSG_NAME.exec(name) ?? STATE_NAME.exec(name);
      const tmp = TMP_NAME.exec(name);
      const gone = m ? !alive({ pid: Number(m[1]), startKey: Number(m[2]) }) : tmp ? !pidAlive(Number(tmp[1])) : false;
      if (!gone) continue;
      const file = path.join(this.dir, name);
      removeQuietly(file);
      removed.push(file);
    }
    return removed;
  }

  dispose(): void {
    this.unwatch();
    this.removeAllListeners();
  }
}

const str = (v: unknown, max = 500): string | undefined => (typeof v === 'string' ? v.slice(0, max) : undefined);

/** The hook event fields the channel carries, each a bounded string. */
export function hookEventOf(v: unknown): HookEvent {
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  const e: HookEvent = {};
  for (const k of ['name', 'type', 'message', 'title', 'tool', 'toolDetail'] as const) {
    const s = str(o[k]);
    if (s !== undefined) e[k] = s;
  }
  return e;
}

function hookMessageOf(v: unknown): HookMessage | undefined {
  const o = v as Record<string, unknown>;
  if (!o || o.version !== 1 || typeof o.tree !== 'string' || typeof o.key !== 'string' || typeof o.agent !== 'string') return undefined;
  return {
    version: 1,
    tree: o.tree.slice(0, 128),
    key: o.key.slice(0, 64),
    agent: o.agent.slice(0, 32),
    event: hookEventOf(o.event),
    sentAt: Number(o.sentAt) || 0,
  };
}

function publishedStateOf(v: unknown): PublishedState | undefined {
  const o = v as Record<string, unknown>;
  if (!o || o.version !== 1 || typeof o.tree !== 'string' || typeof o.window !== 'string') return undefined;
  const owner = o.owner as Record<string, unknown> | undefined;
  const a = o.attention as Record<string, unknown> | undefined;
  if (!owner || !Number.isSafeInteger(owner.pid) || !Number.isSafeInteger(owner.startKey) || !a) return undefined;
  if (a.state !== 'working' && a.state !== 'waiting' && a.state !== 'idle') return undefined;
  if (typeof a.since !== 'number' || !Number.isSafeInteger(a.waits)) return undefined;
  const source = a.source === 'hook' || a.source === 'terminal' ? a.source : undefined;
  return {
    version: 1,
    owner: { pid: owner.pid as number, startKey: owner.startKey as number },
    tree: o.tree,
    window: o.window,
    attention: {
      state: a.state,
      message: str(a.message, 300),
      detail: str(a.detail, 300),
      since: a.since,
      source,
      waits: a.waits as number,
    },
    focused: typeof o.focused === 'boolean' ? o.focused : undefined,
  };
}
