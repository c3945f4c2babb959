// Types of test/support/processes.js, the harness-side process helper (independent of src/proc on purpose).
// TypeScript code compiled to out/ loads the JavaScript from the source tree, where scripts/host loads it too:
//   import type * as Processes from '../support/processes';
//   const processes: typeof Processes = require(path.join(REPO, 'test', 'support', 'processes.js'));

export interface ProcStat {
  pid: number;
  /** State letter of proc(5): R, S, D, T, Z, X, ... */
  state: string;
  ppid: number;
  pgid: number;
  sid: number;
  /** Start time in clock ticks after boot: with the pid, the process's identity. */
  startTicks: number;
}

export const realKill: typeof process.kill;
export function readStat(pid: number): ProcStat | undefined;
export function isAlive(pid: number, startTicks?: number): boolean;
export function allPids(): number[];
export function readEnviron(pid: number): Map<string, string> | undefined;
export function envOf(pid: number, name: string): string | undefined;
export function processesWithEnv(name: string, value: string): ProcStat[];
export function groupMembers(pgid: number): number[];
export function commandLine(pid: number): string;
export function describe(pid: number, max?: number): string;
export function protectedPids(): Set<number>;
export function signal(target: number, sig: NodeJS.Signals): boolean;
export function signalIfSame(pid: number, startTicks: number, sig?: NodeJS.Signals): boolean;
export function killGroup(pgid: number, options?: { graceMs?: number; deadlineMs?: number }): Promise<number[]>;
export function agentTreeCgroupOf(pid: number): string | undefined;
export function killWithEnv(
  name: string,
  value: string,
  options?: { deadlineMs?: number },
): Promise<{ killed: number[]; survivors: string[]; cgroupsRemoved: string[] }>;
