// Process helpers for the harness side: test runners, tests and the benchmark (scripts/host, test/integration,
// bench) read /proc and end what they started through this one module.
//
// Independent of the product's core (src/proc) on purpose: the tests check the core, so they must not see
// processes through it. A bug in the core's /proc parser, identity check or kill must show up as a failing
// test, not hide in the code that checks it. Keep it small, Linux only, plain Node.
//
// Every signal goes to a process proven to be the one meant (pid + start time read just before), or to a
// process group while its leader or a marked member proves it ours; never to PID 1, this process, its
// ancestors or its own group.
//
// Plain CommonJS with no build step, so scripts/host loads it as it is; TypeScript code loads it through
// test/support/processes.d.ts (see loadProcesses() there).
'use strict';

const fs = require('fs');

/** process.kill as it was when this module loaded, before anything (bench's tree-kill guard) wraps it. */
const realKill = process.kill.bind(process);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const statBuffer = Buffer.allocUnsafe(4096);

/**
 * /proc/<pid>/stat: state, parent, group, session and start time (clock ticks after boot), or undefined when
 * the process is gone. The command name may hold spaces and parentheses: fields start after the last ')'.
 */
function readStat(pid) {
  let fd;
  try {
    fd = fs.openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    return undefined;
  }
  try {
    const n = fs.readSync(fd, statBuffer, 0, statBuffer.length, 0);
    const text = statBuffer.toString('latin1', 0, n);
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 of proc(5): field n is at index n - 3.
    return { pid, state: f[0], ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]), startTicks: Number(f[19]) };
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether a stat is of a live process: zombies (Z) and dead ones (X, x) count as dead. */
const statAlive = (s) => !!s && s.state !== 'Z' && s.state !== 'X' && s.state !== 'x';

/** True while `pid` runs and, if `startTicks` is given, is still the process that started then. */
function isAlive(pid, startTicks) {
  const s = readStat(pid);
  return statAlive(s) && (startTicks === undefined || s.startTicks === startTicks);
}

/** Every pid in /proc. */
function allPids() {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c >= 48 && c <= 57) out.push(Number(name));
  }
  return out;
}

/** The environment a process started with, as a Map, or undefined when unreadable. */
function readEnviron(pid) {
  let raw;
  try {
    raw = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return undefined;
  }
  const env = new Map();
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

/** One variable of a process's initial environment, or undefined. */
function envOf(pid, name) {
  const env = readEnviron(pid);
  return env ? env.get(name) : undefined;
}

/** Live processes (not this one) whose initial environment holds `name=value` exactly, as stats. */
function processesWithEnv(name, value) {
  const out = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    if (envOf(pid, name) !== value) continue;
    const s = readStat(pid);
    if (statAlive(s)) out.push(s);
  }
  return out;
}

/** Live members of a process group. */
function groupMembers(pgid) {
  return allPids().filter((pid) => {
    const s = readStat(pid);
    return statAlive(s) && s.pgid === pgid;
  });
}

/** The command line of a process ('' when gone). */
function commandLine(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** `<pid> <command line>`, the command cut to `max` characters, for messages. */
function describe(pid, max = 400) {
  return `${pid} ${commandLine(pid).slice(0, max)}`;
}

/** PID 0 and 1, this process and its ancestors: never signalled, whatever they carry. */
function protectedPids() {
  const out = new Set([0, 1, process.pid]);
  let pid = process.ppid;
  for (let i = 0; i < 1000 && pid > 1 && !out.has(pid); i++) {
    out.add(pid);
    pid = readStat(pid)?.ppid ?? 0;
  }
  return out;
}

/** Sends `sig` to a process or (negative) a group, unless it is protected; false when refused or gone. */
function signal(target, sig) {
  const protectedSet = protectedPids();
  if (target > 0 ? protectedSet.has(target) : -target <= 1 || -target === readStat(process.pid)?.pgid || protectedSet.has(-target)) {
    return false;
  }
  try {
    realKill(target, sig);
    return true;
  } catch {
    return false;
  }
}

/** Signals `pid` only while it is still the process that started at `startTicks`. */
function signalIfSame(pid, startTicks, sig = 'SIGKILL') {
  return isAlive(pid, startTicks) && signal(pid, sig);
}

/**
 * Ends a process group this harness started (its leader was our child): SIGTERM and SIGCONT (unless graceMs
 * is 0), up to graceMs for it to empty, then SIGKILL until it is empty or deadlineMs passes. Returns the
 * members still alive (normally none).
 */
async function killGroup(pgid, { graceMs = 3000, deadlineMs = 10000 } = {}) {
  if (!(pgid > 1) || protectedPids().has(pgid)) throw new Error(`refusing to kill process group ${pgid}`);
  const until = Date.now() + deadlineMs;
  if (graceMs > 0 && groupMembers(pgid).length) {
    signal(-pgid, 'SIGTERM');
    signal(-pgid, 'SIGCONT'); // a stopped member could not act on SIGTERM
    const graceEnd = Date.now() + graceMs;
    while (Date.now() < graceEnd && groupMembers(pgid).length) await sleep(50);
  }
  let left = groupMembers(pgid);
  while (left.length && Date.now() < until) {
    signal(-pgid, 'SIGKILL');
    await sleep(50);
    left = groupMembers(pgid);
  }
  return left;
}

/** Where the cgroup2 hierarchy is mounted (from /proc/self/mountinfo), or undefined. */
function cgroup2Mount() {
  try {
    for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const sep = line.indexOf(' - ');
      if (sep >= 0 && line.slice(sep + 3).startsWith('cgroup2 ')) return line.split(' ')[4];
    }
  } catch {}
  return undefined;
}

/**
 * The cgroup directory of an agent tree (`<cgroup2 mount>/agent-trees/tree-<id>`, made by the extension or the
 * CLI as root) that `pid` runs in, or undefined when it runs in no such cgroup.
 */
function agentTreeCgroupOf(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^0::(\/(?:.*\/)?agent-trees\/tree-[0-9a-f]+)$/m.exec(text);
  const mount = m && cgroup2Mount();
  return mount ? mount + m[1] : undefined;
}

/**
 * SIGKILLs every live process whose environment holds `name=value` exactly (each by pid + start time), again
 * until none is left (one may fork while we sweep) or deadlineMs passes. Then removes the agent trees' cgroups
 * they ran in, once empty: killed this way, a tree ends without its owner, which would have removed them. Returns
 * { killed, survivors, cgroupsRemoved }, the survivors described.
 */
async function killWithEnv(name, value, { deadlineMs = 10000 } = {}) {
  const killed = new Set();
  const cgroups = new Set();
  const until = Date.now() + deadlineMs;
  const keep = protectedPids();
  const targets = () => processesWithEnv(name, value).filter((s) => !keep.has(s.pid));
  let left = targets();
  while (left.length && Date.now() < until) {
    for (const s of left) {
      const cgroup = agentTreeCgroupOf(s.pid);
      if (signalIfSame(s.pid, s.startTicks)) {
        killed.add(s.pid);
        if (cgroup) cgroups.add(cgroup);
      }
    }
    await sleep(50);
    left = targets();
  }
  const cgroupsRemoved = [];
  for (const dir of cgroups) {
    // rmdir removes an empty cgroup only; one that still holds a process (EBUSY) is not ours to empty.
    for (let i = 0; i < 20; i++) {
      try {
        fs.rmdirSync(dir);
        cgroupsRemoved.push(dir);
        break;
      } catch (e) {
        if (e.code !== 'EBUSY') break;
        await sleep(50);
      }
    }
  }
  return { killed: [...killed], survivors: left.map((s) => describe(s.pid)), cgroupsRemoved };
}

module.exports = {
  realKill,
  readStat,
  isAlive,
  allPids,
  readEnviron,
  envOf,
  processesWithEnv,
  groupMembers,
  commandLine,
  describe,
  protectedPids,
  signal,
  signalIfSame,
  killGroup,
  agentTreeCgroupOf,
  killWithEnv,
};
