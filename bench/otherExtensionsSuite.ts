/**
 * A suite module for the real-host runner (scripts/host/runTests.js, with the stand-in extensions loaded) that
 * measures what other extensions' processes cost the extension host (issue 22): 15 children of the host, 14
 * language-server-like sleepers and one Claude Code stand-in session (the real Agent SDK's claude, two MCP servers,
 * our server's helper tree: 19 processes in all). The host's own CPU (every thread's time on a CPU,
 * /proc/self/task/<tid>/schedstat, ns) over windows of four conditions, rotated round by round:
 *   - off, hidden: `agentTrees.otherExtensions.mode: "off"` and the view hidden (nothing of them is read);
 *   - end, hidden: the default, view hidden: the bounded look that keeps the record true (every 5 s), the record's
 *     rewrites, and the window lease's round trip (1 Hz) while the record names processes to end;
 *   - end, visible: the view at 1 Hz, the section included;
 *   - off, visible: the view at 1 Hz without the section.
 *
 * In:  AGENT_TREES_OTHERS_BENCH_OUT (JSON result), _WINDOW_S, _ROUNDS.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { AgentTreesTestExports } from '../src/extension/testHooks';
import { measureWindow, show, sleep, until, writeSuiteResult } from './hostSuite';

export type OthersCondition = 'off-hidden' | 'end-hidden' | 'end-visible' | 'off-visible';

export interface OthersWindow {
  condition: OthersCondition;
  round: number;
  seconds: number;
  /** Time on a CPU of every thread of the extension host over the window, ms. */
  cpuMs: number;
  pct: number;
  refreshes: number;
  processReads: number;
  /** The host's processes of other extensions the section showed at the end of the window. */
  shown: number;
}

export interface OthersResult {
  hostPid: number;
  hostChildren: number;
  processes: number;
  /** Record rewrites while the machine was steady (the last window of "end"). */
  recordWrites: number;
  windows: OthersWindow[];
  errors: string[];
}

/** Every thread's time on a CPU so far, ns (a thread that never runs adds nothing, unlike 10 ms ticks). */
function hostCpuNs(): number {
  let ns = 0;
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      ns += Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      /* a thread that ended */
    }
  }
  return ns;
}

async function setMode(api: AgentTreesTestExports, mode: 'end' | 'off'): Promise<void> {
  await vscode.workspace
    .getConfiguration('agentTrees')
    .update('otherExtensions.mode', mode === 'end' ? undefined : mode, vscode.ConfigurationTarget.Global);
  await until(`mode ${mode}`, async () => (await api.testHooks.otherExtensions()).enabled === (mode === 'end'), 10_000);
}

export async function run(): Promise<void> {
  const out = process.env.AGENT_TREES_OTHERS_BENCH_OUT!;
  const windowS = Number(process.env.AGENT_TREES_OTHERS_BENCH_WINDOW_S || 20);
  const rounds = Number(process.env.AGENT_TREES_OTHERS_BENCH_ROUNDS || 4);
  const api = await vscode.extensions.getExtension<AgentTreesTestExports>('agent-trees.agent-trees')!.activate();
  const result: OthersResult = { hostPid: process.pid, hostChildren: 0, processes: 0, recordWrites: 0, windows: [], errors: [] };
  const sleepers: ChildProcess[] = [];
  try {
    // 14 language servers (sleepers, as an extension starts its servers) and one agent session.
    for (let i = 0; i < 14; i++) sleepers.push(spawn('sleep', ['1200'], { stdio: 'ignore' }));
    await vscode.extensions.getExtension('agent-trees-tests.claude-code-stand-in')!.activate();
    const session = await vscode.commands.executeCommand<{ claudePid: number }>('agentTreesStandIn.claudeCode.startSession', {});
    result.hostChildren = sleepers.length + 1;
    await until(
      'the section to show the 15 children and their descendants',
      async () => {
        const s = await api.testHooks.otherExtensions(true);
        const pids = s.extensions.flatMap((e) => [...e.pids, ...e.left]);
        result.processes = pids.length;
        return pids.includes(session.claudePid) && sleepers.every((c) => pids.includes(c.pid!)) && pids.length >= 19;
      },
      60_000,
    );
    // Warm-up, not measured: the view once (its caches), then the host settles.
    await show(api, true);
    const warm = api.testHooks.viewRefresh().refreshes;
    await until('three refreshes', () => api.testHooks.viewRefresh().refreshes >= warm + 3, 20_000);
    await show(api, false);
    await sleep(10_000);

    const conditions: OthersCondition[] = ['off-hidden', 'end-hidden', 'end-visible', 'off-visible'];
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < conditions.length; k++) {
        const condition = conditions[(k + round) % conditions.length];
        await setMode(api, condition.startsWith('end') ? 'end' : 'off');
        await show(api, condition.endsWith('visible'));
        await sleep(6000); // a hidden look and the record's first write in this condition are behind us
        const record = `${api.recordsDir}/${process.pid}.json`;
        const inode = () => (fs.existsSync(record) ? fs.statSync(record).ino : 0);
        let writes = 0;
        let last = inode();
        const watch = setInterval(() => {
          const now = inode();
          if (now !== last) writes++;
          last = now;
        }, 100);
        const w = await measureWindow(api, windowS, () => hostCpuNs() / 1e6);
        clearInterval(watch);
        if (condition === 'end-hidden') result.recordWrites += writes;
        const shown = (await api.testHooks.otherExtensions()).extensions.reduce((n, e) => n + e.pids.length + e.left.length, 0);
        result.windows.push({
          condition,
          round,
          seconds: w.seconds,
          cpuMs: w.cpuMs,
          pct: w.pct,
          refreshes: w.after.refreshes - w.before.refreshes,
          processReads: w.after.processReads - w.before.processReads,
          shown,
        });
      }
    }
  } catch (e) {
    result.errors.push(String((e as Error).stack ?? e));
  } finally {
    await vscode.workspace.getConfiguration('agentTrees').update('otherExtensions.mode', undefined, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('agentTreesStandIn.claudeCode.stopSession').then(undefined, () => undefined);
    for (const c of sleepers) c.kill('SIGKILL');
    fs.writeFileSync(out, JSON.stringify(result, null, 2));
    writeSuiteResult('other extensions bench', result.errors);
  }
  if (result.errors.length) throw new Error(result.errors[0]);
}
