/**
 * One owned tree's cgroup: each tree gets a cgroup of its own, entered by its root before it forks, so no member
 * can leave it (setsid, double fork and `env -i` all stay inside). Killing writes `cgroup.kill` (Linux 5.14+), or
 * freezes the cgroup, signals every member and thaws it. Where tree cgroups live is probe.ts's.
 */
import * as fs from 'fs';
import * as path from 'path';
import { cgroupHierarchyOf, CgroupHierarchy, cgroupLines, CgroupLocation, CgroupProber } from './probe';
import { localTime, Logger, silentLogger } from '../platform/log';

const TREE_DIR_PREFIX = 'tree-';

/** Directory of one tree's cgroup. Tree ids are unique, so a path names one tree only. */
export function treeCgroupPath(tier: CgroupLocation, treeId: string): string {
  return tier.kind === 'directory' ? path.join(tier.base, TREE_DIR_PREFIX + treeId) : path.join(tier.base, `agent-trees-${treeId}.scope`);
}

/** A root's way into its tree's cgroup: a launcher shell step, or a command prefix. */
export interface CgroupEntry {
  dir: string;
  shellStep?: string;
  prefix?: string[];
}

/**
 * How a root enters the tree's cgroup before it can fork: on the directory tier the root's launcher shell writes
 * its own pid into the cgroup (`shellStep`, with the cgroup's directory as its `$0`) and then execs the command;
 * on the systemd tier `systemd-run` (`prefix`) starts the command in a new scope. Makes the directory.
 */
export function cgroupEntry(tier: CgroupLocation, treeId: string): CgroupEntry {
  const dir = treeCgroupPath(tier, treeId);
  if (tier.kind === 'systemd-scope') {
    return { dir, prefix: ['systemd-run', '--user', '--scope', '--quiet', '--collect', `--unit=agent-trees-${treeId}.scope`, '--'] };
  }
  fs.mkdirSync(dir);
  return { dir, shellStep: 'echo $$ > "$0/cgroup.procs" || exit 126' };
}

/**
 * Pids in a cgroup and in every cgroup below it (empty when it is gone): a member may make a child cgroup and
 * move into it, and it is still in the tree's.
 */
function cgroupProcs(cgroupDir: string): number[] {
  return cgroupsBelow(cgroupDir).flatMap((dir) => idsIn(dir, 'cgroup.procs'));
}

/** The pids (or thread ids) a cgroup's `file` lists; none when it is gone. */
function idsIn(dir: string, file: string): number[] {
  try {
    return fs.readFileSync(path.join(dir, file), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // gone meanwhile
  }
}

/** `dir` and every cgroup below it, parents first. */
function cgroupsBelow(dir: string): string[] {
  const out = [dir];
  for (let i = 0; i < out.length && out.length < 10_000; i++) {
    try {
      for (const e of fs.readdirSync(out[i], { withFileTypes: true })) if (e.isDirectory()) out.push(path.join(out[i], e.name));
    } catch {
      /* gone meanwhile, or not a directory */
    }
  }
  return out;
}

/**
 * Whether `dir` is a tree cgroup of ours: directly under our base with our name pattern, and created no later
 * than the tree was tracked (a directory made afresh under the same name is not the recorded one).
 */
export function isOurCgroup(location: CgroupLocation | undefined, dir: string, treeId: string, trackedAt: number): boolean {
  if (!location) return false;
  if (path.resolve(dir) !== treeCgroupPath(location, treeId)) return false;
  try {
    const st = fs.statSync(dir);
    return st.isDirectory() && fs.existsSync(path.join(dir, 'cgroup.procs')) && st.ctimeMs <= trackedAt + 2000;
  } catch {
    return false;
  }
}

/**
 * Whether a recorded tree's cgroup may be used: it is a directory of ours for that tree, not made afresh. Needs
 * only where our cgroups live, so it never starts the cgroup probe.
 */
export function cgroupVerified(
  tree: { id: string; cgroup: string | null; trackedAt: number },
  parts: { cgroupProber: Pick<CgroupProber, 'location'> },
): boolean {
  return tree.cgroup !== null && isOurCgroup(parts.cgroupProber.location(), tree.cgroup, tree.id, tree.trackedAt);
}

/**
 * Kills every member at once, those of child cgroups included: `cgroup.kill` (which kills the whole subtree),
 * or freeze (which freezes the subtree), SIGKILL each, thaw. Returns the pids it found.
 */
export function killCgroup(cgroupDir: string, signalOne: (pid: number) => void): number[] {
  const before = cgroupProcs(cgroupDir);
  if (before.length === 0) return before;
  try {
    fs.writeFileSync(path.join(cgroupDir, 'cgroup.kill'), '1');
    return before;
  } catch {
    /* no cgroup.kill: freeze instead */
  }
  const freeze = path.join(cgroupDir, 'cgroup.freeze');
  try {
    fs.writeFileSync(freeze, '1');
  } catch {
    /* cannot freeze: signal as they are */
  }
  const pids = cgroupProcs(cgroupDir);
  for (const pid of pids) signalOne(pid);
  try {
    fs.writeFileSync(freeze, '0');
  } catch {
    /* nothing to thaw */
  }
  return pids;
}

/**
 * Removes a tree cgroup once empty, with any child cgroups its members made (deepest first). Killed members can
 * linger as zombies until their new parent reaps them, and the kernel refuses the rmdir (EBUSY) until then: so
 * it is retried in the background for a while. Returns whether it is gone now.
 */
export function removeCgroup(cgroupDir: string, retryMs = 10_000): boolean {
  const attempt = (): 'gone' | 'busy' | 'failed' => {
    let result: 'gone' | 'busy' | 'failed' = 'gone';
    for (const dir of cgroupsBelow(cgroupDir).reverse()) {
      try {
        fs.rmdirSync(dir);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') result = code === 'EBUSY' ? 'busy' : 'failed';
      }
    }
    return result;
  };
  const first = attempt();
  if (first !== 'busy' || retryMs <= 0) return first === 'gone';
  const deadline = Date.now() + retryMs;
  const retry = () => {
    if (attempt() === 'busy' && Date.now() < deadline) setTimeout(retry, 100).unref();
  };
  setTimeout(retry, 100).unref();
  return false;
}

/** What a release did: how many it moved, and those it could not (the cgroup then stays while they run) and why. */
export interface Released {
  moved: number;
  left: number[];
  problem?: string;
}

/**
 * Lets a released tree's processes go (they keep running, unowned): moves each process in the tree's cgroup, and in
 * those below it, into the cgroup its owner runs in (where they would be had the tree no cgroup), then removes the
 * tree's cgroups. A fork during the move is caught by a next round. The cgroup is done with once the kernel says
 * nothing runs in it: a process whose main thread has ended stays listed there (the kernel cannot move a zombie
 * thread) after its other threads have moved.
 */
function releaseCgroup(cgroupDir: string, hierarchy: CgroupHierarchy | undefined): Released {
  if (!hierarchy) return { moved: 0, left: cgroupProcs(cgroupDir), problem: 'cannot tell which cgroup this process runs in' };
  let moved = 0;
  let last: { moved: number; failed?: string } = { moved: 0 };
  for (let round = 0; round < 10; round++) {
    last = moveRound(cgroupDir, hierarchy);
    moved += last.moved;
    if (!populated(cgroupDir, hierarchy)) {
      removeCgroup(cgroupDir);
      return { moved, left: [] };
    }
  }
  const problem = last.failed ?? (last.moved > 0 ? 'they kept forking into it' : 'this /proc does not show them in it');
  return { moved, left: cgroupProcs(cgroupDir), problem };
}

/**
 * A hierarchy's members, as moved: cgroup v2 moves whole processes; a v1 hierarchy moves threads (its
 * cgroup.procs lists a process by its main thread, which may have ended while another runs on in the cgroup).
 */
const memberFile = (hierarchy: CgroupHierarchy) => (hierarchy.controllers === '' ? 'cgroup.procs' : 'tasks');

/**
 * Moves what runs in the tree's cgroups into the owner's, each only while its /proc entry says it is in one of
 * them (a pid that ended and was reused is not moved).
 */
function moveRound(cgroupDir: string, hierarchy: CgroupHierarchy): { moved: number; failed?: string } {
  const file = memberFile(hierarchy);
  const target = path.join(hierarchy.ownDir, file);
  let moved = 0;
  let failed: string | undefined;
  for (const dir of cgroupsBelow(cgroupDir)) {
    const shown = path.posix.join(hierarchy.root, path.relative(hierarchy.mountPoint, dir));
    for (const id of idsIn(dir, file)) {
      if (!isIn(id, hierarchy.controllers, shown)) continue;
      try {
        fs.writeFileSync(target, String(id));
        moved++;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ESRCH') failed = `cannot move them into ${hierarchy.ownDir}: ${code ?? (e as Error).message}`;
      }
    }
  }
  return { moved, failed };
}

/** Whether process or thread `id` is in the cgroup shown as `shown` on the hierarchy of `controllers`. */
function isIn(id: number, controllers: string, shown: string): boolean {
  try {
    return cgroupLines(fs.readFileSync(`/proc/${id}/cgroup`, 'utf8')).some((l) => l.controllers === controllers && l.path === shown);
  } catch {
    return false; // gone, or not seen from here
  }
}

/** Whether anything runs in a cgroup or below it: cgroup v2 says so itself; on v1, any thread listed. */
function populated(cgroupDir: string, hierarchy: CgroupHierarchy): boolean {
  if (hierarchy.controllers === '') {
    try {
      return !/^populated 0$/m.test(fs.readFileSync(path.join(cgroupDir, 'cgroup.events'), 'utf8'));
    } catch {
      return false; // gone
    }
  }
  return cgroupsBelow(cgroupDir).some((dir) => idsIn(dir, 'tasks').length > 0);
}

/**
 * Removes our tree cgroups that no record names and that are empty and older than a minute (their owner was stopped
 * before it could remove them), saying so in `log`. Returns the directories removed.
 */
export function removeUnnamedEmptyCgroups(
  location: CgroupLocation,
  named: Set<string>,
  now = Date.now(),
  log: Logger = silentLogger,
): string[] {
  if (location.kind !== 'directory') return []; // systemd collects empty transient scopes itself
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(location.base);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(TREE_DIR_PREFIX)) continue;
    const dir = path.join(location.base, name);
    if (named.has(dir)) continue;
    let madeAt: number;
    try {
      madeAt = fs.statSync(dir).ctimeMs;
    } catch {
      continue;
    }
    if (now - madeAt < 60_000) continue; // may be a tree being spawned right now
    if (cgroupProcs(dir).length === 0 && removeCgroup(dir, 0)) {
      removed.push(dir);
      log.info(
        `removed ${dir}: the empty cgroup of agent tree ${name.slice(TREE_DIR_PREFIX.length)}, made ${localTime(madeAt)}; ` +
          'its processes had all ended, but what ran it (an editor window, or agent-trees run) was stopped before it could ' +
          'remove it, or let them go (--keep-descendants) and could not move them out of it',
      );
    }
  }
  return removed;
}

/** The cgroup operations a kill and a membership resolution use; tests pass their own. */
export interface CgroupControl {
  /** Pids in a tree's cgroup. */
  procs(cgroupDir: string): number[];
  /** Kills every member at once (see `killCgroup`); returns the pids it found. */
  kill(cgroupDir: string, signalOne: (pid: number) => void): number[];
  /** Removes an emptied tree cgroup (see `removeCgroup`). */
  remove(cgroupDir: string): boolean;
  /** Moves a released tree's processes out of its cgroup and removes it (see `releaseCgroup`). */
  release(cgroupDir: string): Released;
}

export const linuxCgroups: CgroupControl = {
  procs: cgroupProcs,
  kill: killCgroup,
  remove: (dir) => removeCgroup(dir),
  release: (dir) => {
    // A user's tree lives in a transient systemd scope, which systemd removes once its last process ends.
    if (dir.endsWith('.scope')) return { moved: 0, left: [] };
    let hierarchy: CgroupHierarchy | undefined;
    try {
      hierarchy = cgroupHierarchyOf(dir, fs.readFileSync('/proc/self/mountinfo', 'utf8'), fs.readFileSync('/proc/self/cgroup', 'utf8'));
    } catch {
      /* unreadable: said as "cannot tell" */
    }
    return releaseCgroup(dir, hierarchy);
  },
};
