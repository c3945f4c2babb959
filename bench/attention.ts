/**
 * What reading an agent's output for notification sequences costs (issue 24): the agent terminal's throughput in
 * plain Node (`agentTerminalOnce`: an owned tree on a pseudo-terminal, the run's output buffer, the flow control)
 * without and with the scanner AgentRuns puts on it (EscapeScanner with a listener), for 50 MB of plain lines and
 * 50 MB of an agent's screen (over half escape sequences, titles ended by BEL, OSC 9;4 progress: all read, none a
 * notification). Contenders alternate run by run. Also the scanner alone on the same bytes in memory, which the
 * pseudo-terminal's noise does not reach: the throughput it would cap the terminal at.
 *
 *   node out/bench/run.js --only=attention [--quick]
 */
import { EscapeScanner, TreeOwner } from '../src/proc';
import { log, msSince, nowNs, rotated, summarize, Summary } from './lib';
import type { Target } from './report';
import { agentTerminalOnce, FLOOD_BYTES, PYTHON, WRITER } from './terminal';
import { execFileSync } from 'child_process';

export type ScanPayload = 'plain' | 'agent';
export type ScanContender = 'without' | 'with';

export interface ScanFigure {
  payload: ScanPayload;
  contender: ScanContender;
  /** MB/s per run. */
  mbps: Summary;
  /** With the scanner: the share of each run's time spent in it, % (paired within the run, so load hits both alike). */
  scanSharePct?: Summary;
  /** Notifications the scanner reported (it must be none: the payloads hold none). */
  signals: number;
}

export interface AttentionResults {
  bytes: number;
  figures: ScanFigure[];
  /** The scanner alone, on the payload in memory, MB/s (median of runs). */
  scannerAlone: { payload: ScanPayload; mbps: Summary }[];
}

const WRITER_MODE: Record<ScanPayload, string> = { plain: 'flood', agent: 'flood-agent' };

async function once(
  owner: TreeOwner,
  payload: ScanPayload,
  contender: ScanContender,
): Promise<{ mbps: number; signals: number; sharePct?: number }> {
  let signals = 0;
  let scanNs = 0n;
  const scanner = contender === 'with' ? new EscapeScanner(() => signals++) : undefined;
  const tap = scanner
    ? (d: string) => {
        const t = nowNs();
        scanner.feed(d);
        scanNs += nowNs() - t;
      }
    : undefined;
  const t0 = nowNs();
  await agentTerminalOnce(owner, [WRITER, WRITER_MODE[payload], String(FLOOD_BYTES)], tap);
  const ms = msSince(t0);
  return { mbps: FLOOD_BYTES / 1e6 / (ms / 1000), signals, sharePct: scanner ? (Number(scanNs) / 1e6 / ms) * 100 : undefined };
}

/** The scanner on the payload's bytes in memory, in the chunk sizes a pseudo-terminal hands over (4 KB). */
function scannerAlone(payload: ScanPayload, reps: number): Summary {
  const bytes = 8_000_000;
  const text = execFileSync(PYTHON, [WRITER, WRITER_MODE[payload], String(bytes)], { maxBuffer: bytes * 2 }).toString('utf8');
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 4096) chunks.push(text.slice(i, i + 4096));
  const runs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const scanner = new EscapeScanner(() => {});
    const t0 = nowNs();
    for (const c of chunks) scanner.feed(c);
    runs.push(bytes / 1e6 / (msSince(t0) / 1000));
  }
  return summarize(runs);
}

export async function runAttentionScan(opts: { owner: TreeOwner; quick: boolean }): Promise<AttentionResults> {
  const reps = opts.quick ? 2 : 5;
  const figures: ScanFigure[] = [];
  for (const payload of ['plain', 'agent'] as ScanPayload[]) {
    const runs = new Map<ScanContender, { mbps: number; signals: number; sharePct?: number }[]>([
      ['without', []],
      ['with', []],
    ]);
    for (let round = 0; round < reps; round++) {
      for (const c of rotated(['without', 'with'] as ScanContender[], round)) {
        const r = await once(opts.owner, payload, c);
        runs.get(c)!.push(r);
        log(
          `attention: ${payload} output, ${c} the scanner: ${r.mbps.toFixed(1)} MB/s` +
            (r.sharePct === undefined ? '' : `, ${r.sharePct.toFixed(2)} % of it scanning`),
        );
      }
    }
    for (const [contender, rs] of runs) {
      const shares = rs.flatMap((r) => (r.sharePct === undefined ? [] : [r.sharePct]));
      figures.push({
        payload,
        contender,
        mbps: summarize(rs.map((r) => r.mbps)),
        scanSharePct: shares.length ? summarize(shares) : undefined,
        signals: rs.reduce((n, r) => n + r.signals, 0),
      });
    }
  }
  const alone = (['plain', 'agent'] as ScanPayload[]).map((payload) => ({ payload, mbps: scannerAlone(payload, opts.quick ? 3 : 10) }));
  for (const a of alone) log(`attention: the scanner alone on ${a.payload} output: ${a.mbps.median.toFixed(0)} MB/s`);
  return { bytes: FLOOD_BYTES, figures, scannerAlone: alone };
}

const fmt = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '–');

/** With the scanner / without it, per payload: the throughput kept (1 = no cost). */
export function attentionRatios(a: AttentionResults): { payload: ScanPayload; kept: number; without: number; with: number }[] {
  return (['plain', 'agent'] as ScanPayload[]).flatMap((payload) => {
    const without = a.figures.find((f) => f.payload === payload && f.contender === 'without');
    const withIt = a.figures.find((f) => f.payload === payload && f.contender === 'with');
    return without && withIt
      ? [{ payload, kept: withIt.mbps.median / without.mbps.median, without: without.mbps.median, with: withIt.mbps.median }]
      : [];
  });
}

export function attentionRatioLines(a: AttentionResults): string[] {
  return attentionRatios(a).map(
    (r) => `notification scan, ${r.payload} output: with / without = ${fmt(r.kept, 3)}x (${fmt(r.with)} vs ${fmt(r.without)} MB/s)`,
  );
}

export function attentionMarkdown(a: AttentionResults): string[] {
  const md = ['## 9. Reading agent output for notification sequences', ''];
  md.push(
    `The agent terminal's path in plain Node (${a.bytes / 1e6} MB through an owned pseudo-terminal, the run's output buffer and the flow control), ` +
      'without and with the scanner of notification sequences (OSC 9, OSC 777, OSC 99, bells); "agent" output is an agent\'s screen: over half escape ' +
      'sequences, titles ended by BEL, OSC 9;4 progress. MB/s median (min–max); the scanner alone runs on the same bytes in memory.',
    '',
  );
  md.push(
    '| output | without the scanner | with it | with / without | time spent scanning | notifications reported | the scanner alone |',
    '|---|---|---|---|---|---|---|',
  );
  for (const r of attentionRatios(a)) {
    const w = a.figures.find((f) => f.payload === r.payload && f.contender === 'with')!;
    const wo = a.figures.find((f) => f.payload === r.payload && f.contender === 'without')!;
    const alone = a.scannerAlone.find((x) => x.payload === r.payload)!;
    md.push(
      `| ${r.payload} | ${fmt(wo.mbps.median)} (${fmt(wo.mbps.min)}–${fmt(wo.mbps.max)}) | ${fmt(w.mbps.median)} (${fmt(w.mbps.min)}–${fmt(w.mbps.max)}) | ` +
        `${fmt(r.kept, 3)}x | ${w.scanSharePct ? `${fmt(w.scanSharePct.median, 2)} % (${fmt(w.scanSharePct.min, 2)}–${fmt(w.scanSharePct.max, 2)})` : '–'} | ` +
        `${w.signals} | ${fmt(alone.mbps.median, 0)} MB/s |`,
    );
  }
  md.push('');
  return md;
}

/**
 * The issue's target: the scan adds at most 5 % to the agent terminal. Judged on the time spent in the scanner
 * within each run (paired, so the machine's load hits it and the run alike); the A/B throughput ratio is printed
 * beside it, but on a shared machine two runs differ by more than the scan costs.
 */
export function attentionTargets(a: AttentionResults): Target[] {
  const withIt = a.figures.filter((f) => f.contender === 'with' && f.scanSharePct);
  if (withIt.length === 0) return [];
  const worst = withIt.reduce((x, y) => (y.scanSharePct!.median > x.scanSharePct!.median ? y : x));
  const shares = withIt.map((f) => `${f.payload} output ${fmt(f.scanSharePct!.median, 2)} %`).join(', ');
  const ab = attentionRatios(a)
    .map((r) => `${r.payload} ${fmt(r.with)} vs ${fmt(r.without)} MB/s`)
    .join('; ');
  const alone = a.scannerAlone.map((x) => `${x.payload} ${fmt(x.mbps.median, 0)} MB/s`).join(', ');
  const met = worst.scanSharePct!.median <= 5;
  return [
    {
      id: 'attention-scan',
      target: 'reading the output for notification sequences adds ≤ 5 % to the agent terminal (plain Node)',
      measured: `time spent scanning: ${shares}; with / without the scanner: ${ab}; the scanner alone: ${alone}`,
      met,
      reason: met ? undefined : `the scanner took ${fmt(worst.scanSharePct!.median, 2)} % of the ${worst.payload} runs' time`,
    },
  ];
}
