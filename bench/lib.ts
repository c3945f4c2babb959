/**
 * Shared by every benchmark: the run marker, the registry of everything the run started (and its cleanup,
 * also on Ctrl-C), small /proc readers, statistics, and the tree builder.
 *
 * Every process the benchmark starts inherits AGENT_TREES_BENCH_RUN=<run id> (set in our own environment at
 * load), so the final leftovers check finds it again in /proc/<pid>/environ; processes started with a scrubbed
 * environment (`env -i`) are registered by pid + start time instead.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess, execFileSync, spawn, spawnSync } from 'child_process';
import type * as Processes from '../test/support/processes';

export const REPO = path.resolve(__dirname, '..', '..');
export const MARKER = 'AGENT_TREES_BENCH_RUN';
/** Always fresh, so an outer run's value (on our ancestors) is never mistaken for ours. */
export const RUN_ID = `${process.pid}-${Date.now()}`;
process.env[MARKER] = RUN_ID;

export { sleep } from '../test/support/wait';
import { sleep } from '../test/support/wait';
export const nowNs = (): bigint => process.hrtime.bigint();
export const msSince = (t0: bigint, t1: bigint = nowNs()): number => Number(t1 - t0) / 1e6;

// ------------------------------------------------------------------------------------------ /proc readers

/**
 * Reading /proc and killing come from the harness-side process helper (test/support/processes.js), shared with
 * the tests and the host runner: independent of the core on purpose, since the bench measures the core.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain JavaScript with no build step, by path
const processes: typeof Processes = require(path.join(REPO, 'test', 'support', 'processes.js'));

/** The real process.kill, kept before anything (the tree-kill guard) can wrap it. */
export const realKill: typeof process.kill = processes.realKill;

export interface Stat {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** Start time in clock ticks after boot (the process's identity with its pid). */
  startKey: number;
}

const asStat = (s: Processes.ProcStat): Stat => ({ pid: s.pid, ppid: s.ppid, pgid: s.pgid, state: s.state, startKey: s.startTicks });

/** /proc/<pid>/stat, or undefined when gone. */
export function readStat(pid: number): Stat | undefined {
  const s = processes.readStat(pid);
  return s && asStat(s);
}

/** Alive = present, not a zombie (Z) or dead (X), and still the same process (start key). */
export const isAlive = (pid: number, startKey?: number): boolean => processes.isAlive(pid, startKey);

export const allPids = (): number[] => processes.allPids();

/** Number of live (non-zombie) processes on the machine. */
export function processCount(): number {
  return allPids().filter((pid) => isAlive(pid)).length;
}

/** Value of an environment variable in a process's initial environment, or undefined. */
export const envOf = (pid: number, name: string): string | undefined => processes.envOf(pid, name);

/** Live processes whose environment has `name=value`. */
export const processesWithEnv = (name: string, value: string): Stat[] => processes.processesWithEnv(name, value).map(asStat);

/** User + system CPU ms of this process's reaped children so far (/proc/self/stat cutime + cstime, 10 ms ticks). */
export function childrenCpuMs(): number {
  const text = fs.readFileSync('/proc/self/stat', 'latin1');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

/** User + system CPU ms a process used itself, plus its reaped children's (10 ms ticks); 0 when gone. */
export function processCpuMs(pid: number): number {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return 0;
  }
}

/** CPU ms of this process (all threads) so far. */
export function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

// ------------------------------------------------------------------------------------------ statistics

export interface Summary {
  n: number;
  min: number;
  median: number;
  max: number;
}

export function summarize(values: number[]): Summary {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return { n: 0, min: NaN, median: NaN, max: NaN };
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { n: v.length, min: v[0], median, max: v[v.length - 1] };
}

export const round = (x: number, digits = 1): number => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);
export const fmt = (x: number | undefined, digits = 1): string =>
  x === undefined || !Number.isFinite(x) ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(digits);
export const fmtSummary = (s: Summary, digits = 1): string =>
  s.n === 0 ? '–' : `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;

/** Rotates the order of contenders each round (A B C, B C A, C A B, ...) so none always runs first. */
export function rotated<T>(list: T[], round: number): T[] {
  const k = round % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

// ------------------------------------------------------------------------------------------ registry + cleanup

interface Started {
  pid: number;
  startKey: number;
}

/** Processes registered by pid + start key (roots, `env -i` daemons, fixture members). */
const startedPids = new Map<number, Started>();
/** Process groups we created: pgid -> leader's start key (the leader is our spawned root). */
const startedGroups = new Map<number, number>();
/** Cgroup directories of trees we spawned in the cgroup tier. */
const startedCgroups = new Set<string>();
/** Temp folders to remove at the end. */
const tempDirs = new Set<string>();

export function register(pid: number | undefined): void {
  if (!pid) return;
  const s = readStat(pid);
  if (s) startedPids.set(pid, { pid, startKey: s.startKey });
}

/** Registers a group whose leader we just spawned (call while the leader is alive). */
export function registerGroup(pgid: number | undefined): void {
  if (!pgid) return;
  const s = readStat(pgid);
  if (s && s.pgid === pgid) startedGroups.set(pgid, s.startKey);
  register(pgid);
}

export function registerCgroup(dir: string | null | undefined): void {
  if (dir) startedCgroups.add(dir);
}

export function tmpDir(prefix = 'agent-trees-bench-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** Sends SIGKILL unless the target is protected (PID 1, us, our ancestors, our group); false when refused or gone. */
const signalQuiet = (target: number): boolean => processes.signal(target, 'SIGKILL');
const protectedPids = (): Set<number> => processes.protectedPids();

/**
 * Processes this run started that are still alive: registered pids (same start key) and anything carrying the
 * run marker. Our own children still being reaped count as dead (zombies).
 */
export function leftovers(): Stat[] {
  const keep = protectedPids();
  const found = new Map<number, Stat>();
  for (const s of processesWithEnv(MARKER, RUN_ID)) if (!keep.has(s.pid)) found.set(s.pid, s);
  for (const { pid, startKey } of startedPids.values()) {
    if (keep.has(pid) || found.has(pid)) continue;
    const s = readStat(pid);
    if (s && s.state !== 'Z' && s.state !== 'X' && s.startKey === startKey) found.set(pid, s);
  }
  return [...found.values()];
}

/**
 * Kills everything this run started, synchronously (usable from a signal handler): our cgroups, our groups
 * (only while provably ours: the leader is our root, or the leader is gone and a member carries the marker),
 * then every leftover by pid, a few rounds.
 */
export function killEverythingSync(): number {
  let signalled = 0;
  for (const dir of startedCgroups) {
    try {
      if (fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim()) {
        fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
        signalled++;
      }
    } catch {
      /* gone */
    }
  }
  const keep = protectedPids();
  const marked = leftovers();
  for (const [pgid, leaderKey] of startedGroups) {
    if (keep.has(pgid)) continue;
    const leader = readStat(pgid);
    const leaderOurs = leader && leader.state !== 'Z' && leader.startKey === leaderKey;
    const leaderless = !leader || leader.state === 'Z';
    if (leaderOurs || (leaderless && marked.some((m) => m.pgid === pgid))) {
      if (signalQuiet(-pgid)) signalled++;
    }
  }
  for (let round = 0; round < 5; round++) {
    const left = leftovers();
    if (left.length === 0) break;
    for (const s of left) if (!keep.has(s.pid) && signalQuiet(s.pid)) signalled++;
  }
  return signalled;
}

export function removeTempDirs(): void {
  for (const dir of tempDirs) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      /* best effort */
    }
  }
  tempDirs.clear();
}

/** Removes our (empty) cgroup directories, deepest first. */
export function removeCgroups(): void {
  for (const dir of startedCgroups) {
    try {
      fs.rmdirSync(dir);
    } catch {
      /* gone or still busy */
    }
  }
}

/** Ctrl-C / SIGTERM / SIGHUP: kill everything we started, remove temp files, exit. */
export function installInterruptHandlers(extra: () => void = () => {}): void {
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n[bench] ${signal}: killing every process this run started...\n`);
    try {
      extra();
    } catch {
      /* keep going */
    }
    const n = killEverythingSync();
    const deadline = Date.now() + 2000;
    let left = leftovers();
    while (left.length > 0 && Date.now() < deadline) {
      killEverythingSync();
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      left = leftovers();
    }
    removeCgroups();
    removeTempDirs();
    process.stderr.write(`[bench] signalled ${n}; ${left.length} left${left.length ? ': ' + left.map((s) => s.pid).join(' ') : ''}\n`);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
}

/** Kills leftovers until none is left (or the deadline); returns those still alive. */
export async function cleanUpAndVerify(timeoutMs = 5000): Promise<Stat[]> {
  const deadline = Date.now() + timeoutMs;
  let left = leftovers();
  while (left.length > 0 && Date.now() < deadline) {
    killEverythingSync();
    await sleep(100);
    left = leftovers();
  }
  removeCgroups();
  return left;
}

// ------------------------------------------------------------------------------------------ trees of N processes

/**
 * The tree builder: a root that forks N-1 children (no exec: fork + exec of `sleep` costs ~12 ms here) that
 * sleep LIFE s. bench/fixtures/tree.c compiled at start (a fork ~1.5–2 ms here), else bench/fixtures/tree.pl.
 */
export const TREE_SCRIPT = path.join(REPO, 'bench', 'fixtures', 'tree.pl');
let treeBuilder: { command: string; prefix: string[]; kind: string } | undefined;

export function treeCommand(n: number, lifeS = MEMBER_LIFETIME_S): { command: string; args: string[] } {
  if (!treeBuilder) {
    const bin = path.join(tmpDir('agent-trees-bench-tree-'), 'tree');
    try {
      execFileSync('cc', ['-O2', '-o', bin, path.join(REPO, 'bench', 'fixtures', 'tree.c')], {
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 60_000,
      });
      treeBuilder = { command: bin, prefix: [], kind: 'C (bench/fixtures/tree.c)' };
    } catch {
      treeBuilder = { command: 'perl', prefix: [TREE_SCRIPT], kind: 'perl (bench/fixtures/tree.pl; no C compiler)' };
    }
  }
  return { command: treeBuilder.command, args: [...treeBuilder.prefix, String(n), String(lifeS)] };
}

export function treeBuilderKind(): string {
  if (!treeBuilder) treeCommand(1);
  return treeBuilder!.kind;
}

/** Bounded lifetime of every tree member: nothing outlives a crashed run by long (the view phase asks for longer). */
export const MEMBER_LIFETIME_S = 240;

export interface Member {
  pid: number;
  startKey: number;
}

/** Waits for the tree's root to print `ready`; rejects on exit or timeout. */
export function waitReady(child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => done(new Error(`tree root ${child.pid} not ready after ${timeoutMs} ms`)), timeoutMs);
    const onData = (d: Buffer) => {
      text += d.toString();
      if (text.includes('ready')) done();
      if (text.includes('fork failed')) done(new Error(`tree root ${child.pid}: ${text.trim()}`));
    };
    const onExit = () => done(new Error(`tree root ${child.pid} exited before it was ready: ${text.trim()}`));
    const done = (e?: Error) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      if (e) reject(e);
      else resolve();
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}

/** The root and its direct children (via /proc/<pid>/task/<pid>/children), each with its start key. */
export function treeMembers(rootPid: number): Member[] {
  const out: Member[] = [];
  const root = readStat(rootPid);
  if (root) out.push({ pid: rootPid, startKey: root.startKey });
  let text = '';
  try {
    text = fs.readFileSync(`/proc/${rootPid}/task/${rootPid}/children`, 'latin1');
  } catch {
    /* gone */
  }
  for (const p of text.split(' ').filter(Boolean).map(Number)) {
    const s = readStat(p);
    if (s && s.state !== 'Z') out.push({ pid: p, startKey: s.startKey });
  }
  return out;
}

/** Spawns a tree of `n` processes with child_process.spawn (detached: its own session and group). */
export async function spawnDetachedTree(n: number, lifeS = MEMBER_LIFETIME_S): Promise<{ child: ChildProcess; members: Member[] }> {
  const { command, args } = treeCommand(n, lifeS);
  const child = spawn(command, args, { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  child.on('error', () => {});
  registerGroup(child.pid);
  await waitReady(child);
  const members = treeMembers(child.pid!);
  if (members.length !== n) throw new Error(`tree of ${n}: found ${members.length} members`);
  return { child, members };
}

export interface HostRunOptions {
  /** The suite module (`--extensionTestsPath`); omit for the integration suite itself. */
  suite?: string;
  /** `--host`: the benchmarks measure in the host the issues measured in, the oldest. */
  host?: string;
  /** Environment for the suite (`--env NAME=VALUE`). */
  env?: Record<string, string | number>;
  /** Further runner arguments (`--phases 5`, `--user-data-dir DIR`). */
  args?: string[];
  /** The runner's own timeout (`--timeout`), s; this process waits two minutes more. */
  timeoutS: number;
}

/** Whether the real host is installed; the reason to skip when not. */
export function hostMissing(): string | undefined {
  return fs.existsSync(path.join(REPO, '.tools', 'code-server'))
    ? undefined
    : 'the real host is not installed (bash scripts/host/install.sh)';
}

/**
 * Runs a suite in a fresh real VS Code host (scripts/host/runTests.js) and waits for it. Returns the exit status
 * and the runner's last lines, for the error a benchmark reports when its results file did not come.
 */
export function runInHost(o: HostRunOptions): { status: number | null; tail: (lines: number) => string } {
  const env = Object.entries(o.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const suite = o.suite ? ['--extensionTestsPath', o.suite] : [];
  const r = spawnSync(
    process.execPath,
    [
      path.join(REPO, 'scripts', 'host', 'runTests.js'),
      '--host',
      o.host ?? 'oldest',
      ...suite,
      ...(o.args ?? []),
      ...env,
      '--timeout',
      String(o.timeoutS),
    ],
    { cwd: REPO, encoding: 'utf8', timeout: (o.timeoutS + 120) * 1000 },
  );
  return { status: r.status, tail: (lines) => (r.stdout || '').split('\n').slice(-lines).join(' | ') };
}
