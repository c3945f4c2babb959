import { ChildProcess, spawn, SpawnOptions } from 'child_process';
import { CLI, register } from './started';

export interface CliRun {
  child: ChildProcess;
  /** Resolves when the CLI has exited and every holder of its output pipes closed them. */
  done: Promise<{ code: number; stdout: string; stderr: string }>;
  /** Resolves when the CLI process itself has exited (its orphans may still hold the pipes). */
  exited: Promise<void>;
}

/** An ordinary user for tests that need one (root runs the suite); `setpriv` switches to it. */
export const OTHER_UID = 12345;

/** Starts `node dist/cli.js ARGS` (its output collected); with `asUid`, as that user (through setpriv). */
export function startCli(args: string[], options: SpawnOptions & { asUid?: number } = {}): CliRun {
  const { asUid, ...spawnOptions } = options;
  const [file, argv] = asUid === undefined
    ? [process.execPath, [CLI, ...args]]
    : ['setpriv', [`--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', process.execPath, CLI, ...args]];
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOptions });
  register(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code: code ?? 128 + (signal === 'SIGKILL' ? 9 : 15), stdout, stderr }));
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, done, exited };
}

export function runCli(args: string[], options: SpawnOptions & { asUid?: number } = {}) {
  return startCli(args, options).done;
}
