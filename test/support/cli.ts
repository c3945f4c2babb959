/**
 * Commands the system tests run: the bundled CLI (as this user or another), any command bounded in time, and
 * folders another user can use.
 */
import { ChildProcess, spawn, SpawnOptions, spawnSync } from 'child_process';
import * as fs from 'fs';
import { cliForOtherUser, readableDir } from './otherUser';
import { CLI, tmpDir } from './repo';
import { register } from './started';

export interface CliRun {
  child: ChildProcess;
  /** Resolves when the CLI has exited and every holder of its output pipes closed them. */
  done: Promise<{ code: number; stdout: string; stderr: string }>;
  /** Resolves when the CLI process itself has exited (its orphans may still hold the pipes). */
  exited: Promise<void>;
}

/**
 * Starts `node dist/cli.js ARGS` (its output collected); with `asUid`, as that user (through setpriv), from a copy
 * of the bundles that user can read, in that copy's folder (see otherUser.ts).
 */
export function startCli(args: string[], options: SpawnOptions & { asUid?: number } = {}): CliRun {
  const { asUid, ...spawnOptions } = options;
  const [file, argv] =
    asUid === undefined
      ? [process.execPath, [CLI, ...args]]
      : ['setpriv', [`--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', process.execPath, cliForOtherUser(), ...args]];
  const cwd = asUid === undefined ? undefined : readableDir();
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd, ...spawnOptions });
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

/** A folder `uid` can use (tmpDir makes 0700 folders owned by root), with `mode`. */
export function dirFor(uid: number, mode = 0o755): string {
  const dir = tmpDir();
  fs.chownSync(dir, uid, uid);
  fs.chmodSync(dir, mode);
  return dir;
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** It had to be SIGKILLed at the time limit. */
  timedOut: boolean;
}

/** Runs a command to its end, or SIGKILLs it after `timeoutMs` (a hang fails the caller, not the suite). */
export function runBounded(file: string, args: string[], timeoutMs = 20_000, options: SpawnOptions = {}): Promise<Ran> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  register(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    }),
  );
}

/** Whether a program is on PATH (the Debian test tools: faketime, unshare, setpriv). */
export function hasTool(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
}
