/**
 * Reach benchmark: the nine escape scenarios of test/system/kill/escapeMatrix.test.ts (built by test/fixtures/tree.sh),
 * each killed by ours (cgroup tier, group tier), by tree-kill(root) and by a bare kill(-pgid); survivors counted.
 */
import * as path from 'path';
import { spawn } from 'child_process';
import { processCore, TreeOwner } from '../src/proc';
import {
  isAlive,
  log,
  processesWithEnv,
  readStat,
  realKill,
  register,
  registerCgroup,
  registerGroup,
  REPO,
  RUN_ID,
  sleep,
  tmpDir,
} from './lib';
import { TreeKillProcess } from './watcher';
import { SCENARIOS } from '../test/fixtures/scenarios';
import { fixturePids } from '../test/support/fixtures';

export type ReachMethod = 'ours-cgroup' | 'ours-group' | 'tree-kill' | 'group-kill';
export const REACH_TITLES: Record<ReachMethod, string> = {
  'ours-cgroup': 'ours, cgroup tier',
  'ours-group': 'ours, group tier',
  'tree-kill': 'tree-kill(root)',
  'group-kill': 'kill(-pgid)',
};

const FIXTURE = path.join(REPO, 'test', 'fixtures', 'tree.sh');
const REACH_VAR = 'AGENT_TREES_BENCH_REACH';

export interface ReachCell {
  /** Live members when the kill was requested (fixture processes plus everything carrying the tree's tag). */
  members: number;
  survivors: number;
  /** Roles of the survivors (fixture roles; 'forked' for tagged processes not in the pid file). */
  survivorRoles: string[];
  /** Why there is no figure, when there is none. */
  na?: string;
}

export interface ReachResults {
  methods: ReachMethod[];
  scenarios: { mode: string; title: string; cells: Record<ReachMethod, ReachCell> }[];
  cgroupNote?: string;
}

interface Fixture {
  roles: Map<number, string>;
  keys: Map<number, number>;
}

/** A fixture's processes by pid (test/support's fixturePids, registered with this run), or 'unsupported'. */
async function fixtureOf(pidfile: string): Promise<Fixture | 'unsupported'> {
  const fixture = await fixturePids(pidfile, { timeoutMs: 15_000, register });
  if (fixture.roles.has('unsupported')) return 'unsupported';
  const roles = new Map<number, string>();
  const keys = new Map<number, number>();
  for (const [role, pids] of fixture.roles) {
    for (const pid of pids) {
      roles.set(pid, role);
      const s = readStat(pid);
      if (s) keys.set(pid, s.startKey);
    }
  }
  return { roles, keys };
}

/** Live processes of one scenario run: fixture pids (same start key) and everything with its tag. */
function liveOf(fx: Fixture, tag: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const [pid, role] of fx.roles) if (isAlive(pid, fx.keys.get(pid))) out.set(pid, role);
  for (const s of processesWithEnv(REACH_VAR, tag)) if (!out.has(s.pid)) out.set(s.pid, fx.roles.get(s.pid) ?? 'forked');
  return out;
}

async function cleanup(fx: Fixture, tag: string, pgid: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const live = liveOf(fx, tag);
    if (live.size === 0) return;
    if (Date.now() > deadline) throw new Error(`reach ${tag}: could not clean up ${[...live.keys()].join(' ')}`);
    // The group first (only while its leader is our root or it has tagged members), then each by pid.
    const leader = readStat(pgid);
    if ((leader && fx.keys.get(pgid) === leader.startKey) || [...live.keys()].some((pid) => readStat(pid)?.pgid === pgid)) {
      try {
        realKill(-pgid, 'SIGKILL');
      } catch {
        /* empty */
      }
    }
    for (const pid of live.keys()) {
      try {
        realKill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(50);
  }
}

async function runCell(mode: string, method: ReachMethod, owners: { cgroup: TreeOwner; group: TreeOwner }): Promise<ReachCell> {
  const tag = `${RUN_ID}-${mode}-${method}`;
  const pidfile = path.join(tmpDir(), 'pids');
  const env = { [REACH_VAR]: tag, LIFETIME: '60' };
  let rootPid: number;
  let kill: () => Promise<unknown>;
  if (method === 'ours-cgroup' || method === 'ours-group') {
    const owner = method === 'ours-cgroup' ? owners.cgroup : owners.group;
    const cgroups = method === 'ours-cgroup' ? 'auto' : 'off';
    const tree = owner.spawn({ command: FIXTURE, args: [mode, pidfile], stdio: 'ignore', cgroups, env });
    rootPid = tree.child.pid!;
    registerGroup(rootPid);
    registerCgroup(tree.record.cgroup);
    kill = () => owner.kill(tree.record.id, 0);
  } else {
    const child = spawn(FIXTURE, [mode, pidfile], { detached: true, stdio: 'ignore', env: { ...process.env, ...env } });
    child.on('error', () => {});
    rootPid = child.pid!;
    registerGroup(rootPid);
    if (method === 'group-kill') {
      kill = async () => {
        try {
          realKill(-rootPid, 'SIGKILL');
        } catch {
          /* empty group */
        }
      };
    } else {
      // tree-kill in a process of its own, allowed to signal only this scenario's processes (tag or pid file).
      kill = async () => {
        const f = fx as Fixture;
        const runner = new TreeKillProcess({ rootPid, members: [...f.keys], tagVar: REACH_VAR, tag });
        await runner.ready;
        runner.go();
        const timer = setTimeout(() => runner.abort(), 20_000);
        await runner.result;
        clearTimeout(timer);
        await runner.exited;
      };
    }
  }
  const fx: Fixture | 'unsupported' = await fixtureOf(pidfile);
  if (fx === 'unsupported') {
    await cleanup({ roles: new Map([[rootPid, 'root']]), keys: new Map([[rootPid, readStat(rootPid)?.startKey ?? -1]]) }, tag, rootPid);
    return { members: 0, survivors: 0, survivorRoles: [], na: 'not supported here' };
  }
  await sleep(mode === 'forker' ? 300 : 200); // let the root of 'root-exits' exit, the forker fork a crowd
  const members = liveOf(fx, tag).size;
  await kill();
  // Survivors: whatever of the tree is still alive 1 s after the kill call returned.
  const deadline = Date.now() + 1000;
  let live = liveOf(fx, tag);
  while (live.size > 0 && Date.now() < deadline) {
    await sleep(50);
    live = liveOf(fx, tag);
  }
  const cell = { members, survivors: live.size, survivorRoles: [...live.values()].sort() };
  await cleanup(fx, tag, rootPid);
  return cell;
}

export async function runReach(owners: { cgroup: TreeOwner; group: TreeOwner }): Promise<ReachResults> {
  const probe = processCore().cgroupTier('auto');
  const methods: ReachMethod[] = ['ours-cgroup', 'ours-group', 'tree-kill', 'group-kill'];
  const scenarios: ReachResults['scenarios'] = [];
  for (const { mode, title } of SCENARIOS) {
    const cells = {} as Record<ReachMethod, ReachCell>;
    for (const method of methods) {
      if (method === 'ours-cgroup' && !probe.tier) {
        cells[method] = { members: 0, survivors: 0, survivorRoles: [], na: `no cgroup tier: ${probe.unavailable}` };
        continue;
      }
      cells[method] = await runCell(mode, method, owners);
    }
    log(`reach: ${title}: ${methods.map((m) => `${m} ${cells[m].na ? 'n/a' : `${cells[m].survivors}/${cells[m].members}`}`).join(', ')}`);
    scenarios.push({ mode, title, cells });
  }
  owners.cgroup.checkAll();
  owners.group.checkAll();
  return { methods, scenarios, cgroupNote: probe.tier ? undefined : probe.unavailable };
}
