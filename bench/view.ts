/**
 * The view's refresh in isolation: the full-scan refresh (`fullScanRefresh`, a full scan
 * unless every tree has its own cgroup) side by side with the tracked refresh (`MemberTracker` + `refreshMembers`, what the view
 * runs now), each called once a second on a machine of ≥ 1000 processes running one 20-process agent and three
 * "terminals" of 5 processes each; then a 1000-member tree; then how long a `setsid -f` daemon that left the
 * parent chain takes to be shown, and how fast a kill ends it.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import { OwnedTree, processCore, TreeOwner } from '../src/proc';
import { LinuxProcessTable } from '../src/proc/platform/linuxProcessTable';
import { MemberListing, TreeQuery } from '../src/proc/tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../src/proc/tracking/memberTracker';
import { queryOf } from '../test/support/ownedTrees';
import { fullScanRefresh } from './fullScanRefresh';
import {
  log,
  msSince,
  nowNs,
  processCount,
  readStat,
  register,
  registerCgroup,
  registerGroup,
  rotated,
  selfCpuMs,
  sleep,
  spawnDetachedTree,
  summarize,
  Summary,
  tmpDir,
  treeCommand,
  treeMembers,
  waitReady,
} from './lib';

export type ViewContender = 'baseline' | 'tracked';

export interface ViewWindow {
  seconds: number;
  calls: number;
  fullScans: number;
  cpuMs: number;
  /** CPU % of one core over the window, idle time included. */
  pct: number;
  /** The refresh calls' own CPU, as % of one core over the window: without what the process does meanwhile. */
  callsPct: number;
  processes: number;
}

export interface ViewCase {
  id: string;
  title: string;
  contender: ViewContender;
  tier: 'cgroup' | 'group' | 'none';
  members: number;
  pct: Summary;
  /** The calls' own CPU per window (see ViewWindow.callsPct). */
  callsPct: Summary;
  windows: ViewWindow[];
  /** CPU ms of one refresh: walks (or cgroup listings) and full scans apart. */
  callCpuMs: { partial?: Summary; full?: Summary };
}

export interface EscapeRun {
  /** ms from the last full scan to the escape. */
  afterFullScanMs: number;
  /** ms from letting the daemon go until a refresh showed it; undefined when it never did (capped). */
  shownMs?: number;
  /** ms from the kill request until the daemon was dead. */
  killDeadMs: number;
  killReturnedMs: number;
  survivors: number;
}

export interface ViewResults {
  processes: number;
  windowSeconds: number;
  small: ViewCase[];
  big: ViewCase[];
  escapes: EscapeRun[];
  cgroupTier: boolean;
}

type Refresh = () => MemberListing;

/** Lifetime of the processes this phase starts: longer than the phase (about 10 minutes), bounded all the same. */
const VIEW_LIFETIME_S = 1500;

function contender(kind: ViewContender, queries: TreeQuery[]): Refresh {
  // A table of its own (its caches), the process's guard and cgroups, as the view's source has them.
  const table = new LinuxProcessTable();
  const core = processCore();
  if (kind === 'baseline') return () => fullScanRefresh(table, queries, core);
  const tracker = new MemberTracker(core);
  return () => {
    const r = refreshMembers(table, tracker.next(queries, {}, canTrack(table, queries, {}, core)), core);
    tracker.learn(r);
    return r;
  };
}

/**
 * Calls `refresh` once a second for `seconds`; CPU of this process over the whole window. The garbage of the
 * window before (another contender's) is collected first, where the run has `--expose-gc` (`npm run bench`).
 */
async function window(refresh: Refresh, seconds: number, perCall: { partial: number[]; full: number[] }): Promise<ViewWindow> {
  const processes = processCount();
  (globalThis as { gc?: () => void }).gc?.();
  await sleep(200);
  const cpu0 = selfCpuMs();
  const t0 = nowNs();
  let fullScans = 0;
  let callsCpuMs = 0;
  for (let s = 0; s < seconds; s++) {
    const c0 = selfCpuMs();
    const r = refresh();
    const call = selfCpuMs() - c0;
    callsCpuMs += call;
    (r.fullScan ? perCall.full : perCall.partial).push(call);
    if (r.fullScan) fullScans++;
    await sleep(Math.max(0, (s + 1) * 1000 - msSince(t0)));
  }
  const cpuMs = selfCpuMs() - cpu0;
  const wall = msSince(t0) / 1000;
  return { seconds: wall, calls: seconds, fullScans, cpuMs, pct: cpuMs / (wall * 10), callsPct: callsCpuMs / (wall * 10), processes };
}

async function measure(
  cases: { id: string; title: string; contender: ViewContender; tier: ViewCase['tier']; members: number; queries: TreeQuery[] }[],
  rounds: number,
  seconds: number,
): Promise<ViewCase[]> {
  const refreshers = cases.map((c) => contender(c.contender, c.queries));
  const windows = cases.map(() => [] as ViewWindow[]);
  const perCall = cases.map(() => ({ partial: [] as number[], full: [] as number[] }));
  refreshers.forEach((r) => r()); // command lines and environments read once, as in a view that has been open a while
  for (let round = 0; round < rounds; round++) {
    for (const i of rotated(
      cases.map((_, i) => i),
      round,
    )) {
      const w = await window(refreshers[i], seconds, perCall[i]);
      windows[i].push(w);
      log(`view: ${cases[i].id}: ${w.pct.toFixed(3)} % of a core (${w.fullScans} full scans, ${w.processes} processes)`);
    }
  }
  return cases.map(({ queries: _q, ...c }, i) => ({
    ...c,
    pct: summarize(windows[i].map((w) => w.pct)),
    callsPct: summarize(windows[i].map((w) => w.callsPct)),
    windows: windows[i].map((w) => ({
      ...w,
      cpuMs: Number(w.cpuMs.toFixed(1)),
      pct: Number(w.pct.toFixed(4)),
      callsPct: Number(w.callsPct.toFixed(4)),
      seconds: Number(w.seconds.toFixed(2)),
    })),
    callCpuMs: {
      partial: perCall[i].partial.length ? summarize(perCall[i].partial) : undefined,
      full: perCall[i].full.length ? summarize(perCall[i].full) : undefined,
    },
  }));
}

async function ownedTree(owner: TreeOwner, n: number): Promise<OwnedTree> {
  const tree = owner.spawn({ ...treeCommand(n, VIEW_LIFETIME_S), stdio: ['ignore', 'pipe', 'ignore'] });
  registerGroup(tree.child.pid);
  registerCgroup(tree.record.cgroup);
  await waitReady(tree.child);
  const members = treeMembers(tree.child.pid!);
  if (members.length !== n) throw new Error(`owned tree of ${n}: found ${members.length} members`);
  return tree;
}

/** A terminal's worth of processes: a shell and four sleeps. */
function terminalLike(): ChildProcess {
  const child = spawn(
    'sh',
    ['-c', `sleep ${VIEW_LIFETIME_S} & sleep ${VIEW_LIFETIME_S} & sleep ${VIEW_LIFETIME_S} & sleep ${VIEW_LIFETIME_S} & wait`],
    { detached: true, stdio: 'ignore' },
  );
  child.on('error', () => {});
  registerGroup(child.pid);
  return child;
}

/** A root that, on a line on its stdin, leaves a `setsid -f` daemon behind (re-parented away from the tree). */
function spawnEscaper(owner: TreeOwner): { tree: OwnedTree<ChildProcess>; pidfile: string } {
  const pidfile = path.join(tmpDir(), 'pids');
  const script = 'read go; setsid -f sh -c \'echo "$$" > "$0"; exec sleep 120\' "$0"; exec sleep 120';
  const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: ['pipe', 'ignore', 'ignore'] });
  registerGroup(tree.child.pid);
  return { tree, pidfile };
}

async function escapeRun(owner: TreeOwner, afterFullScanMs: number, capMs: number): Promise<EscapeRun> {
  const { tree, pidfile } = spawnEscaper(owner);
  const id = tree.record.id;
  const refresh = contender('tracked', [queryOf(tree)]);
  let lastFull = 0;
  const tick = () => {
    const r = refresh();
    if (r.fullScan) lastFull = Date.now();
    return r;
  };
  // Refresh once a second, as the view does, in the background of this run.
  let shownAt: number | undefined;
  let daemon = 0;
  let stop = false;
  const loop = (async () => {
    const t0 = nowNs();
    for (let s = 0; !stop; s++) {
      const r = tick();
      if (daemon && !shownAt && r.trees[0].members.some((m) => m.pid === daemon)) shownAt = Date.now();
      await sleep(Math.max(0, (s + 1) * 1000 - msSince(t0)));
    }
  })();
  try {
    while (lastFull === 0) await sleep(20);
    await sleep(Math.max(0, lastFull + afterFullScanMs - Date.now()));
    const goAt = Date.now();
    const actualAfter = goAt - lastFull;
    tree.child.stdin!.write('go\n');
    while (!daemon) {
      const text = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim() : '';
      if (text) {
        daemon = Number(text);
        register(daemon);
      } else await sleep(5);
    }
    while (!shownAt && Date.now() - goAt < capMs) await sleep(20);
    stop = true;
    await loop;
    const startKey = readStat(daemon)?.startKey;
    const k0 = nowNs();
    let returned = 0;
    const call = owner.kill(id, 0).then((r) => {
      returned = msSince(k0);
      return r;
    });
    let deadMs = 0;
    for (;;) {
      const s = readStat(daemon);
      if (!s || s.state === 'Z' || s.startKey !== startKey) {
        deadMs = msSince(k0);
        break;
      }
      if (msSince(k0) > 10_000) break;
      await sleep(1);
    }
    const report = await call;
    return {
      afterFullScanMs: actualAfter,
      shownMs: shownAt ? shownAt - goAt : undefined,
      killDeadMs: deadMs,
      killReturnedMs: returned,
      survivors: report.survivors,
    };
  } finally {
    stop = true;
    await loop;
    await owner.kill(id, 0);
  }
}

export async function runView(opts: {
  owners: { cgroup: TreeOwner; group: TreeOwner };
  rounds: number;
  seconds: number;
  bigSeconds: number;
  escapes: number[];
  /** Processes on the machine when the run started. */
  baseline?: number;
}): Promise<ViewResults> {
  const started: ChildProcess[] = [];
  const owned: { owner: TreeOwner; id: string }[] = [];
  let filler: ChildProcess | undefined;
  try {
    // One 20-process agent in each tier, three terminals of 5, and sleepers to make ≥ 1000 processes in all.
    const agentC = await ownedTree(opts.owners.cgroup, 20);
    owned.push({ owner: opts.owners.cgroup, id: agentC.record.id });
    const agentG = await ownedTree(opts.owners.group, 20);
    owned.push({ owner: opts.owners.group, id: agentG.record.id });
    for (let i = 0; i < 3; i++) started.push(terminalLike());
    // Counted against the fewest processes seen (the machine is shared: others' come and go): ≥ 1000 even if theirs leave.
    const fill = Math.max(0, 1010 - Math.min(processCount(), opts.baseline ?? Infinity));
    if (fill > 0) {
      log(`view: ${fill} sleepers to make ≥ 1000 processes`);
      filler = (await spawnDetachedTree(fill, VIEW_LIFETIME_S)).child;
    }
    const processes = processCount();
    const cgroupTier = agentC.tier === 'cgroup';
    log(`view: ${processes} processes; the 20-process agent at 1 Hz, ${opts.rounds} windows of ${opts.seconds} s per case`);
    const small = await measure(
      [
        {
          id: 'baseline-none',
          title: "today's refresh, no agent running (the view's empty state)",
          contender: 'baseline',
          tier: 'none',
          members: 0,
          queries: [],
        },
        { id: 'tracked-none', title: 'tracked refresh, no agent running', contender: 'tracked', tier: 'none', members: 0, queries: [] },
        {
          id: 'baseline-group',
          title: "today's refresh, 20-process agent, group tier (a full scan)",
          contender: 'baseline',
          tier: 'group',
          members: 20,
          queries: [queryOf(agentG)],
        },
        {
          id: 'tracked-group',
          title: 'tracked refresh, 20-process agent, group tier (children walk, full scan every 10 s)',
          contender: 'tracked',
          tier: 'group',
          members: 20,
          queries: [queryOf(agentG)],
        },
        ...(cgroupTier
          ? [
              {
                id: 'baseline-cgroup',
                title: "today's refresh, 20-process agent, cgroup tier (cgroup listing)",
                contender: 'baseline' as const,
                tier: 'cgroup' as const,
                members: 20,
                queries: [queryOf(agentC)],
              },
              {
                id: 'tracked-cgroup',
                title: 'tracked refresh, 20-process agent, cgroup tier (cgroup listing)',
                contender: 'tracked' as const,
                tier: 'cgroup' as const,
                members: 20,
                queries: [queryOf(agentC)],
              },
            ]
          : []),
      ],
      opts.rounds,
      opts.seconds,
    );
    for (const o of owned.splice(0)) await o.owner.kill(o.id, 0);

    // A 1000-member tree, each tier on its own (the sleepers go: the tree itself makes the machine large).
    if (filler) {
      try {
        process.kill(-filler.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      filler = undefined;
    }
    const big: ViewCase[] = [];
    for (const tier of cgroupTier ? (['cgroup', 'group'] as const) : (['group'] as const)) {
      const owner = tier === 'cgroup' ? opts.owners.cgroup : opts.owners.group;
      log(`view: a 1000-member tree, ${tier} tier`);
      const tree = await ownedTree(owner, 1000);
      owned.push({ owner, id: tree.record.id });
      big.push(
        ...(await measure(
          [
            {
              id: `baseline-${tier}-1000`,
              title: `today's refresh, 1000-member tree, ${tier} tier`,
              contender: 'baseline',
              tier,
              members: 1000,
              queries: [queryOf(tree)],
            },
            {
              id: `tracked-${tier}-1000`,
              title: `tracked refresh, 1000-member tree, ${tier} tier`,
              contender: 'tracked',
              tier,
              members: 1000,
              queries: [queryOf(tree)],
            },
          ],
          opts.rounds,
          opts.bigSeconds,
        )),
      );
      for (const o of owned.splice(0)) await o.owner.kill(o.id, 0);
    }

    // The daemon that leaves the parent chain (group tier: no cgroup holds it), escaping at several moments
    // after the last full scan; then a kill.
    const escapes: EscapeRun[] = [];
    for (const after of opts.escapes) {
      const run = await escapeRun(opts.owners.group, after, 30_000);
      escapes.push(run);
      log(
        `view: escaped daemon ${run.afterFullScanMs} ms after a full scan: shown after ${run.shownMs ?? '(never)'} ms; killed in ${run.killDeadMs.toFixed(1)} ms`,
      );
    }
    return { processes, windowSeconds: opts.seconds, small, big, escapes, cgroupTier };
  } finally {
    for (const o of owned) await o.owner.kill(o.id, 0).catch(() => undefined);
    for (const c of [...started, ...(filler ? [filler] : [])]) {
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}
