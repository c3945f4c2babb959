/**
 * Spawning an owned tree on a pseudo-terminal of its own: through the same path as every tree (spawn/: tag, cgroup
 * launcher, record), by `@lydell/node-pty`, a prebuilt N-API module (one binary serves Node and Electron, no
 * compiler), never VS Code's own node-pty. Loaded on first use; where it cannot load, agents run on pipes.
 */
import { StringDecoder } from 'string_decoder';
import { ProcessTable } from '../platform/processTable';
import { SpawnError } from '../spawn/spawnError';
import { SpawnedTree, SpawnParts, SpawnTreeOptions, spawnTreeWith } from '../spawn/spawnTree';
import { clampSize, NodePty, PtyRoot } from './ptyRoot';
import { DEFAULT_TERM } from './terminalModes';

interface NodePtyModule {
  spawn(
    file: string,
    args: string[],
    options: {
      name: string;
      cols: number;
      rows: number;
      cwd: string;
      env: NodeJS.ProcessEnv;
      encoding: string | null;
    },
  ): NodePty;
}

/** The module, or why there is none (the caller falls back to pipes and says so). */
export interface PtyAvailability {
  module?: NodePtyModule;
  problem?: string;
}

let cached: PtyAvailability | undefined;

/** Loads `@lydell/node-pty` once (see `loadPtyWith`). */
function loadPty(): PtyAvailability {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a native module, loaded on first use, that may be missing
  return (cached ??= loadPtyWith(() => require('@lydell/node-pty')));
}

/**
 * Loads the module through `load` and says why not, when not. Windows keeps pipes: ConPTY and its console host
 * have not been tried with the Windows kill path (taskkill /T from the root).
 */
export function loadPtyWith(load: () => unknown, platform: NodeJS.Platform = process.platform): PtyAvailability {
  if (platform === 'win32') return { problem: 'pseudo-terminals are used on Linux and macOS; on Windows agents run on pipes' };
  try {
    const m = load() as Partial<NodePtyModule> | undefined;
    return typeof m?.spawn === 'function' ? { module: m as NodePtyModule } : { problem: 'cannot load @lydell/node-pty: it has no spawn()' };
  } catch (e) {
    const first =
      String((e as Error)?.message ?? e)
        .split('\n')
        .find((l) => l.trim()) ?? 'unknown error';
    return { problem: `cannot load @lydell/node-pty (${platform}-${process.arch}): ${first}` };
  }
}

/** Why agents cannot get a pseudo-terminal here, or undefined when they can. */
export function ptyProblem(): string | undefined {
  return loadPty().problem;
}

export interface PtySpawnOptions extends Omit<SpawnTreeOptions, 'stdio'> {
  cols?: number;
  rows?: number;
  /** 'utf8' (default): output as strings, decoded across chunk boundaries; null: raw Buffers (a relay). */
  encoding?: 'utf8' | null;
}

/**
 * Spawns an owned tree whose root runs on a new pseudo-terminal. Throws SpawnError when nothing could start,
 * including when the module cannot load (check `ptyProblem()` first to fall back to pipes).
 */
export function spawnPtyTree(options: PtySpawnOptions, core: SpawnParts): SpawnedTree<PtyRoot> {
  const { module, problem } = loadPty();
  if (!module) throw new SpawnError(problem!, 'EINVAL');
  const size = clampSize(options.cols, options.rows);
  const held = options.held === true;
  return spawnTreeWith<PtyRoot>(
    options,
    (launch) => {
      const env = { ...launch.env };
      // A size inherited from the spawning process would contradict the terminal's own.
      delete env.COLUMNS;
      delete env.LINES;
      const pty = module.spawn(launch.file, launch.args, {
        name: env.TERM || DEFAULT_TERM,
        cols: size.cols,
        rows: size.rows,
        cwd: launch.cwd,
        env,
        encoding: null, // bytes: PtyRoot decodes, so what it drains at the end decodes the same way
      });
      awaitOwnSession(pty.pid, core.table);
      const root = new PtyRoot(pty, options.encoding === null ? undefined : new StringDecoder('utf8'));
      // The end-of-input character lets a held root go (see `RootGate`); it is the first input the terminal gets.
      return { root, sessionLeader: true, release: held ? () => root.write('\x04') : undefined };
    },
    { core, gate: held ? 'tty' : undefined },
  );
}

/**
 * node-pty returns right after fork(), before the child's setsid(): until then the child is in our own session
 * and group, which the kill guard rightly refuses to signal, so a kill in that window would miss the root.
 * Waits (synchronously, normally well under a millisecond) until the child leads its own session or is gone.
 */
function awaitOwnSession(pid: number, table: Pick<ProcessTable, 'read'>, timeoutMs = 2000): void {
  const until = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const p = table.read(pid);
    if (!p || p.sid === pid || Date.now() > until) return;
    try {
      Atomics.wait(pause, 0, 0, 1);
    } catch {
      /* a thread that may not block: spin */
    }
  }
}
