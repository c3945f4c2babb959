/**
 * Shared by the unit tests: temp folders, fixture trees, waiting, and the registry of every process the
 * tests started, which the leak check reads at the end of the run.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { LinuxProcessTable } from '../../src/proc/platform/linuxProcessTable';
import { envValue } from '../../src/proc/platform/procParsers';

export const REPO = path.resolve(__dirname, '..', '..', '..');
export const FIXTURE = path.join(REPO, 'test', 'fixtures', 'tree.sh');
/** The bundled CLI; AGENT_TREES_TEST_CLI points the CLI tests at another build (an earlier one, say). */
export const CLI = process.env.AGENT_TREES_TEST_CLI ?? path.join(REPO, 'dist', 'cli.js');

/** Every process the tests start inherits this; `env -i` ones are registered by pid instead. */
export const RUN_MARKER = 'AGENT_TREES_TEST_RUN';
if (!process.env[RUN_MARKER]) process.env[RUN_MARKER] = `${process.pid}-${Date.now()}`;
export const RUN_ID = process.env[RUN_MARKER]!;

export const table = new LinuxProcessTable();

/** Processes started by tests, as pid -> start key, for the leak check. */
export const startedProcesses = new Map<number, number>();

export function register(pid: number): void {
  const p = table.read(pid);
  if (p) startedProcesses.set(pid, p.startKey);
}

export function tmpDir(prefix = 'agent-trees-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export interface FixturePids {
  /** role -> pids, in the order the fixture wrote them. */
  roles: Map<string, number[]>;
  all: number[];
}

/** Reads a fixture's pid file once it holds a `ready` line (or `unsupported`), registering every pid. */
export async function fixturePids(pidfile: string, timeoutMs = 10_000): Promise<FixturePids> {
  const text = await waitFor(`fixture ${pidfile} to be ready`, () => {
    const t = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '';
    return /^(ready|unsupported) /m.test(t) ? t : undefined;
  }, timeoutMs);
  const roles = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const [role, pid] = line.split(' ');
    if (!role || !pid || role === 'ready') continue;
    const n = Number(pid);
    roles.set(role, [...(roles.get(role) ?? []), n]);
    if (n > 0) register(n);
  }
  const all = [...roles.entries()].filter(([r]) => r !== 'unsupported').flatMap(([, p]) => p);
  return { roles, all };
}

export function alive(pid: number): boolean {
  return table.read(pid) !== undefined;
}

export function aliveOf(pids: number[]): number[] {
  return pids.filter((pid) => {
    const p = table.read(pid);
    return p !== undefined && startedProcesses.get(pid) === p.startKey;
  });
}

/** Waits until none of `pids` is alive (zombies count as dead); returns those still alive at the deadline. */
export async function waitAllDead(pids: number[], timeoutMs = 5000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = aliveOf(pids);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20);
    left = aliveOf(left);
  }
  return left;
}

/** Processes alive now that carry this run's marker or were registered: what the leak check looks for. */
export function leakedProcesses(): { pid: number; command: string }[] {
  const snap = table.snapshot();
  const leaks = new Map<number, string>();
  for (const [pid, startKey] of startedProcesses) {
    const p = snap.processes.get(pid);
    if (p && p.startKey === startKey) leaks.set(pid, snap.commandLine(pid));
  }
  for (const p of snap.processes.values()) {
    if (p.pid === process.pid || leaks.has(p.pid)) continue;
    try {
      if (envValue(fs.readFileSync(`/proc/${p.pid}/environ`), RUN_MARKER) === RUN_ID) leaks.set(p.pid, snap.commandLine(p.pid));
    } catch {
      /* gone, or not ours to read */
    }
  }
  // The test runner's own ancestry carries the marker too when set from outside; never count those.
  let a = process.ppid;
  while (a > 1) {
    leaks.delete(a);
    a = table.read(a)?.ppid ?? 0;
  }
  return [...leaks].map(([pid, command]) => ({ pid, command }));
}
