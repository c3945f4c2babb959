/**
 * A suite module for the real-host runner (scripts/host/runTests.js) that measures what the view costs the
 * extension host: one 20-process agent and three integrated terminals of 5 processes each, the view
 * refreshing at 1 Hz; the host's own CPU (utime + stime of /proc/self/stat: every thread of this extension host,
 * the snapshot worker included) over windows with the view hidden and visible, alternated round by round. (The
 * refresh before member tracking is measured in isolation only, bench/view.ts: the product no longer has it.) Then
 * a `setsid -f` daemon that leaves the parent chain: how long until the view shows it, and how fast a kill ends it.
 *
 * In:  AGENT_TREES_VIEW_BENCH_OUT (JSON result), _TREE (tree builder binary), _WINDOW_S, _ROUNDS, _ESCAPES;
 *      _PROFILE (a folder): CPU and allocation profiles of the host's main thread in each window,
 *      `<condition>-<round>.cpuprofile` and `.heapprofile`.
 */
import * as fs from 'fs';
import * as inspector from 'inspector';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesTestExports } from '../src/extension/testHooks';
import { measureWindow, show, sleep, until, writeSuiteResult } from './hostSuite';

export type HostCondition = 'hidden' | 'visible-tracked';

export interface HostWindow {
  condition: HostCondition;
  round: number;
  seconds: number;
  /** utime + stime of the extension host over the window, ms (10 ms ticks). */
  cpuMs: number;
  pct: number;
  refreshes: number;
  fullScans: number;
  /** Refreshes run in the snapshot worker. */
  inWorker: number;
  processReads: number;
  processes: number;
}

export interface HostEscape {
  shownMs?: number;
  killDeadMs: number;
  killReturnedMs: number;
  survivors: number;
}

export interface HostViewResult {
  tier: string;
  hostPid: number;
  windows: HostWindow[];
  escapes: HostEscape[];
  agentMembers: number;
  terminalProcesses: number;
  errors: string[];
}

function stat(pid: number | 'self'): string[] | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** This extension host's CPU so far, ms: utime + stime from /proc/self/stat (clock ticks of 10 ms). */
function hostCpuMs(): number {
  const f = stat('self')!;
  return (Number(f[11]) + Number(f[12])) * 10;
}

function processCount(): number {
  let n = 0;
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = stat(Number(name));
    if (f && f[0] !== 'Z' && f[0] !== 'X') n++;
  }
  return n;
}

function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Starts V8's CPU profiler and its sampling heap profiler (what was allocated, collected since or not) on this
 * thread; the returned function stops both and gives the two profiles.
 */
async function startProfile(): Promise<() => Promise<{ profile: unknown; heap: unknown }>> {
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      session.post(method, params, (e, r) => (e ? reject(e) : resolve(r as Record<string, unknown>))),
    );
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 500 });
  await post('Profiler.start');
  await post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    const { profile } = await post('Profiler.stop');
    const { profile: heap } = await post('HeapProfiler.stopSampling');
    session.disconnect();
    return { profile, heap };
  };
}

const alive = (pid: number, startKey?: string) => {
  const f = stat(pid);
  return !!f && f[0] !== 'Z' && f[0] !== 'X' && (startKey === undefined || f[19] === startKey);
};

async function escapeOnce(api: AgentTreesTestExports, capMs: number): Promise<HostEscape> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-bench-escape-'));
  const file = path.join(dir, 'daemon');
  const script =
    'while [ ! -e "$0.go" ]; do sleep 0.1; done; setsid -f sh -c \'echo "$$" > "$0"; exec sleep 120 </dev/null >/dev/null 2>&1\' "$0" </dev/null >/dev/null 2>&1; exec sleep 120';
  const id = await api.launch({ name: 'escaping', command: 'sh', args: ['-c', script, file], kind: 'mcp', timeoutSeconds: 0 });
  try {
    const root = api.list().find((t) => t.id === id)!.rootPid;
    await until('the view to show the root', () => (api.testHooks.viewRefresh().shown[`run:${id}`] ?? []).includes(root), 15_000);
    // A moment unrelated to the 10 s full-scan clock: somewhere within it.
    await sleep(Math.random() * 10_000);
    const goAt = Date.now();
    fs.writeFileSync(`${file}.go`, '');
    let daemon = 0;
    await until('the daemon', () => (daemon = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() || 0 : 0)) > 0, 10_000);
    const startKey = stat(daemon)?.[19];
    let shownAt: number | undefined;
    const deadline = goAt + capMs;
    while (!shownAt && Date.now() < deadline) {
      if ((api.testHooks.viewRefresh().shown[`run:${id}`] ?? []).includes(daemon)) shownAt = Date.now();
      else await sleep(20);
    }
    const k0 = performance.now();
    let returned = 0;
    const call = api.kill(id).then((r) => {
      returned = performance.now() - k0;
      return r;
    });
    let dead = 0;
    while (alive(daemon, startKey) && performance.now() - k0 < 10_000) await sleep(1);
    if (!alive(daemon, startKey)) dead = performance.now() - k0;
    const report = await call;
    return { shownMs: shownAt ? shownAt - goAt : undefined, killDeadMs: dead, killReturnedMs: returned, survivors: report.survivors };
  } finally {
    await api.kill(id);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const out = process.env.AGENT_TREES_VIEW_BENCH_OUT!;
  const tree = process.env.AGENT_TREES_VIEW_BENCH_TREE!;
  const windowS = Number(process.env.AGENT_TREES_VIEW_BENCH_WINDOW_S || 20);
  const rounds = Number(process.env.AGENT_TREES_VIEW_BENCH_ROUNDS || 3);
  const escapes = Number(process.env.AGENT_TREES_VIEW_BENCH_ESCAPES || 2);
  const profileDir = process.env.AGENT_TREES_VIEW_BENCH_PROFILE;
  const api = await vscode.extensions.getExtension<AgentTreesTestExports>('agent-trees.agent-trees')!.activate();
  const result: HostViewResult = {
    tier: '',
    hostPid: process.pid,
    windows: [],
    escapes: [],
    agentMembers: 0,
    terminalProcesses: 0,
    errors: [],
  };
  const terminals: vscode.Terminal[] = [];
  let agent: string | undefined;
  try {
    agent = await api.launch({ name: 'bench-agent', command: tree, args: ['20', '1200'], timeoutSeconds: 3600 });
    await until("the agent's 20 processes", () => (api.list().find((t) => t.id === agent)?.members.length ?? 0) === 20, 30_000);
    result.agentMembers = 20;
    for (let i = 0; i < 3; i++) {
      terminals.push(
        vscode.window.createTerminal({
          name: `bench terminal ${i + 1}`,
          shellPath: '/bin/sh',
          shellArgs: ['-c', 'sleep 1200 & sleep 1200 & sleep 1200 & sleep 1200 & wait'],
        }),
      );
    }
    const shells = await Promise.all(terminals.map((t) => t.processId));
    await until('three terminals of 5 processes', () => shells.every((pid) => pid !== undefined && childrenOf(pid).length === 4), 30_000);
    result.terminalProcesses = shells.length * 5;
    const record = fs.readFileSync(path.join(api.recordsDir, `${process.pid}.json`), 'utf8');
    result.tier = JSON.parse(record).trees[0].cgroup ? 'cgroup' : 'group';

    // Warm-up, not measured: the refresh once (its caches: command lines, environments), then the host settles
    // after start-up.
    await show(api, true);
    const warm = api.testHooks.viewRefresh().refreshes;
    await until('three refreshes', () => api.testHooks.viewRefresh().refreshes >= warm + 3, 20_000);
    await show(api, false);
    await sleep(15_000);

    const conditions: HostCondition[] = ['hidden', 'visible-tracked'];
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < conditions.length; k++) {
        const condition = conditions[(k + round) % conditions.length];
        await show(api, condition !== 'hidden');
        if (condition !== 'hidden') {
          const r0 = api.testHooks.viewRefresh().refreshes;
          await until('two refreshes', () => api.testHooks.viewRefresh().refreshes >= r0 + 2, 15_000);
        } else {
          await sleep(2000);
        }
        const processes = processCount();
        const profiling = profileDir ? await startProfile() : undefined;
        const w = await measureWindow(api, windowS, hostCpuMs);
        if (profiling) {
          const { profile, heap } = await profiling();
          fs.writeFileSync(path.join(profileDir!, `${condition}-${round}.cpuprofile`), JSON.stringify(profile));
          fs.writeFileSync(path.join(profileDir!, `${condition}-${round}.heapprofile`), JSON.stringify(heap));
        }
        const [s0, s1] = [w.before, w.after];
        result.windows.push({
          condition,
          round,
          seconds: w.seconds,
          cpuMs: w.cpuMs,
          pct: w.pct,
          refreshes: s1.refreshes - s0.refreshes,
          fullScans: s1.fullScans - s0.fullScans,
          inWorker: s1.inWorker - s0.inWorker,
          processReads: s1.processReads - s0.processReads,
          processes,
        });
      }
    }
    await show(api, true);
    for (let i = 0; i < escapes; i++) result.escapes.push(await escapeOnce(api, 30_000));
  } catch (e) {
    result.errors.push(String((e as Error).stack ?? e));
  } finally {
    if (agent) await api.kill(agent).catch(() => undefined);
    for (const t of terminals) t.dispose();
    fs.writeFileSync(out, JSON.stringify(result, null, 2));
    writeSuiteResult('view bench', result.errors);
  }
  if (result.errors.length) throw new Error(result.errors[0]);
}
