/**
 * Agent terminals, side by side in one run:
 *   - throughput: MB/s for 50 MB written by the agent (bench/fixtures/ttywriter.py), from spawn until the consumer
 *     has it all;
 *   - keystroke latency: a key written by the consumer until the agent's read returns (the agent takes the time);
 *   - memory: the extension host's while the agent writes faster than the terminal parses.
 * Contenders in plain Node: a bare pseudo-terminal (@lydell/node-pty, read as fast as it comes), ours (the owned
 * tree on a pseudo-terminal with the agent run's output buffer and the flow control, against a terminal that
 * answers at once) and the old pipe path (pipes, the output buffer, \n made \r\n). In the real host
 * (terminalSuite.ts, through scripts/host/runTests.js): the agent terminal, the agent terminal on pipes, the old
 * pipe path as it was (no flow control) and VS Code's own terminal running the same program, for reference;
 * and the extension host's heap over 500 launch/kill cycles.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { OutputBuffer } from '../src/agents/runs';
import { TerminalFlow, TreeOwner } from '../src/proc';
import { STATUS_OK, STATUS_QUERY } from '../src/proc/pty/ptyFlow';
import { hostMissing, log, msSince, nowNs, register, REPO, rotated, round, runInHost, summarize, Summary, tmpDir } from './lib';

export const WRITER = path.join(REPO, 'bench', 'fixtures', 'ttywriter.py');
export const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
export const FLOOD_BYTES = 50_000_000;
export const TERMINAL_BENCH_OUT_ENV = 'AGENT_TREES_TERMINAL_BENCH_OUT';

export type NodeContender = 'bare-pty' | 'ours-pty' | 'pipes';
export type HostContender = 'agent-terminal' | 'bare-pty-in-host' | 'agent-terminal-pipes' | 'old-pipe-path' | 'vscode-terminal';

export interface ThroughputFigure {
  contender: string;
  title: string;
  /** MB/s per run (50 MB / seconds). */
  mbps: Summary;
  ms: Summary;
  /** Bytes the consumer got in the last run (a bare node-pty can lose the tail). */
  bytes?: number;
  /** Extension host: peak growth of RSS and of heap + external memory over the run, MB (median of runs). */
  rssGrowthMb?: number;
  heapGrowthMb?: number;
  pauses?: number;
  /** Mean time the terminal took to answer a status query (the flow control's round trip), ms. */
  answerMs?: number;
}

export interface LatencyFigure {
  contender: string;
  title: string;
  /** ms from the key's write until the agent's read returned. */
  ms: Summary;
}

export interface CyclesFigure {
  cycles: number;
  heapBeforeMb: number;
  heapAfterMb: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  terminalsOpen: number;
  keptRuns: number;
  seconds: number;
  gc: boolean;
}

export interface HostResults {
  throughput: ThroughputFigure[];
  latency: LatencyFigure[];
  cycles?: CyclesFigure;
  vscode: string;
  /** Runs that failed (the rest still count). */
  notes: string[];
  error?: string;
}

export interface TerminalResults {
  bytes: number;
  node: { throughput: ThroughputFigure[]; latency: LatencyFigure[] };
  host?: HostResults;
  hostError?: string;
}

const NODE_TITLES: Record<NodeContender, string> = {
  'bare-pty': 'bare pseudo-terminal (@lydell/node-pty, plain Node)',
  'ours-pty': 'ours: owned tree on a pseudo-terminal + run output + flow control (plain Node)',
  pipes: 'old pipe path: owned tree on pipes + run output + \\n→\\r\\n (plain Node)',
};

interface NodePty {
  pid: number;
  onData(l: (d: Buffer | string) => void): void;
  onExit(l: () => void): void;
  write(d: string): void;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the bare module, as a contender
const nodePty = () => require('@lydell/node-pty') as { spawn(f: string, a: string[], o: object): NodePty };
const wallMs = () => performance.timeOrigin + performance.now();

/** Waits until `file` has more than `lines` lines; returns its lines. */
async function lines(file: string, more: number, timeoutMs = 10_000): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    const l = text.split('\n').filter(Boolean);
    if (l.length > more) return l;
    if (Date.now() > until) throw new Error(`no line ${more + 1} in ${file}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function throughputOnce(c: NodeContender, owner: TreeOwner): Promise<{ ms: number; bytes: number }> {
  const args = [WRITER, 'flood', String(FLOOD_BYTES)];
  const t0 = nowNs();
  let bytes = 0;
  if (c === 'bare-pty') {
    const p = nodePty().spawn(PYTHON, args, { cols: 120, rows: 30, env: process.env, encoding: null });
    register(p.pid);
    p.onData((d) => (bytes += d.length));
    await new Promise<void>((r) => p.onExit(() => r()));
  } else if (c === 'ours-pty') {
    bytes = await agentTerminalOnce(owner, args);
  } else {
    const tree = owner.spawn({ command: PYTHON, args, stdio: 'pipe' });
    register(tree.child.pid);
    const output = new OutputBuffer();
    let shown = 0;
    output.on('data', (t: string) => (shown += t.replace(/\r?\n/g, '\r\n').length));
    tree.child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      bytes += d.length;
      output.push(d);
    });
    await new Promise<void>((r) => tree.child.once('close', () => r()));
    void shown;
  }
  return { ms: msSince(t0), bytes };
}

/**
 * The agent terminal's path in plain Node, once: an owned tree on a pseudo-terminal running the writer with
 * `args`, the run's output buffer and the flow control, against a terminal that parses at once (every status query
 * answered as soon as it is written). `tap` sees every chunk as it comes, as AgentRuns' notification scanner does.
 * Resolves with the bytes read, once the writer exited.
 */
export async function agentTerminalOnce(owner: TreeOwner, args: string[], tap?: (d: string) => void): Promise<number> {
  let bytes = 0;
  const tree = owner.spawnTerminal({ command: PYTHON, args, cols: 120, rows: 30 });
  register(tree.child.pid);
  const output = new OutputBuffer();
  const flow: TerminalFlow = new TerminalFlow({
    write: (text) => {
      if (text === STATUS_QUERY) queueMicrotask(() => flow.input(STATUS_OK));
    },
    pause: () => tree.child.pause(),
    resume: () => tree.child.resume(),
  });
  output.on('data', (t: string) => flow.write(t));
  tree.child.on('data', (d: string) => {
    bytes += Buffer.byteLength(d);
    output.push(d);
    tap?.(d);
  });
  await new Promise<void>((r) => tree.child.once('exit', () => r()));
  flow.dispose();
  return bytes;
}

async function latencyOnce(c: NodeContender, owner: TreeOwner, samples: number): Promise<number[]> {
  const result = path.join(tmpDir('agent-trees-bench-keys-'), 'keys');
  const args = [WRITER, 'keys', result];
  let write: (s: string) => void;
  let done: Promise<void>;
  if (c === 'bare-pty') {
    const p = nodePty().spawn(PYTHON, args, { cols: 80, rows: 24, env: process.env });
    register(p.pid);
    p.onData(() => {});
    write = (s) => p.write(s);
    done = new Promise((r) => p.onExit(() => r()));
  } else if (c === 'ours-pty') {
    const tree = owner.spawnTerminal({ command: PYTHON, args });
    register(tree.child.pid);
    tree.child.on('data', () => {});
    write = (s) => tree.child.write(s);
    done = new Promise((r) => tree.child.once('exit', () => r()));
  } else {
    const tree = owner.spawn({ command: PYTHON, args, stdio: 'pipe' });
    register(tree.child.pid);
    write = (s) => tree.child.stdin!.write(s);
    done = new Promise((r) => tree.child.once('exit', () => r()));
  }
  await lines(result, 0); // ready
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const sent = wallMs();
    write('k');
    const l = await lines(result, i + 1);
    out.push(Number(l[i + 1].split(' ')[0]) / 1e6 - sent);
  }
  write('q');
  await done;
  return out;
}

/** Runs the plain-Node contenders, then the real host's (where it is installed). */
export async function runTerminal(opts: { owner: TreeOwner; quick: boolean }): Promise<TerminalResults> {
  const contenders: NodeContender[] = ['bare-pty', 'ours-pty', 'pipes'];
  const reps = opts.quick ? 2 : 5;
  const runs = new Map<NodeContender, { ms: number; bytes: number }[]>(contenders.map((c) => [c, []]));
  for (let round = 0; round < reps; round++) {
    for (const c of rotated(contenders, round)) {
      const r = await throughputOnce(c, opts.owner);
      runs.get(c)!.push(r);
      log(`terminal: ${c} 50 MB in ${r.ms.toFixed(0)} ms = ${(FLOOD_BYTES / 1e6 / (r.ms / 1000)).toFixed(1)} MB/s (${r.bytes} bytes read)`);
    }
  }
  const throughput: ThroughputFigure[] = contenders.map((c) => ({
    contender: c,
    title: NODE_TITLES[c],
    mbps: summarize(runs.get(c)!.map((r) => FLOOD_BYTES / 1e6 / (r.ms / 1000))),
    ms: summarize(runs.get(c)!.map((r) => r.ms)),
    bytes: runs.get(c)![runs.get(c)!.length - 1].bytes,
  }));
  const latency: LatencyFigure[] = [];
  const samples = opts.quick ? 15 : 40;
  const lat = new Map<NodeContender, number[]>(contenders.map((c) => [c, []]));
  for (let round = 0; round < 2; round++) {
    for (const c of rotated(contenders, round)) lat.get(c)!.push(...(await latencyOnce(c, opts.owner, samples / 2)));
  }
  for (const c of contenders) {
    latency.push({ contender: c, title: NODE_TITLES[c], ms: summarize(lat.get(c)!) });
    log(`terminal: keystroke ${c}: ${summarize(lat.get(c)!).median.toFixed(3)} ms median`);
  }
  const results: TerminalResults = { bytes: FLOOD_BYTES, node: { throughput, latency } };
  const host = process.env.AGENT_TREES_TERMINAL_BENCH_NO_HOST ? { error: 'skipped' } : measureInHost(opts.quick);
  if ('error' in host && !('throughput' in host)) results.hostError = host.error;
  else results.host = host as HostResults;
  return results;
}

/** The real-host half (terminalSuite.ts) in a fresh code-server session; skipped, with the reason, without one. */
function measureInHost(quick: boolean): HostResults | { error: string } {
  const missing = hostMissing();
  if (missing) return { error: missing };
  if (!fs.existsSync(path.join(REPO, 'dist', 'extension.js'))) return { error: 'dist/extension.js is missing (node esbuild.js)' };
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-bench-term-')), 'terminal.json');
  const suite = path.join(REPO, 'out', 'bench', 'terminalSuite.js');
  const t0 = nowNs();
  const r = runInHost({ suite, env: { [TERMINAL_BENCH_OUT_ENV]: out, AGENT_TREES_TERMINAL_BENCH_QUICK: quick ? 1 : 0 }, timeoutS: 1500 });

  log(`terminal: real host session ${(msSince(t0) / 1000).toFixed(0)} s`);
  if (!fs.existsSync(out)) return { error: `host run failed (exit ${r.status}): ${r.tail(8)}` };
  const results = JSON.parse(fs.readFileSync(out, 'utf8')) as HostResults;
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  for (const t of results.throughput)
    log(`terminal (host): ${t.contender} ${round(t.mbps.median)} MB/s, extension host +${t.rssGrowthMb} MB RSS`);
  return results;
}
