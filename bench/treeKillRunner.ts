/**
 * Runs one tree-kill call in a process of its own, so its walk (one `ps --ppid` spawn per member, which keeps a
 * Node main thread busy for seconds on large trees) never blocks the benchmark, and a capped run is stopped by
 * killing this process's group (it is spawned detached; tree-kill's `ps` calls are in the same group).
 *
 *   node treeKillRunner.js '<json spec>'     spec: { rootPid, members?: [pid, startKey][], tagVar?, tag? }
 *
 * Prints `ready`, waits for a line on stdin, then calls treeKill(rootPid, 'SIGKILL') and prints one JSON line:
 * { t0Ns, t1Ns, cpuMs, blocked } (t0/t1: process.hrtime.bigint() around the call, the same clock in every
 * process; cpuMs: this process plus its reaped children, i.e. the `ps` calls).
 *
 * While tree-kill runs, process.kill may only signal members: pids in `members` at their start key, or
 * processes whose environment has tagVar=tag. A pid tree-kill collected whose process has died since (and may be
 * someone else's now) is dropped and counted as `blocked`.
 */
import * as fs from 'fs';
import treeKill = require('tree-kill');

const spec = JSON.parse(process.argv[2]) as { rootPid: number; members?: [number, number][]; tagVar?: string; tag?: string };
const keys = new Map(spec.members ?? []);

function startKey(pid: number): number | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return f[0] === 'Z' || f[0] === 'X' ? undefined : Number(f[19]);
  } catch {
    return undefined;
  }
}

function hasTag(pid: number): boolean {
  if (!spec.tagVar) return false;
  try {
    const entries = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return entries.includes(`${spec.tagVar}=${spec.tag}`);
  } catch {
    return false;
  }
}

function allowed(pid: number): boolean {
  const key = startKey(pid);
  if (key === undefined) return false;
  return keys.get(pid) === key || hasTag(pid);
}

function cpuMs(): number {
  const u = process.cpuUsage();
  const text = fs.readFileSync('/proc/self/stat', 'latin1');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (u.user + u.system) / 1000 + (Number(f[13]) + Number(f[14])) * 10;
}

let blocked = 0;
const realKill = process.kill.bind(process);
process.kill = function (pid: number, signal?: string | number): true {
  if (signal === 0) return realKill(pid, 0);
  if (pid <= 1 || !allowed(pid)) {
    blocked++;
    return true;
  }
  return realKill(pid, signal as NodeJS.Signals);
} as typeof process.kill;

process.stdout.write('ready\n');
process.stdin.once('data', () => {
  const cpu0 = cpuMs();
  const t0 = process.hrtime.bigint();
  treeKill(spec.rootPid, 'SIGKILL', () => {
    const t1 = process.hrtime.bigint();
    process.stdout.write(JSON.stringify({ t0Ns: t0.toString(), t1Ns: t1.toString(), cpuMs: cpuMs() - cpu0, blocked }) + '\n');
    process.exit(0);
  });
});
