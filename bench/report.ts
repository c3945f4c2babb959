/** Turns the results into the targets table, the markdown report and the ratio lines printed on the console. */
import { BudgetResults } from './budget';
import { ExtensionResults } from './extension';
import { KillMethod, KillMethodResult, KillResults } from './kill';
import { fmt, fmtSummary, summarize, Summary } from './lib';
import { REACH_TITLES, ReachResults } from './reach';
import { LevelResult, SnapshotMethod, SnapshotResults } from './snapshot';
import { SweepResults } from './sweep';
import { AttentionResults, attentionMarkdown, attentionRatioLines, attentionTargets } from './attention';
import { TerminalResults, ThroughputFigure } from './terminal';
import { ViewCase, ViewResults } from './view';
import { OthersBenchResults, OTHERS_VISIBLE_TARGET_PCT } from './otherExtensions';
import { ViewHostResults } from './viewHost';
import type { HostCondition, HostWindow } from './viewHostSuite';
import { RELOAD_HOST, WATCHDOG_TITLES, WatchdogResults } from './watchdog';
import { CrowdResults } from './watchdogCrowd';

/** From /work/shared/notes/perf-baseline.md: C, stat for every pid, ~1100 processes. */
export const C_REFERENCE_MS = 10.7;
export const VSIX_LIMIT_BYTES = 200 * 1024;

export interface Target {
  id: string;
  target: string;
  measured: string;
  met: boolean | null;
  /** Why it was missed (or why there is no figure). */
  reason?: string;
}

export interface AllResults {
  snapshot?: SnapshotResults;
  kill?: KillResults;
  reach?: ReachResults;
  sweep?: SweepResults;
  extension?: ExtensionResults;
  watchdog?: WatchdogResults;
  crowd?: CrowdResults;
  terminal?: TerminalResults;
  view?: ViewResults;
  viewHost?: ViewHostResults;
  otherExtensions?: OthersBenchResults;
  budget?: BudgetResults;
  attention?: AttentionResults;
}

/** Targets of the view's refresh: of one core, at 1 Hz, in isolation and in the real host (visible over hidden). */
export const VIEW_TARGET_PCT = 0.2;
export const HOST_TARGET_PCT = 0.5;
export const BIG_TREE_TARGET_PCT = 2;
export const ESCAPE_SHOWN_MS = 10_000;
export const KILL_FLOOR_RATIO = 1.2;
export const KILL_TREE_KILL_RATIO = 150;

/** a / b run by run (runs of one round alternate side by side): the spread of the ratio, not only its median. */
export function pairedRatios(a: KillMethodResult, b: KillMethodResult): Summary {
  const n = Math.min(a.runs.length, b.runs.length);
  return summarize(Array.from({ length: n }, (_, i) => a.runs[i].deadMs / b.runs[i].deadMs));
}

const viewCase = (r: AllResults, id: string): ViewCase | undefined =>
  [...(r.view?.small ?? []), ...(r.view?.big ?? [])].find((c) => c.id === id);

/** Per host run: every window of a condition together (CPU over their total time), and the windows' median and range. */
export function hostCondition(windows: HostWindow[], condition: HostCondition): { mean: number; median: Summary; seconds: number } {
  const w = windows.filter((x) => x.condition === condition);
  const cpu = w.reduce((a, x) => a + x.cpuMs, 0);
  const seconds = w.reduce((a, x) => a + x.seconds, 0);
  return { mean: seconds > 0 ? cpu / (seconds * 10) : NaN, median: summarize(w.map((x) => x.pct)), seconds };
}

/** Visible minus hidden, round by round (each round has one window of each condition). */
export function hostRoundDiffs(windows: HostWindow[], condition: HostCondition): Summary {
  const rounds = [...new Set(windows.map((w) => w.round))];
  const diffs = rounds.flatMap((r) => {
    const v = windows.find((w) => w.round === r && w.condition === condition);
    const h = windows.find((w) => w.round === r && w.condition === 'hidden');
    return v && h ? [v.pct - h.pct] : [];
  });
  return summarize(diffs);
}

const method = (level: LevelResult | undefined, m: SnapshotMethod) => level?.methods.find((x) => x.method === m);
const killOf = (k: KillResults | undefined, size: number, m: KillMethod) =>
  k?.sizes.find((s) => s.size === size)?.methods.find((x) => x.method === m);
const kb = (bytes: number | undefined) => (bytes === undefined ? '–' : `${(bytes / 1024).toFixed(1)} KB`);

export function ratioLines(r: AllResults): string[] {
  const lines: string[] = [];
  for (const level of r.snapshot?.levels ?? []) {
    const warm = method(level, 'ours-warm');
    const cold = method(level, 'ours-cold+cmd');
    const pl = method(level, 'ps-list');
    const ps = method(level, 'ps');
    const c = method(level, 'c-ref');
    const nf = method(level, 'node-floor');
    if (!warm) continue;
    const at = `snapshot ${level.label} (${level.processes} processes)`;
    if (pl)
      lines.push(
        `${at}: ps-list / ours-warm = ${fmt(pl.ms.median / warm.ms.median, 2)}x; ps-list / ours-cold+cmd = ${fmt(pl.ms.median / (cold?.ms.median ?? NaN), 2)}x`,
      );
    if (ps)
      lines.push(
        `${at}: ps / ours-warm = ${fmt(ps.ms.median / warm.ms.median, 2)}x; ps / ours-cold+cmd = ${fmt(ps.ms.median / (cold?.ms.median ?? NaN), 2)}x`,
      );
    lines.push(
      `${at}: ours-warm / C reference ${C_REFERENCE_MS} ms (notes) = ${fmt(warm.ms.median / C_REFERENCE_MS, 2)}x` +
        (c ? `; ours-warm / C measured here (${fmt(c.ms.median, 2)} ms) = ${fmt(warm.ms.median / c.ms.median, 2)}x` : '') +
        (nf ? `; ours-warm / Node floor (${fmt(nf.ms.median, 2)} ms) = ${fmt(warm.ms.median / nf.ms.median, 2)}x` : ''),
    );
  }
  for (const size of r.kill?.sizes ?? []) {
    const ours = killOf(r.kill, size.size, 'ours');
    const floor = killOf(r.kill, size.size, 'floor');
    const tk = killOf(r.kill, size.size, 'tree-kill');
    const group = killOf(r.kill, size.size, 'ours-group');
    const direct = killOf(r.kill, size.size, 'ours-direct');
    if (!ours) continue;
    const at = `kill ${size.size}`;
    if (floor)
      lines.push(
        `${at}: ours / floor = ${fmt(ours.dead.median / floor.dead.median, 2)}x` +
          (group ? `; ours-group / floor = ${fmt(group.dead.median / floor.dead.median, 2)}x` : '') +
          (direct ? `; ours-direct / floor = ${fmt(direct.dead.median / floor.dead.median, 2)}x` : ''),
      );
    if (tk)
      lines.push(
        `${at}: tree-kill / ours = ${tk.capped ? '>= ' : ''}${fmt(tk.dead.median / ours.dead.median, 1)}x${tk.capped ? ` (tree-kill capped at ${r.kill!.capMs / 1000} s)` : ''}`,
      );
    if (floor)
      lines.push(`${at}: ours / floor run by run = ${fmtSummary(pairedRatios(ours, floor), 2)}x over ${pairedRatios(ours, floor).n} runs`);
    if (tk)
      lines.push(
        `${at}: tree-kill / ours run by run = ${tk.capped ? '>= ' : ''}${fmtSummary(pairedRatios(tk, ours), 0)}x over ${pairedRatios(tk, ours).n} runs`,
      );
  }
  const t = r.terminal;
  const bare = t?.node.throughput.find((x) => x.contender === 'bare-pty');
  if (t && bare) {
    for (const x of [...t.node.throughput, ...(t.host?.throughput ?? [])]) {
      if (x !== bare)
        lines.push(
          `terminal throughput: ${x.contender} / bare pty = ${fmt(x.mbps.median / bare.mbps.median, 2)}x (${fmt(x.mbps.median)} vs ${fmt(bare.mbps.median)} MB/s)`,
        );
    }
  }
  if (r.attention) lines.push(...attentionRatioLines(r.attention));
  return lines;
}

export function targets(r: AllResults): Target[] {
  const out: Target[] = [];
  const top = r.snapshot?.levels[r.snapshot.levels.length - 1];
  const warm = method(top, 'ours-warm');
  const cold = method(top, 'ours-cold+cmd');
  const pl = method(top, 'ps-list');
  const c = method(top, 'c-ref');
  const nf = method(top, 'node-floor');
  if (warm && pl) {
    const ratio = pl.ms.median / warm.ms.median;
    out.push({
      id: 'snapshot-vs-ps-list',
      target: `snapshot of ~1000 processes ≥ 5x faster than ps-list`,
      measured: `${top!.processes} processes: ours (warm) ${fmt(warm.ms.median)} ms vs ps-list ${fmt(pl.ms.median)} ms = ${fmt(ratio, 1)}x (first call on a fresh table, with command lines: ${fmt(pl.ms.median / cold!.ms.median, 1)}x)`,
      met: ratio >= 5,
      reason: ratio >= 5 ? undefined : `ours (warm) takes ${fmt(warm.ms.median)} ms`,
    });
    const vsC = warm.ms.median / C_REFERENCE_MS;
    const here = c
      ? ` C measured here side by side: ${fmt(c.ms.median, 2)} ms, ours / C here = ${fmt(warm.ms.median / c.ms.median, 2)}x.`
      : '';
    out.push({
      id: 'snapshot-vs-c',
      target: `snapshot within 1.6x of the C reference (${C_REFERENCE_MS} ms, notes)`,
      measured: `ours (warm) ${fmt(warm.ms.median)} ms = ${fmt(vsC, 2)}x of ${C_REFERENCE_MS} ms.${here}`,
      met: vsC <= 1.6,
      reason:
        vsC <= 1.6
          ? undefined
          : `${fmt(warm.ms.median)} ms > ${fmt(1.6 * C_REFERENCE_MS)} ms.` +
            (c
              ? ` Against C on this machine in the same run the ratio is ${fmt(warm.ms.median / c.ms.median, 2)}x, so ${warm.ms.median / c.ms.median <= 1.6 ? "the gap is the machine (this run is slower than the notes' machine), not the code" : 'part of the gap is in the code'}.`
              : '') +
            (nf
              ? ` The Node floor (open/read/close of every stat, nothing else) takes ${fmt(nf.ms.median)} ms${c ? ` = ${fmt(nf.ms.median / c.ms.median, 2)}x of C` : ''}: ours spends ${fmt(warm.ms.median / nf.ms.median, 2)}x of that floor.`
              : ''),
    });
  }
  // The view at 1 Hz: as planned (a full snapshot + every command line), and the view's actual refresh.
  for (const [m, id, what] of [
    ['ours-warm', 'view-cpu-full-snapshot', 'a full snapshot + commandLine() of every pid (the steady state as planned)'],
    [
      'ours-view',
      'view-cpu-refresh',
      `the view's actual refresh (tracked) of the owned trees (${r.snapshot?.viewTier ?? '?'} tier, ${fmt(method(top, 'ours-view')?.processesSeen, 0)} members)`,
    ],
  ] as const) {
    const x = method(top, m);
    if (!x) continue;
    const hz = r.snapshot?.oneHz?.find((h) => h.method === m);
    const pct = hz ? hz.cpuPct : x.cpuPctAt1Hz;
    out.push({
      id,
      target: `the view under 2 % of one core at 1 Hz: ${what}`,
      measured:
        (hz ? `${fmt(hz.cpuPct, 2)} % measured over ${fmt(hz.seconds, 0)} s at 1 Hz (${hz.processes} processes); ` : '') +
        `${fmt(x.cpuPctAt1Hz, 2)} % from CPU per call (${fmt(x.cpuMsPerCall)} ms)`,
      met: pct < 2,
      reason:
        pct < 2
          ? undefined
          : `${fmt(x.cpuMsPerCall)} CPU-ms per refresh at ${top!.processes} processes` +
            (nf && m === 'ours-warm'
              ? `; reading every /proc/<pid>/stat alone (Node floor) costs ${fmt(nf.cpuMsPerCall)} CPU-ms = ${fmt(nf.cpuPctAt1Hz, 2)} %`
              : ''),
    });
  }
  const big = r.kill?.sizes.find((s) => s.size === 1001);
  const ours = killOf(r.kill, 1001, 'ours');
  const floor = killOf(r.kill, 1001, 'floor');
  const tk = killOf(r.kill, 1001, 'tree-kill');
  if (big && ours && floor) {
    const ratio = ours.dead.median / floor.dead.median;
    const spread = pairedRatios(ours, floor);
    out.push({
      id: 'kill-vs-floor',
      target: `1001-process tree dead within ${KILL_FLOOR_RATIO}x of a bare kill(-pgid)`,
      measured: `ours ${fmt(ours.dead.median)} ms vs floor ${fmt(floor.dead.median)} ms = ${fmt(ratio, 2)}x (medians); run by run ${fmtSummary(spread, 2)}x over ${spread.n} runs`,
      met: ratio <= KILL_FLOOR_RATIO,
      reason:
        ratio <= KILL_FLOOR_RATIO
          ? undefined
          : `ours is ${fmt(ours.dead.median - floor.dead.median)} ms slower (median); CPU ${fmt(ours.cpuMs.median)} ms vs ${fmt(floor.cpuMs.median)} ms`,
    });
  }
  if (big && ours && tk) {
    const ratio = tk.dead.median / ours.dead.median;
    const spread = pairedRatios(tk, ours);
    const ge = tk.capped ? '≥ ' : '';
    out.push({
      id: 'kill-vs-tree-kill',
      target: `1001-process tree ≥ ${KILL_TREE_KILL_RATIO}x faster than tree-kill`,
      measured: `tree-kill ${ge}${fmt(tk.dead.median)} ms (${ge}${fmt(tk.cpuMs.median / 1000, 1)} CPU-s) vs ours ${fmt(ours.dead.median)} ms = ${ge}${fmt(ratio, 0)}x (medians); run by run ${ge}${fmtSummary(spread, 0)}x over ${spread.n} runs`,
      met: ratio >= KILL_TREE_KILL_RATIO ? true : tk.capped ? null : false,
      reason:
        ratio >= KILL_TREE_KILL_RATIO
          ? undefined
          : (tk.capped
              ? `tree-kill was capped before the ratio reached ${KILL_TREE_KILL_RATIO}x: undecided`
              : `tree-kill finished in ${fmt(tk.dead.median)} ms`) +
            (floor
              ? `; ours is ${fmt(ours.dead.median / floor.dead.median, 2)}x the floor, and tree-kill / floor = ${ge}${fmt(tk.dead.median / floor.dead.median, 0)}x` +
                (tk.dead.median / floor.dead.median < KILL_TREE_KILL_RATIO
                  ? ` (on this machine even the bare group kill is not ${KILL_TREE_KILL_RATIO}x faster than tree-kill: the kernel's exit work for 1001 processes takes ${fmt(floor.dead.median)} ms here)`
                  : '')
              : ''),
    });
  }
  out.push(...viewTargets(r));
  if (r.sweep) {
    const s = r.sweep;
    const met = s.gone.median < 50;
    out.push({
      id: 'sweep',
      target: 'sweep of 100 records under 50 ms',
      measured:
        `${fmt(s.gone.median)} ms (${s.records} dead owners, trees gone, ${s.processes} processes)` +
        (s.mixed ? `; with ${s.mixed.liveTrees} live trees to kill: ${fmt(s.mixed.median)} ms` : ''),
      met,
      reason: met
        ? undefined
        : s.profile.snapshots >= s.records / 2
          ? `sweepOrphans takes a full process snapshot per tree: ${s.profile.snapshots} snapshots took ${fmt(s.profile.snapshotMs)} of ${fmt(s.profile.sweepMs)} ms` +
            ` (one snapshot ${fmt(s.profile.oneSnapshotMs)} ms); one snapshot shared by all trees resolves the same 100 trees in ${fmt(s.sharedSnapshotMs.median)} ms`
          : `${s.profile.snapshots} full snapshot(s) took ${fmt(s.profile.snapshotMs)} of ${fmt(s.profile.sweepMs)} ms at ${s.processes} processes; ` +
            `the other ${fmt(s.profile.sweepMs - s.profile.snapshotMs)} ms go to the 100 record files (read, claim by rename, read again, release) and the per-tree checks`,
    });
  }
  if (r.extension) {
    const a = r.extension.activation;
    out.push({
      id: 'activation',
      target: 'activation (real host) under 50 ms',
      measured: a.ms === undefined ? a.source : `${fmt(a.ms)} ms (${a.source})`,
      met: a.ms === undefined ? null : a.ms < 50,
      reason:
        a.ms === undefined
          ? 'not measured: the real-host measurement (scripts/host/) is not wired in yet'
          : a.ms < 50
            ? undefined
            : `${fmt(a.ms)} ms`,
    });
    const v = r.extension.vsix;
    if (v) {
      const fast = v.files.filter((f) => /fastlist/.test(f.name)).reduce((a, f) => a + f.bytes, 0);
      out.push({
        id: 'vsix',
        target: '.vsix under 200 KB',
        measured:
          `${kb(v.bytes)} (extension.js ${kb(r.extension.bundle?.extensionJs)}), built with ${v.via}` +
          (r.extension.vsixError ? `; \`npm run package\` fails: ${r.extension.vsixError.split(' | ')[0]}` : ''),
        met: v.bytes < VSIX_LIMIT_BYTES,
        reason:
          v.bytes < VSIX_LIMIT_BYTES
            ? undefined
            : fast > 0
              ? `ps-list's Windows executables (dist/vendor/fastlist-*.exe) are ${kb(fast)} of it compressed; without them it would be ${kb(v.bytes - fast)}`
              : `largest files: ${v.files
                  .slice(0, 3)
                  .map((f) => `${f.name} ${kb(f.bytes)}`)
                  .join(', ')}`,
      });
    } else {
      out.push({
        id: 'vsix',
        target: '.vsix under 200 KB',
        measured: 'not built',
        met: null,
        reason: r.extension.vsixError ?? 'npm run package failed',
      });
    }
  }
  if (r.watchdog) out.push(...watchdogTargets(r.watchdog));
  if (r.crowd) out.push(crowdTarget(r.crowd));
  if (r.terminal) out.push(...terminalTargets(r.terminal));
  out.push(...othersTargets(r.otherExtensions));
  if (r.budget) out.push(...budgetTargets(r.budget));
  if (r.attention) out.push(...attentionTargets(r.attention));
  return out;
}

/** The budget watch's cost, and a fork loop held under twice its limit where the kernel holds pids.max. */
export const BUDGET_TARGET_PCT = 0.1;

function budgetTargets(b: BudgetResults): Target[] {
  const out: Target[] = [];
  const of = (tier: string, c: string) => b.cost.find((x) => x.tier === tier && x.case === c);
  const added = (['group', 'cgroup'] as const).flatMap((tier) => {
    const far = of(tier, 'far from its limits');
    const none = of(tier, 'no limits');
    const paired = b.added.find((a) => a.tier === tier)?.pct;
    return far && none && paired ? [{ tier, far, none, paired, pct: paired.median }] : [];
  });
  if (added.length) {
    const worst = Math.max(...added.map((a) => a.pct));
    out.push({
      id: 'budget-cost',
      target: `the budget watch ≤ ${BUDGET_TARGET_PCT} % of a core for a 20-process tree at 1 Hz, and 0 for trees without limits`,
      measured:
        added
          .map(
            (a) =>
              `${a.tier} tier +${fmt(a.pct, 3)} % (round by round: ${fmtSummary(a.paired, 3)}), of which in its looks ${fmt(a.far.inLooksPct.median, 3)} % (${fmt(a.far.pct.median, 3)} % with limits, ${a.far.looksPerS.toFixed(1)} looks/s; ${fmt(a.none.pct.median, 3)} % without)`,
          )
          .join('; ') + `; one look ${fmt(b.lookCpuMs.median, 3)} ms; without limits the watch runs no timer and reads nothing`,
      met: worst <= BUDGET_TARGET_PCT,
    });
  }
  const kernel = b.forkLoops.find((f) => f.path === 'kernel pids.max');
  out.push({
    id: 'budget-fork-loop',
    target: 'a fork loop under maxProcesses 50 never has more than 100 alive, and nothing is left after',
    measured: b.forkLoops.map((f) => `${f.path}, ${f.loop}: at most ${f.peak.max} alive`).join('; '),
    met: kernel ? kernel.peak.max <= 2 * kernel.limit && b.forkLoops.every((f) => f.survivors === 0) : null,
    reason: kernel
      ? kernel.peak.max <= 2 * kernel.limit
        ? undefined
        : `the kernel's line let ${kernel.peak.max} through`
      : 'the kernel holds no process line here',
  });
  return out;
}

function crowdTarget(c: CrowdResults): Target {
  const worst = Math.max(...c.rows.map((row) => Math.max(row.deadMs.max, row.recordMs.max)));
  const failures = c.rows.reduce((n, row) => n + row.failures, 0);
  const met = failures === 0 && worst <= 2500;
  return {
    id: 'watchdog-crowd',
    target: `within about 2 s of an owner's SIGKILL its ${c.trees} SIGTERM-ignoring trees are dead and its record removed, with ${c.idle} idle processes on the machine`,
    measured:
      c.rows
        .map(
          (row) =>
            `${row.tier} tier: dead ${fmtSummary(row.deadMs, 0)} ms, record ${fmtSummary(row.recordMs, 0)} ms (${row.deadMs.n} runs)`,
        )
        .join('; ') +
      ` (${c.processes} processes; one scan of them ${fmt(c.scanMs, 0)} ms)` +
      (failures ? `; ${failures} run(s) not clean after 60 s` : ''),
    met,
    reason: met ? undefined : `worst ${fmt(worst, 0)} ms`,
  };
}

function watchdogTargets(w: WatchdogResults): Target[] {
  const out: Target[] = [];
  const ours = w.idle.find((r) => r.mode === 'sh-pipe');
  const none = w.idle.find((r) => r.mode === 'none');
  if (ours && none) {
    const added = ours.cpuPct.median - none.cpuPct.median;
    out.push({
      id: 'watchdog-idle',
      target: 'watchdog idle ≤ 0.1 % of a core per window, RSS reported',
      measured:
        `watchdog itself ${fmt(ours.watcherCpuPct.median, 4)} % (owner + watchdog ${fmt(ours.cpuPct.median, 4)} % vs owner alone ${fmt(none.cpuPct.median, 4)} %: ${fmt(added, 4)} % more); ` +
        `RSS ${ours.rssKb} kB, PSS ${ours.pssKb} kB`,
      met: ours.watcherCpuPct.median <= 0.1,
    });
  }
  if (w.death.length) {
    const worst = Math.max(...w.death.map((d) => Math.max(d.deadMs.max, d.recordMs.max)));
    const failures = w.death.reduce((n, d) => n + d.failures, 0);
    out.push({
      id: 'watchdog-death',
      target: "within 2 s of an owner's SIGKILL its trees are dead and its record removed",
      measured:
        w.death
          .map(
            (d) => `tree that ${d.tree}: dead ${fmtSummary(d.deadMs, 0)} ms, record ${fmtSummary(d.recordMs, 0)} ms (${d.deadMs.n} runs)`,
          )
          .join('; ') + (failures ? `; ${failures} run(s) not clean after 10 s` : ''),
      met: failures === 0 && worst <= 2000,
      reason: failures === 0 && worst <= 2000 ? undefined : `worst ${fmt(worst, 0)} ms`,
    });
  }
  if (w.reload) {
    const reloads = w.reload.runs.filter((r) => r.how === 'reload');
    const within = reloads.filter((r) => r.recordMs <= 5000 && r.processesMs <= 5000).length;
    const crashes = w.reload.runs.filter((r) => r.how === 'renderer-crash');
    out.push({
      id: 'reload',
      target: "within 5 s of a reload the old window's trees are gone and its record removed, 20 runs of 20",
      measured:
        reloads.length === 0
          ? `not measured: ${w.reload.error ?? 'no run'}`
          : `${within} of ${reloads.length} reloads; worst ${fmt(Math.max(...reloads.map((r) => Math.max(r.recordMs, r.processesMs))), 0)} ms` +
            (crashes.length
              ? `; after a renderer crash (old host lingers, taken over): ${crashes.map((r) => `${fmt(Math.max(r.recordMs, r.processesMs), 0)} ms`).join(', ')}`
              : ''),
      met: reloads.length === 0 ? null : within === reloads.length && reloads.length >= 20,
      reason:
        reloads.length === 0
          ? w.reload.error
          : within === reloads.length
            ? reloads.length < 20
              ? `only ${reloads.length} runs`
              : undefined
            : `${reloads.length - within} reload(s) over 5 s`,
    });
  }
  return out;
}

function terminalTargets(t: TerminalResults): Target[] {
  const out: Target[] = [];
  const of = (list: ThroughputFigure[] | undefined, c: string) => list?.find((x) => x.contender === c);
  const bare = of(t.node.throughput, 'bare-pty');
  const ours = of(t.node.throughput, 'ours-pty');
  const host = of(t.host?.throughput, 'agent-terminal');
  const hostBare = of(t.host?.throughput, 'bare-pty-in-host');
  const vsc = of(t.host?.throughput, 'vscode-terminal');
  const old = of(t.host?.throughput, 'old-pipe-path');
  if (bare && ours) {
    const ratio = bare.mbps.median / ours.mbps.median;
    out.push({
      id: 'terminal-transport',
      target: 'agent terminal throughput within 1.5x of a bare pseudo-terminal: the transport (plain Node)',
      measured: `ours ${fmt(ours.mbps.median)} MB/s vs bare ${fmt(bare.mbps.median)} MB/s = ${fmt(ratio, 2)}x slower`,
      met: ratio <= 1.5,
      reason:
        ratio <= 1.5
          ? undefined
          : `ours reads the same pseudo-terminal, decodes it and keeps the run's output; ${fmt(ours.ms.median)} vs ${fmt(bare.ms.median)} ms for 50 MB`,
    });
  }
  if (bare && host) {
    const ratio = bare.mbps.median / host.mbps.median;
    out.push({
      id: 'terminal-throughput',
      target: "agent terminal throughput within 1.5x of a bare pseudo-terminal: end to end, until the workbench's terminal has parsed it",
      measured:
        `agent terminal ${fmt(host.mbps.median)} MB/s vs bare pty ${fmt(bare.mbps.median)} MB/s (plain Node) = ${fmt(ratio, 1)}x slower` +
        (hostBare ? `; a bare pty read in the extension host ${fmt(hostBare.mbps.median)} MB/s` : '') +
        (vsc ? `; VS Code's own terminal, same program: ${fmt(vsc.mbps.median)} MB/s` : ''),
      met: ratio <= 1.5,
      reason:
        ratio <= 1.5
          ? undefined
          : `the workbench's terminal is the bottleneck: it took ${fmt(host.answerMs ?? NaN, 0)} ms on average to answer a status query behind the output in flight` +
            (vsc
              ? `; VS Code's own terminal (its pty host and flow control) reaches ${fmt(vsc.mbps.median)} MB/s here, ${fmt(host.mbps.median / vsc.mbps.median, 1)}x less than ours`
              : '') +
            (old
              ? `; the old pipe path, with no flow control, got ${fmt(old.mbps.median)} MB/s by queueing +${fmt(old.heapGrowthMb ?? NaN, 0)} MB in the extension host`
              : ''),
    });
  }
  if (host && old) {
    const bound = 32;
    const met = (host.heapGrowthMb ?? Infinity) <= bound;
    out.push({
      id: 'terminal-memory',
      target: `the extension host's memory stays bounded while the agent writes faster than the terminal parses (retained growth ≤ ${bound} MB)`,
      measured: `agent terminal +${fmt(host.heapGrowthMb ?? NaN)} MB retained (RSS +${fmt(host.rssGrowthMb ?? NaN)} MB, ${fmt(host.pauses ?? NaN, 0)} pauses) vs the old pipe path +${fmt(old.heapGrowthMb ?? NaN)} MB (RSS +${fmt(old.rssGrowthMb ?? NaN)} MB), 50 MB each`,
      met,
      reason: met ? undefined : `+${fmt(host.heapGrowthMb ?? NaN)} MB retained`,
    });
  }
  const c = t.host?.cycles;
  if (c) {
    const growth = c.heapAfterMb - c.heapBeforeMb;
    const met = growth < 5 && c.terminalsOpen <= c.keptRuns + 1;
    out.push({
      id: 'terminal-cycles',
      target: `${c.cycles} launch/kill cycles: heap growth under 5 MB, no more terminals open than kept runs`,
      measured:
        `heap ${fmt(c.heapBeforeMb)} → ${fmt(c.heapAfterMb)} MB (${growth >= 0 ? '+' : ''}${fmt(growth)} MB${c.gc ? ', after full GCs' : ''}), RSS ${fmt(c.rssBeforeMb)} → ${fmt(c.rssAfterMb)} MB; ` +
        `${c.terminalsOpen} agent terminals open for ${c.keptRuns} kept runs; ${c.seconds} s`,
      met,
      reason: met ? undefined : `heap +${fmt(growth)} MB, ${c.terminalsOpen} terminals`,
    });
  }
  if (t.hostError)
    out.push({
      id: 'terminal-host',
      target: 'agent terminal figures in the real host',
      measured: 'not measured',
      met: null,
      reason: t.hostError,
    });
  return out;
}

function viewTargets(r: AllResults): Target[] {
  const out: Target[] = [];
  const pct = (c: ViewCase | undefined) => (c ? `${fmt(c.pct.median, 3)} % (${fmt(c.pct.min, 3)}–${fmt(c.pct.max, 3)})` : '–');
  if (r.view) {
    const tracked = ['tracked-group', 'tracked-cgroup'].map((id) => viewCase(r, id)).filter((c): c is ViewCase => !!c);
    // The refresh's own CPU (its calls); the window's, which also holds what the process does meanwhile (its tree
    // owners watching their trees, timers, garbage collection), alongside. Runs before the calls' own had none.
    const own = (c: ViewCase) => c.callsPct?.median ?? c.pct.median;
    const calls = (c: ViewCase | undefined) =>
      c?.callsPct ? `${fmt(c.callsPct.median, 3)} % (${fmt(c.callsPct.min, 3)}–${fmt(c.callsPct.max, 3)})` : pct(c);
    const worst = Math.max(...tracked.map(own));
    out.push({
      id: 'view-refresh',
      target: `the view's refresh ≤ ${VIEW_TARGET_PCT} % of one core in isolation (1 Hz, ≥ 1000 processes, a 20-process agent, three 5-process terminals; full scans every 10 s included)`,
      measured:
        tracked
          .map(
            (c) => `${c.tier} tier ${calls(c)}, the whole process ${pct(c)} (today's refresh ${calls(viewCase(r, `baseline-${c.tier}`))})`,
          )
          .join('; ') +
        `; no agent: ${calls(viewCase(r, 'tracked-none'))}, the whole process ${pct(viewCase(r, 'tracked-none'))} (today ${calls(viewCase(r, 'baseline-none'))}); ${r.view.processes} processes, windows of ${r.view.windowSeconds} s`,
      met: tracked.length ? worst <= VIEW_TARGET_PCT : null,
      reason: worst <= VIEW_TARGET_PCT ? undefined : `${fmt(worst, 3)} % in the worst tier`,
    });
    const big = ['tracked-group-1000', 'tracked-cgroup-1000'].map((id) => viewCase(r, id)).filter((c): c is ViewCase => !!c);
    const bigWorst = Math.max(...big.map(own));
    out.push({
      id: 'view-1000',
      target: `a 1000-member tree ≤ ${BIG_TREE_TARGET_PCT} % of one core at 1 Hz`,
      measured: big
        .map(
          (c) =>
            `${c.tier} tier ${calls(c)}, the whole process ${pct(c)} (today's refresh ${calls(viewCase(r, `baseline-${c.tier}-1000`))})`,
        )
        .join('; '),
      met: big.length ? bigWorst <= BIG_TREE_TARGET_PCT : null,
      reason:
        bigWorst <= BIG_TREE_TARGET_PCT
          ? undefined
          : `${fmt(bigWorst, 2)} % in the worst tier: one stat and one children list per member each second`,
    });
  }
  const escapes = [
    ...(r.view?.escapes ?? []).map((e) => ({ ...e, where: 'isolation' })),
    ...(r.viewHost?.runs ?? []).flatMap((run) => run.escapes.map((e) => ({ ...e, where: `real host, ${run.tier} tier` }))),
  ];
  if (escapes.length) {
    const shown = escapes.map((e) => e.shownMs ?? Infinity);
    const worstShown = Math.max(...shown);
    const survivors = escapes.reduce((a, e) => a + e.survivors, 0);
    const kill = summarize(escapes.map((e) => e.killDeadMs));
    const isolated = (r.view?.escapes ?? [])
      .map((e) => `${fmt(e.shownMs ?? NaN, 0)} ms (escaped ${fmt(e.afterFullScanMs, 0)} ms after a full scan)`)
      .join(', ');
    out.push({
      id: 'view-escape',
      target: `a \`setsid -f\` daemon that escaped the parent chain is shown within ${ESCAPE_SHOWN_MS / 1000} s, and killed by a kill at once`,
      measured:
        `shown after ${isolated || '–'} in isolation (group tier)` +
        (r.viewHost?.runs.length
          ? `; in the real host ${r.viewHost.runs.map((run) => `${run.tier} tier ${run.escapes.map((e) => `${fmt(e.shownMs ?? NaN, 0)}`).join(', ')} ms`).join('; ')}`
          : '') +
        `; the kill ended it ${fmtSummary(kill, 0)} ms after the request, ${survivors} survivors`,
      met: worstShown <= ESCAPE_SHOWN_MS && survivors === 0,
      reason:
        worstShown <= ESCAPE_SHOWN_MS && survivors === 0
          ? undefined
          : survivors > 0
            ? `${survivors} survivors`
            : `shown after ${fmt(worstShown, 0)} ms at worst`,
    });
  }
  for (const run of r.viewHost?.runs ?? []) {
    const hidden = hostCondition(run.windows, 'hidden');
    const tracked = hostCondition(run.windows, 'visible-tracked');
    const diff = tracked.mean - hidden.mean;
    const rounds = hostRoundDiffs(run.windows, 'visible-tracked');
    out.push({
      id: `view-host-${run.tier}`,
      target: `the extension host with the view visible ≤ ${HOST_TARGET_PCT} % of one core above the same host hidden (real host, ${run.tier} tier)`,
      measured:
        `visible ${fmt(tracked.mean, 2)} % vs hidden ${fmt(hidden.mean, 2)} % = +${fmt(diff, 2)} % (round by round ${fmtSummary(rounds, 2)} %); ` +
        `${fmt(hidden.seconds, 0)} s per condition`,
      met: diff <= HOST_TARGET_PCT,
      reason: diff <= HOST_TARGET_PCT ? undefined : `+${fmt(diff, 2)} %`,
    });
  }
  if (r.viewHost?.error && !r.viewHost.runs.length) {
    out.push({
      id: 'view-host',
      target: `the extension host with the view visible ≤ ${HOST_TARGET_PCT} % above the same host hidden`,
      measured: 'not measured',
      met: null,
      reason: r.viewHost.error,
    });
  }
  return out;
}

const mark = (t: Target) => (t.met === true ? '**met**' : t.met === false ? '**missed**' : 'not decided');

export function markdown(r: AllResults, meta: Record<string, string | number>, ts: Target[]): string {
  const md: string[] = [];
  md.push('# Agent Trees benchmarks: latest run', '');
  md.push(
    `Run ${meta.date} with \`npm run bench\` in ${meta.durationS} s. Machine: ${meta.cpus} cores, Linux ${meta.kernel}, Node ${meta.node}, ` +
      `${meta.processes} processes at start, load average ${meta.load}. Shared and noisy: compare the ratios (measured side by side, contenders alternated run by run), not absolute times. ` +
      'Figures are median (min–max). See bench/README.md for how each figure is measured.',
    '',
  );
  md.push(`Ours ran in the ${meta.tier} tier. Trees of N processes: ${meta.treeBuilder}.`, '');

  md.push('## Targets', '', '| target | measured | result |', '|---|---|---|');
  for (const t of ts) md.push(`| ${t.target} | ${t.measured} | ${mark(t)}${t.reason ? `: ${t.reason}` : ''} |`);
  md.push('');

  if (r.snapshot) {
    md.push('## 1. Snapshot: one listing of every process', '');
    md.push(
      'ms per call, median (min–max); CPU = this process + its reaped children (the `ps` calls), per call; % of one core at one call per second.',
      '',
    );
    md.push(
      '| method | ' +
        r.snapshot.levels.map((l) => `${l.label} (${l.processes} procs): ms`).join(' | ') +
        ' | CPU ms / call (largest) | % core at 1 Hz (largest) |',
    );
    md.push('|---|' + r.snapshot.levels.map(() => '---|').join('') + '---|---|');
    const methods = r.snapshot.levels[0]?.methods.map((m) => m.method) ?? [];
    const top = r.snapshot.levels[r.snapshot.levels.length - 1];
    for (const m of methods) {
      const title = method(top, m)!.title;
      const cells = r.snapshot.levels.map((l) => fmtSummary(method(l, m)!.ms, 2));
      const t = method(top, m)!;
      md.push(
        `| ${title} | ${cells.join(' | ')} | ${m === 'c-ref' ? '–' : fmt(t.cpuMsPerCall)} | ${m === 'c-ref' ? '–' : fmt(t.cpuPctAt1Hz, 2)} |`,
      );
    }
    if (r.snapshot.levels.some((l) => l.cRefStatCmd)) {
      md.push(
        `| C reference measured here: stat + cmdline for every pid | ${r.snapshot.levels.map((l) => (l.cRefStatCmd ? fmtSummary(l.cRefStatCmd, 2) : '–')).join(' | ')} | – | – |`,
      );
    }
    md.push(
      `| C reference from the notes (stat only, ~1100 procs, other run) | ${r.snapshot.levels.map((l, i) => (i === r.snapshot!.levels.length - 1 ? `${C_REFERENCE_MS}` : '–')).join(' | ')} | – | – |`,
    );
    md.push('');
    for (const h of r.snapshot.oneHz ?? []) {
      md.push(
        `Measured at 1 Hz, ${h.method}: ${h.calls} calls over ${fmt(h.seconds, 1)} s with ${h.processes} processes used ${fmt(h.cpuMs)} CPU-ms = **${fmt(h.cpuPct, 2)} % of one core** (idle time included).`,
        '',
      );
    }
    if (r.snapshot.cRefNote) md.push(r.snapshot.cRefNote, '');
  }

  if (r.kill) {
    const k = r.kill;
    md.push('## 2. Kill: ms from the kill request until every member is dead', '');
    md.push(
      'Zombies count as dead. Trees: a root that forked N−1 sleeping children (one process group, all direct children of the root). ' +
        `Dead = observed by a watcher thread reading /proc/<pid>/stat of each member. "returned" = when the kill call's promise or callback settled. tree-kill capped at ${k.capMs / 1000} s.`,
      '',
    );
    const sizes = k.sizes.map((s) => s.size);
    md.push(
      '| method | ' +
        sizes.map((s) => `${s} procs: dead ms`).join(' | ') +
        ' | ' +
        sizes.map((s) => `${s}: returned ms`).join(' | ') +
        ' | CPU ms (largest) | runs |',
    );
    md.push('|---|' + sizes.map(() => '---|').join('') + sizes.map(() => '---|').join('') + '---|---|');
    const methods = k.sizes[0]?.methods.map((m) => m.method) ?? [];
    for (const m of methods) {
      const rows = sizes.map((s) => killOf(k, s, m));
      const title = rows.find(Boolean)!.title;
      const dead = rows.map((x) => (x ? `${x.capped ? '≥ ' : ''}${fmtSummary(x.dead)}${x.capped ? ' (capped)' : ''}` : '–'));
      const ret = rows.map((x) => (x?.returned ? fmtSummary(x.returned) : '–'));
      const last = rows[rows.length - 1];
      md.push(
        `| ${title} | ${dead.join(' | ')} | ${ret.join(' | ')} | ${last ? `${last.capped ? '≥ ' : ''}${fmt(last.cpuMs.median)}` : '–'} | ${rows.map((x) => x?.runs.length ?? 0).join('/')} |`,
      );
    }
    md.push('');
  }

  const ratios = ratioLines(r);
  if (ratios.length) {
    md.push('## Ratios', '');
    for (const l of ratios) md.push(`- ${l}`);
    md.push('');
  }

  if (r.reach) {
    md.push('## 3. Reach: survivors / live members, per escape scenario', '');
    md.push(
      'Each scenario built by test/fixtures/tree.sh, killed once per method with SIGKILL (ours: grace 0); survivors counted 1 s after the kill returned ' +
        "(fixture processes plus anything carrying the scenario's tag variable). 0 = everything reached.",
      '',
    );
    md.push('| scenario | ' + r.reach.methods.map((m) => REACH_TITLES[m]).join(' | ') + ' |');
    md.push('|---|' + r.reach.methods.map(() => '---|').join(''));
    for (const s of r.reach.scenarios) {
      md.push(
        `| ${s.title} | ` +
          r.reach.methods
            .map((m) => {
              const c = s.cells[m];
              if (c.na) return `n/a (${c.na})`;
              return `${c.survivors}/${c.members}${c.survivors ? ` (${summarizeRoles(c.survivorRoles)})` : ''}`;
            })
            .join(' | ') +
          ' |',
      );
    }
    md.push('');
  }

  if (r.sweep) {
    const s = r.sweep;
    md.push('## 4. Sweep: sweepOrphans over a records folder', '');
    md.push('| case | ms | runs |', '|---|---|---|');
    md.push(`| ${s.records} records of dead owners, all trees gone, ${s.processes} processes | ${fmtSummary(s.gone)} | ${s.gone.n} |`);
    if (s.mixed)
      md.push(
        `| ${s.records} records, ${s.mixed.liveTrees} of them with a live 3-process tree (killed, grace 1500 ms, they die on SIGTERM) | ${fmtSummary(s.mixed)} | ${s.mixed.n} |`,
      );
    md.push(
      `| (profile of the median sweep) full process snapshots taken | ${s.profile.snapshots} snapshots, ${fmt(s.profile.snapshotMs)} of ${fmt(s.profile.sweepMs)} ms | – |`,
    );
    md.push(
      `| (reference) one snapshot + the same ${s.records} tree resolutions on it | ${fmtSummary(s.sharedSnapshotMs)} | ${s.sharedSnapshotMs.n} |`,
    );
    md.push('');
  }

  if (r.extension) {
    const e = r.extension;
    md.push('## 5. Extension', '');
    md.push('| figure | value |', '|---|---|');
    md.push(
      `| dist/extension.js, production (\`node esbuild.js --production\`) | ${e.bundle ? `${e.bundle.extensionJs} bytes (${kb(e.bundle.extensionJs)})` : `not built: ${e.bundleError}`} |`,
    );
    if (e.bundle?.cliJs !== undefined) md.push(`| dist/cli.js, production | ${e.bundle.cliJs} bytes (${kb(e.bundle.cliJs)}) |`);
    md.push(
      `| .vsix | ${
        e.vsix
          ? `${e.vsix.bytes} bytes (${kb(e.vsix.bytes)}), built with ${e.vsix.via}; largest entries (compressed): ${e.vsix.files
              .slice(0, 4)
              .map((f) => `${f.name.replace(/^extension\//, '')} ${kb(f.bytes)}`)
              .join(', ')}`
          : `not built: ${e.vsixError}`
      } |`,
    );
    if (e.vsix && e.vsixError) md.push(`| \`npm run package\` | fails: ${e.vsixError.replace(/\|/g, '/')} |`);
    md.push(
      `| activation (real host) | ${e.activation.ms === undefined ? e.activation.source : `${fmt(e.activation.ms)} ms (${e.activation.source})`} |`,
    );
    md.push('');
  }

  if (r.view || r.viewHost) md.push(...viewMarkdown(r));
  if (r.otherExtensions) md.push(...othersMarkdown(r.otherExtensions));

  if (r.watchdog) {
    const w = r.watchdog;
    md.push("## 7. Watchdog: what it costs idle, and how fast an owner's death is cleaned up", '');
    if (w.idle.length) {
      md.push(
        `Idle: an owner process (Node, a TreeOwner) with 3 sleeping trees, each way of noticing its death side by side in the same ${w.windowS} s window (${w.rounds} rounds). ` +
          'CPU from /proc/<pid>/schedstat (ns on a CPU), % of one core; memory of the watchers summed (PSS shares pages among all users of the same binary).',
        '',
      );
      md.push(
        '| contender | owner + watchers, % core | watchers alone, % core | watchers | RSS kB | PSS kB |',
        '|---|---|---|---|---|---|',
      );
      for (const row of w.idle)
        md.push(
          `| ${WATCHDOG_TITLES[row.mode]} | ${fmtSummary(row.cpuPct, 4)} | ${fmtSummary(row.watcherCpuPct, 4)} | ${row.watchers} | ${row.rssKb} | ${row.pssKb} |`,
        );
      md.push('');
    }
    if (w.death.length) {
      md.push(
        "Death to clean: `agent-trees run` SIGKILLed with its tree running (a setsid child; a SIGTERM-ignoring tree, which waits out the watchdog's 0.5 s grace), ms from the SIGKILL.",
        '',
      );
      md.push('| tree | all members dead, ms | record removed, ms | runs | not clean after 10 s |', '|---|---|---|---|---|');
      for (const d of w.death)
        md.push(`| ${d.tree} | ${fmtSummary(d.deadMs, 0)} | ${fmtSummary(d.recordMs, 0)} | ${d.deadMs.n} | ${d.failures} |`);
      md.push('');
    }
    if (w.reload) {
      md.push(
        `Reloads (integration suite, phase 5, real host: \`--host ${RELOAD_HOST}\`): ms from the reload request until the old window's processes were gone and its record removed; sweeps off, so the old host's shutdown, its watchdog or the takeover did it.`,
        '',
      );
      if (w.reload.runs.length === 0) md.push(`Not measured: ${w.reload.error}.`, '');
      else {
        md.push(
          '| how | runs | processes gone, ms | record removed, ms | old host outlived the cleanup (taken over) |',
          '|---|---|---|---|---|',
        );
        for (const how of ['reload', 'renderer-crash']) {
          const of = w.reload.runs.filter((x) => x.how === how);
          if (!of.length) continue;
          md.push(
            `| ${how} | ${of.length} | ${fmtSummary(summarize(of.map((x) => x.processesMs)), 0)} | ${fmtSummary(summarize(of.map((x) => x.recordMs)), 0)} | ` +
              `${of.filter((x) => x.hostGoneMs === null || x.hostGoneMs > x.recordMs).length} |`,
          );
        }
        md.push('');
      }
    }
  }

  if (r.crowd) {
    const c = r.crowd;
    md.push('## 7b. Watchdog on a crowded machine', '');
    md.push(
      `One owner (a TreeOwner with a watchdog) with ${c.trees} trees that ignore SIGTERM (a shell and a sleep each), SIGKILLed while ${c.idle} idle processes share the machine ` +
        `(${c.processes} in all); ms from the SIGKILL. The watchdog's sweep resolves all the trees from one scan of the process table per step (grace 0.5 s); ` +
        `one scan of the machine took ${fmt(c.scanMs, 0)} ms here at the time, the unit these figures are made of (on a loaded machine it grows with the load).`,
      '',
    );
    md.push('| tier | all members dead, ms | record removed, ms | runs | not clean after 60 s |', '|---|---|---|---|---|');
    for (const row of c.rows)
      md.push(`| ${row.tier} | ${fmtSummary(row.deadMs, 0)} | ${fmtSummary(row.recordMs, 0)} | ${row.deadMs.n} | ${row.failures} |`);
    md.push('');
  }

  if (r.terminal) md.push(...terminalMarkdown(r.terminal));
  if (r.budget) md.push(...budgetMarkdown(r.budget));
  if (r.attention) md.push(...attentionMarkdown(r.attention));

  md.push('## Cleanup', '', `Processes of this run left at the end: ${meta.leftovers}.`, '');
  return md.join('\n');
}

function summarizeRoles(roles: string[]): string {
  const counts = new Map<string, number>();
  for (const r of roles) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([r, n]) => (n > 1 ? `${n}× ${r}` : r)).join(', ');
}

function budgetMarkdown(b: BudgetResults): string[] {
  const md = ['## 9. Budgets: what the watch costs, and how far past a limit a tree gets', ''];
  md.push(
    `Cost: a ${b.treeSize}-process tree owned in the bench process, idle windows of ${b.windowS} s (${b.rounds} rounds, rotated); CPU of the bench process over the whole window, idle included, % of one core; and of it, the CPU inside the watch's looks.`,
    '',
  );
  md.push('| tier | tree | limits | % core | in its looks | looks/s | kernel holds processes |', '|---|---|---|---|---|---|---|');
  for (const c of b.cost)
    md.push(
      `| ${c.tier} | ${c.case} | ${c.limits ? JSON.stringify(c.limits).replace(/"/g, '') : '–'} | ${fmtSummary(c.pct, 4)} | ${fmtSummary(c.inLooksPct, 4)} | ${c.looksPerS.toFixed(1)} | ${c.kernelProcesses ? 'yes' : 'no'} |`,
    );
  md.push(
    '',
    `What the watch adds, round by round (far from its limits less no limits, in the same round), percentage points of a core: ${b.added.map((a) => `${a.tier} tier ${fmtSummary(a.pct, 4)}`).join('; ')}.`,
  );
  md.push('', `One look of the watch over the tree (far from its limits), a second apart: ${fmtSummary(b.lookCpuMs, 3)} ms of CPU.`, '');
  md.push(
    'Memory: a tree allocating about 100 MB/s (10 MB every 100 ms, written) under a 300 MB limit; MB past the limit when it was seen (the figure of the ending line).',
    '',
  );
  md.push('| path | runs | MB past 300 MB when seen | ms from the spawn |', '|---|---|---|---|');
  for (const m of b.memory) md.push(`| ${m.path} | ${m.pastMB.n} | ${fmtSummary(m.pastMB)} | ${fmtSummary(m.seenMs, 0)} |`);
  md.push('', `The kernel's path (cgroup v2 \`memory.max\`): ${b.kernelMemory}.`, '');
  md.push(
    'Fork loops under maxProcesses 50: the most processes alive at once (a sampler process counting the cgroup or the session of the tree as fast as it can), and the count the watch saw.',
    '',
  );
  md.push('| path | loop | runs | at most alive | seen at | survivors |', '|---|---|---|---|---|---|');
  for (const f of b.forkLoops)
    md.push(`| ${f.path} | ${f.loop} | ${f.peak.n} | ${fmtSummary(f.peak, 0)} | ${fmtSummary(f.seenAt, 0)} | ${f.survivors} |`);
  md.push('');
  return md;
}

function terminalMarkdown(t: TerminalResults): string[] {
  const md: string[] = [];
  md.push('## 8. Agent terminals', '');
  md.push(
    `Throughput: ${t.bytes / 1e6} MB written by the agent (bench/fixtures/ttywriter.py, 100-byte lines) as fast as it can, from the spawn until the consumer has it all ` +
      '(in the real host: until the terminal has acknowledged parsing it, or answered a status query after it). MB/s median (min–max); ' +
      "memory: the extension host's peak growth over the run, retained (heap + external + buffers after a full GC) and RSS.",
    '',
  );
  md.push('| contender | MB/s | ms | retained MB | RSS MB | pauses | answer ms |', '|---|---|---|---|---|---|---|');
  for (const x of [...t.node.throughput, ...(t.host?.throughput ?? [])]) {
    md.push(
      `| ${x.title} | ${fmtSummary(x.mbps)} | ${fmtSummary(x.ms, 0)} | ${x.heapGrowthMb === undefined ? '–' : `+${fmt(x.heapGrowthMb)}`} | ` +
        `${x.rssGrowthMb === undefined ? '–' : `+${fmt(x.rssGrowthMb)}`} | ${x.pauses === undefined ? '–' : fmt(x.pauses, 0)} | ${x.answerMs === undefined ? '–' : fmt(x.answerMs, 0)} |`,
    );
  }
  md.push('');
  md.push("Keystroke latency: one key written by the consumer until the agent's read returned (the agent takes the time), ms.", '');
  md.push('| contender | ms |', '|---|---|');
  for (const x of [...t.node.latency, ...(t.host?.latency ?? [])]) md.push(`| ${x.title} | ${fmtSummary(x.ms, 2)} |`);
  md.push('');
  const c = t.host?.cycles;
  if (c) {
    md.push(
      `Launch/kill cycles in the real host (${t.host!.vscode}): ${c.cycles} agents with distinct names launched and killed through the API in ${c.seconds} s; ` +
        `heap ${fmt(c.heapBeforeMb)} → ${fmt(c.heapAfterMb)} MB${c.gc ? ' (after full GCs)' : ''}, RSS ${fmt(c.rssBeforeMb)} → ${fmt(c.rssAfterMb)} MB; ` +
        `${c.terminalsOpen} agent terminals left open (${c.keptRuns} runs kept in the view).`,
      '',
    );
  }
  if (t.host?.error) md.push(`Real host: ${t.host.error.split('\n')[0]}`, '');
  for (const n of t.host?.notes ?? []) md.push(`Real host, failed and left out: ${n}`, '');
  if (t.hostError) md.push(`Real host: not measured: ${t.hostError}`, '');
  return md;
}

function viewMarkdown(r: AllResults): string[] {
  const md: string[] = [];
  md.push("## 6. The view's refresh", '');
  const v = r.view;
  if (v) {
    md.push(
      `In isolation: each refresh called once a second for windows of ${v.windowSeconds} s (1000-member trees: shorter), contenders alternated window by window; ` +
        `CPU of this process over each whole window, idle time included; ${v.processes} processes on the machine (a 20-process agent in each tier, three terminal-like ` +
        'trees of 5, sleepers). "today\'s refresh" is the refresh as the view ran it before member tracking (`bench/fullScanRefresh.ts`); "tracked" is `MemberTracker` + `refreshMembers`, ' +
        'what it runs now. % of one core: median (min–max) over the windows.',
      '',
    );
    md.push(
      '| refresh | members | % of one core | CPU ms per refresh: walk or listing | CPU ms per refresh: full scan | full scans / windows |',
      '|---|---|---|---|---|---|',
    );
    for (const c of [...v.small, ...v.big]) {
      const scans = c.windows.reduce((a, w) => a + w.fullScans, 0);
      const calls = c.windows.reduce((a, w) => a + w.calls, 0);
      md.push(
        `| ${c.title} | ${c.members} | ${fmtSummary(c.pct, 3)} | ${c.callCpuMs.partial ? fmtSummary(c.callCpuMs.partial, 2) : '–'} | ${c.callCpuMs.full ? fmtSummary(c.callCpuMs.full, 2) : '–'} | ${scans} of ${calls} refreshes |`,
      );
    }
    md.push('');
    if (v.escapes.length) {
      md.push(
        'A `setsid -f` daemon leaving a group-tier tree (no cgroup holds it) at a chosen moment after the last full scan; refreshes at 1 Hz; then `TreeOwner.kill(id, 0)`:',
        '',
      );
      md.push(
        '| escaped after the last full scan | shown after | kill: daemon dead after | kill returned after | survivors |',
        '|---|---|---|---|---|',
      );
      for (const e of v.escapes)
        md.push(
          `| ${fmt(e.afterFullScanMs, 0)} ms | ${e.shownMs === undefined ? 'never (30 s cap)' : `${fmt(e.shownMs, 0)} ms`} | ${fmt(e.killDeadMs, 1)} ms | ${fmt(e.killReturnedMs, 1)} ms | ${e.survivors} |`,
        );
      md.push('');
    }
  }
  const h = r.viewHost;
  if (h) {
    md.push(
      'In the real host (code-server 4.100.3 + headless Chromium, `bench/viewHostSuite.ts`): one 20-process agent launched through the API, three integrated ' +
        "terminals running 5 processes each, sleepers to make ≥ 1000 processes; the extension host's own CPU (utime + stime of /proc/self/stat, every thread, " +
        'the snapshot worker included) over windows with the view hidden and visible, alternated round by round, refresh every 1 s (the refresh ' +
        "before member tracking is compared in isolation only: the product no longer has it). code-server's own port scanner (`remote.autoForwardPortsSource`) is set to " +
        '"output": it reads every process every few seconds (~2–3 % of a core at 1000 processes, in bursts, view shown or not) and drowned the difference.',
      '',
    );
    if (h.error) md.push(`Host measurement problem: ${h.error}`, '');
    for (const run of h.runs) {
      md.push(`**${run.tier} tier** (extension host ${run.hostPid}):`, '');
      md.push(
        '| condition | % of one core (all windows) | per window: median (min–max) | refreshes | full scans | in the worker | process reads | processes |',
        '|---|---|---|---|---|---|---|---|',
      );
      for (const c of ['hidden', 'visible-tracked'] as const) {
        const w = run.windows.filter((x) => x.condition === c);
        const agg = hostCondition(run.windows, c);
        const sum = (f: (x: HostWindow) => number) => w.reduce((a, x) => a + f(x), 0);
        md.push(
          `| ${c} | ${fmt(agg.mean, 2)} | ${fmtSummary(agg.median, 2)} | ${sum((x) => x.refreshes)} | ${sum((x) => x.fullScans)} | ${sum((x) => x.inWorker)} | ${sum((x) => x.processReads)} | ${fmtSummary(summarize(w.map((x) => x.processes)), 0)} |`,
        );
      }
      md.push('');
      md.push(`Round by round, visible minus hidden: ${fmtSummary(hostRoundDiffs(run.windows, 'visible-tracked'), 2)} %.`, '');
      if (run.escapes.length) {
        md.push(
          `Escaped daemon (view visible, tracked): shown after ${run.escapes.map((e) => (e.shownMs === undefined ? 'never' : `${fmt(e.shownMs, 0)} ms`)).join(', ')}; ` +
            `Kill Agent Tree (API kill, grace from the settings) ended it ${run.escapes.map((e) => `${fmt(e.killDeadMs, 0)} ms`).join(', ')} after the request; survivors ${run.escapes.reduce((a, e) => a + e.survivors, 0)}.`,
          '',
        );
      }
    }
  }
  return md;
}

/** Issue 22: the section of other extensions visible against the host hidden, and the hidden look's own cost. */
function othersTargets(o: OthersBenchResults | undefined): Target[] {
  if (!o) return [];
  const target = `other extensions' processes (15 host children): the view visible ≤ ${OTHERS_VISIBLE_TARGET_PCT} % of a core above the host hidden`;
  if (!o.conditions) return [{ id: 'others-visible', target, measured: 'not measured', met: null, reason: o.error }];
  const c = o.conditions;
  const diff = c['end-visible'].median - c['end-hidden'].median;
  return [
    {
      id: 'others-visible',
      target,
      measured: `visible ${fmt(c['end-visible'].median, 3)} %, hidden ${fmt(c['end-hidden'].median, 3)} %: ${fmt(diff, 3)} % (medians)`,
      met: diff <= OTHERS_VISIBLE_TARGET_PCT,
      reason: diff <= OTHERS_VISIBLE_TARGET_PCT ? undefined : `${fmt(diff, 3)} %`,
    },
  ];
}

function othersMarkdown(o: OthersBenchResults): string[] {
  const md = ["## Other extensions' processes (issue 22)", ''];
  if (!o.run || !o.conditions) return [...md, `Not measured: ${o.error}`, ''];
  const c = o.conditions;
  md.push(
    `In the real host (code-server 4.100.3, \`bench/otherExtensionsSuite.ts\`, the stand-ins loaded): ${o.run.hostChildren} children of the extension host ` +
      `(14 sleepers as language servers, one Claude Code stand-in session), ${o.run.processes} processes in all. The host's CPU (schedstat of every thread), ` +
      '% of one core, per condition (median (min–max) over the rounds):',
    '',
  );
  md.push('| condition | % of a core |', '|---|---|');
  const titles: Record<string, string> = {
    'off-hidden': '`otherExtensions.mode: "off"`, view hidden (nothing of theirs read)',
    'end-hidden': '"end" (the default), view hidden: the look every 5 s, the record, the window lease',
    'end-visible': '"end", view visible (1 Hz, the section included)',
    'off-visible': '"off", view visible (1 Hz, no section)',
  };
  for (const [k, s] of Object.entries(c)) md.push(`| ${titles[k]} | ${fmtSummary(s, 3)} |`);
  md.push(
    '',
    `The bounded look while hidden: ${fmt(c['end-hidden'].median - c['off-hidden'].median, 3)} % of a core (end hidden − off hidden); ` +
      `the section in the visible view: ${fmt(c['end-visible'].median - c['off-visible'].median, 3)} %; visible − hidden (end): ` +
      `${fmt(c['end-visible'].median - c['end-hidden'].median, 3)} %. Record rewrites in the hidden windows (nothing changed): ${o.run.recordWrites}.`,
    '',
  );
  return md;
}
