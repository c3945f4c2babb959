/**
 * Snapshot benchmark: one process-table listing, ours (/proc, fresh table and warm table) vs ps-list vs one
 * spawned `ps` + parse (vs a C reference when gcc is there), at the machine's process count and with +200 and
 * +1000 extra processes (one owned tree of sleepers, spawned here and killed afterwards).
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFile, execFileSync } from 'child_process';
import { processCore, TreeOwner } from '../src/proc';
import { LinuxProcessTable } from '../src/proc/platform/linuxProcessTable';
import { TreeQuery } from '../src/proc/tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../src/proc/tracking/memberTracker';
import {
  childrenCpuMs,
  log,
  processCount,
  register,
  registerCgroup,
  registerGroup,
  REPO,
  rotated,
  selfCpuMs,
  sleep,
  summarize,
  Summary,
  tmpDir,
  treeCommand,
  treeMembers,
  waitReady,
  nowNs,
  msSince,
} from './lib';

export type SnapshotMethod = 'ours-cold' | 'ours-cold+cmd' | 'ours-warm' | 'ours-view' | 'node-floor' | 'ps-list' | 'ps' | 'c-ref';

export const METHOD_TITLES: Record<SnapshotMethod, string> = {
  'ours-cold': 'ours, first call on a fresh table: snapshot()',
  'ours-cold+cmd': 'ours, first call on a fresh table: snapshot() + commandLine() for every pid',
  'ours-warm': 'ours, repeat call on a warm table: snapshot() + commandLine() for every pid (cached)',
  'ours-view':
    "ours, the view's refresh: MemberTracker + refreshMembers() on a warm table (the owned trees: none at 'current', the extra tree above)",
  'node-floor': 'Node floor: readdir + open/read/close of every /proc/<pid>/stat, nothing else',
  'ps-list': 'ps-list 9 (two `ps` calls)',
  ps: 'spawn `ps -eo pid,ppid,pgid,sid,lstart,pcpu,rss,comm,args` + parse',
  'c-ref': 'C reference measured here: stat for every pid (no spawn time)',
};

export interface MethodResult {
  method: SnapshotMethod;
  title: string;
  ms: Summary;
  /** CPU ms per call (this process + reaped children), averaged over all calls. */
  cpuMsPerCall: number;
  /** CPU % of one core at one call per second. */
  cpuPctAt1Hz: number;
  processesSeen: number;
  samples: number[];
}

export interface LevelResult {
  label: string;
  extra: number;
  processes: number;
  rounds: number;
  methods: MethodResult[];
  /** C reference, stat + cmdline for every pid (measured here), when gcc is available. */
  cRefStatCmd?: Summary;
}

export interface SnapshotResults {
  levels: LevelResult[];
  /** ours-warm and ours-view called once a second for a while: CPU over the whole window, idle time included. */
  oneHz?: { method: SnapshotMethod; processes: number; seconds: number; calls: number; cpuMs: number; cpuPct: number }[];
  /** Tier of the extra tree the view's refresh lists. */
  viewTier?: string;
  cRefAvailable: boolean;
  cRefNote?: string;
}

interface Call {
  ms: number;
  cpuMs: number;
  count: number;
}

type PsListFn = (options?: { all?: boolean }) => Promise<{ pid: number }[]>;

function parsePs(
  out: string,
): Map<
  number,
  { pid: number; ppid: number; pgid: number; sid: number; start: number; cpu: number; rssKb: number; comm: string; args: string }
> {
  const lines = out.split('\n');
  const header = lines[0] ?? '';
  const commAt = header.indexOf('COMMAND');
  const argsAt = header.lastIndexOf('COMMAND');
  const re = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\w{3} \w{3}\s+\d+ [\d:]{8} \d{4})\s+([\d.]+)\s+(\d+)/;
  const out2 = new Map();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const m = re.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    out2.set(pid, {
      pid,
      ppid: Number(m[2]),
      pgid: Number(m[3]),
      sid: Number(m[4]),
      start: Date.parse(m[5]),
      cpu: Number(m[6]),
      rssKb: Number(m[7]),
      comm: line.slice(commAt, argsAt).trim(),
      args: line.slice(argsAt),
    });
  }
  return out2;
}

function psOnce(): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      'ps',
      ['-eo', 'pid,ppid,pgid,sid,lstart,pcpu,rss,comm,args'],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } },
      (error, stdout) => (error ? reject(error) : resolve(parsePs(stdout).size)),
    );
  });
}

/** Compiles the C reference into a temp folder; undefined (with the reason) when there is no C compiler. */
function buildCRef(): { bin?: string; note?: string } {
  const bin = path.join(tmpDir('agent-trees-bench-cref-'), 'cref');
  try {
    execFileSync('cc', ['-O2', '-o', bin, path.join(REPO, 'bench', 'cref.c')], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
    return { bin };
  } catch (e) {
    return { note: `no C reference measured here (cc failed: ${(e as Error).message.split('\n')[0]})` };
  }
}

function cRefOnce(bin: string): { stat: number; statCmd: number; count: number } {
  const out = execFileSync(bin, ['3'], { encoding: 'utf8' });
  const stat = [...out.matchAll(/^stat ([\d.]+) (\d+)$/gm)];
  const statCmd = [...out.matchAll(/^statcmd ([\d.]+) (\d+)$/gm)];
  const last = stat[stat.length - 1];
  return { stat: Number(last[1]), statCmd: Number(statCmd[statCmd.length - 1][1]), count: Number(last[2]) };
}

const floorBuf = Buffer.allocUnsafe(4096);

/** The least any synchronous Node scan must do: list /proc, open, read and close every stat file. */
function nodeFloor(): number {
  let n = 0;
  for (const name of fs.readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let fd: number;
    try {
      fd = fs.openSync(`/proc/${name}/stat`, 'r');
    } catch {
      continue;
    }
    try {
      if (fs.readSync(fd, floorBuf, 0, 4096, 0) > 0) n++;
    } catch {
      /* exited */
    } finally {
      fs.closeSync(fd);
    }
  }
  return n;
}

async function timed(fn: () => Promise<number> | number): Promise<Call> {
  const cpu0 = selfCpuMs();
  const child0 = childrenCpuMs();
  const t0 = nowNs();
  const count = await fn();
  const ms = msSince(t0);
  return { ms, cpuMs: selfCpuMs() - cpu0 + (childrenCpuMs() - child0), count };
}

/** Spawns an owned tree of `n` sleepers to raise the process count. */
async function filler(owner: TreeOwner, n: number) {
  const tree = owner.spawn({ ...treeCommand(n), stdio: ['ignore', 'pipe', 'ignore'] });
  registerGroup(tree.child.pid);
  registerCgroup(tree.record.cgroup);
  await waitReady(tree.child);
  const members = treeMembers(tree.child.pid!);
  for (const m of members.slice(0, 1)) register(m.pid);
  return { tree, members };
}

export async function runSnapshot(opts: {
  owner: TreeOwner;
  rounds: number[];
  oneHzSeconds: number;
  keepLast: boolean;
}): Promise<{ results: SnapshotResults; keptTree?: { id: string } }> {
  const { default: psList } = (await import('ps-list')) as { default: PsListFn };
  const cref = buildCRef();
  const methods: SnapshotMethod[] = ['ours-cold', 'ours-cold+cmd', 'ours-warm', 'ours-view', 'node-floor', 'ps-list', 'ps'];
  if (cref.bin) methods.push('c-ref');
  const levels: LevelResult[] = [];
  const extras = [0, 200, 1000];
  let kept: { id: string } | undefined;
  let viewTier: string | undefined;
  const oneHz: NonNullable<SnapshotResults['oneHz']> = [];

  for (let li = 0; li < extras.length; li++) {
    const extra = extras[li];
    let fill: Awaited<ReturnType<typeof filler>> | undefined;
    if (extra > 0) {
      log(`snapshot: spawning ${extra} extra processes`);
      fill = await filler(opts.owner, extra);
      viewTier = fill.tree.tier;
      await sleep(300);
    }
    const label = extra === 0 ? 'current' : `+${extra}`;
    const warm = new LinuxProcessTable();
    const warmCall = () => {
      const snap = warm.snapshot();
      for (const pid of snap.processes.keys()) snap.commandLine(pid);
      return snap.processes.size;
    };
    warmCall(); // fills the command-line cache
    // What the tree view asks for once a second (TreeMembersSource on the caller's thread): the owned trees.
    const viewTable = new LinuxProcessTable();
    const core = processCore();
    const tracker = new MemberTracker(core);
    const queries: TreeQuery[] = fill
      ? [{ ...fill.tree.record, continuouslyOwned: true, cgroupVerified: fill.tree.record.cgroup !== null }]
      : [];
    const viewCall = () => {
      const r = refreshMembers(viewTable, tracker.next(queries, {}, canTrack(viewTable, queries, {}, core)), core);
      tracker.learn(r);
      return r.trees.reduce((a, t) => a + t.members.length, 0);
    };
    viewCall();
    const cRefStatCmd: number[] = [];
    const run: Record<SnapshotMethod, () => Promise<Call>> = {
      'ours-cold': () => timed(() => new LinuxProcessTable().snapshot().processes.size),
      'ours-cold+cmd': () =>
        timed(() => {
          const snap = new LinuxProcessTable().snapshot();
          for (const pid of snap.processes.keys()) snap.commandLine(pid);
          return snap.processes.size;
        }),
      'ours-warm': () => timed(warmCall),
      'ours-view': () => timed(viewCall),
      'node-floor': () => timed(nodeFloor),
      'ps-list': () => timed(async () => (await psList()).length),
      ps: () => timed(psOnce),
      'c-ref': async () => {
        const r = cRefOnce(cref.bin!);
        cRefStatCmd.push(r.statCmd);
        return { ms: r.stat, cpuMs: NaN, count: r.count };
      },
    };
    // One unrecorded call of each, so lazy loading (ps-list's import, first spawn) is not measured.
    for (const m of methods) await run[m]();
    cRefStatCmd.length = 0;
    const calls = new Map<SnapshotMethod, Call[]>(methods.map((m) => [m, []]));
    const rounds = opts.rounds[li];
    const processes = processCount();
    log(`snapshot: ${label} (${processes} processes), ${rounds} rounds of ${methods.join(', ')}`);
    for (let r = 0; r < rounds; r++) {
      for (const m of rotated(methods, r)) calls.get(m)!.push(await run[m]());
    }
    const results: MethodResult[] = methods.map((m) => {
      const list = calls.get(m)!;
      const cpu = list.reduce((a, c) => a + c.cpuMs, 0) / list.length;
      return {
        method: m,
        title: METHOD_TITLES[m],
        ms: summarize(list.map((c) => c.ms)),
        cpuMsPerCall: cpu,
        cpuPctAt1Hz: cpu / 10,
        processesSeen: Math.round(summarize(list.map((c) => c.count)).median),
        samples: list.map((c) => Number(c.ms.toFixed(3))),
      };
    });
    levels.push({ label, extra, processes, rounds, methods: results, cRefStatCmd: cref.bin ? summarize(cRefStatCmd) : undefined });

    if (li === extras.length - 1 && opts.oneHzSeconds > 0) {
      // Steady state for real: one call per second, CPU over the whole window (idle time included).
      for (const [method, call] of [
        ['ours-warm', warmCall],
        ['ours-view', viewCall],
      ] as const) {
        log(`snapshot: ${method} at 1 Hz for ${opts.oneHzSeconds} s`);
        const cpu0 = selfCpuMs();
        const t0 = nowNs();
        let n = 0;
        for (let s = 0; s < opts.oneHzSeconds; s++) {
          call();
          n++;
          await sleep(Math.max(0, (s + 1) * 1000 - msSince(t0)));
        }
        const cpuMs = selfCpuMs() - cpu0;
        const seconds = msSince(t0) / 1000;
        oneHz.push({ method, processes: processCount(), seconds, calls: n, cpuMs, cpuPct: cpuMs / (seconds * 10) });
      }
    }

    if (fill) {
      if (opts.keepLast && li === extras.length - 1) kept = { id: fill.tree.record.id };
      else await opts.owner.kill(fill.tree.record.id, 0);
    }
  }
  return { results: { levels, oneHz, cRefAvailable: !!cref.bin, cRefNote: cref.note, viewTier }, keptTree: kept };
}
