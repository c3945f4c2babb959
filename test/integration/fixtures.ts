// Shared by the integration tests: pid files of fixture trees, the extension's API, and what a phase hands over to the
// next (test/support has the fixtures' pids and the waiting).
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestExports, AgentTreesTestHooks } from '../../src/extension/testHooks';
import { EXTENSION_ID, log } from './harness';
import { processes, REPO, tmpDir } from '../support/repo';
import { waitFor } from '../support/wait';

/** A pid file for a fixture tree (test/fixtures/tree.sh), in a folder of its own. */
export function pidFile(): string {
  return path.join(tmpDir('agent-trees-it-'), 'pids');
}

export async function api(): Promise<AgentTreesApi> {
  return vscode.extensions.getExtension<AgentTreesApi>(EXTENSION_ID)!.activate();
}

/** The test hooks the exports carry in this host (the suite runs the extension in `ExtensionMode.Test`). */
export async function testHooks(): Promise<AgentTreesTestHooks> {
  const exports: Partial<AgentTreesTestExports> = await vscode.extensions.getExtension<AgentTreesTestExports>(EXTENSION_ID)!.activate();
  assert.ok(exports.testHooks, 'the exports of an extension host running tests carry testHooks');
  return exports.testHooks;
}

/**
 * Gives the calling suite a 1 s kill grace (its fixtures ignore SIGTERM: each kill waits out the grace) and puts the
 * default back when the suite ends. Call it inside `describe`, where its hooks are to run among the suite's own.
 */
export function shortKillGrace(): void {
  const setGrace = (seconds: number | undefined) =>
    vscode.workspace.getConfiguration('agentTrees').update('killGraceSeconds', seconds, vscode.ConfigurationTarget.Global);
  before(() => setGrace(1));
  after(() => setGrace(undefined));
}

/** What a phase leaves for the next one to check: this host, its record file, its processes and their trees' cgroups. */
export interface HostHandover {
  hostPid: number;
  recordFile: string;
  helpers: { pid: number; startTicks: number }[];
  /** The cgroups of the agent trees the helpers run in (none without the cgroup tier). */
  cgroups: string[];
}

function handoverFile(trees: AgentTreesApi, name: string): string {
  return path.join(path.dirname(trees.recordsDir), `${name}-handover.json`);
}

/** Writes the handover for `pids` (processes of this host's trees) into the extension's global storage. */
export async function writeHandover(name: string, pids: number[]): Promise<HostHandover> {
  const trees = await api();
  const handover: HostHandover = {
    hostPid: process.pid,
    recordFile: path.join(trees.recordsDir, `${process.pid}.json`),
    helpers: pids.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks })),
    cgroups: [...new Set(pids.map((pid) => processes.agentTreeCgroupOf(pid)).filter((c): c is string => c !== undefined))],
  };
  assert.ok(fs.existsSync(handover.recordFile), 'this host records its trees');
  fs.writeFileSync(handoverFile(trees, name), JSON.stringify(handover));
  return handover;
}

export async function readHandover(name: string): Promise<HostHandover & { alive(): number[]; cgroupsLeft(): string[] }> {
  const handover: HostHandover = JSON.parse(fs.readFileSync(handoverFile(await api(), name), 'utf8'));
  assert.notStrictEqual(process.pid, handover.hostPid, 'a new extension host');
  return {
    ...handover,
    alive: () => handover.helpers.filter((h) => processes.isAlive(h.pid, h.startTicks)).map((h) => h.pid),
    cgroupsLeft: () => handover.cgroups.filter((dir) => fs.existsSync(dir)),
  };
}

/** What test/fixtures/monitor.js saw, in ms since boot. */
export interface MonitorReport {
  startedAt: number;
  hostGoneAt: number | null;
  processesGoneAt: number | null;
  recordGoneAt: number | null;
  survivors: number[];
  done?: boolean;
}

/**
 * How long a monitor and the trees it watches live at most: longer than the phase they start in (up to its 240 s
 * timeout), since the host is killed only at the end of the phase; they end as soon as everything is gone.
 */
export const PHASE_OUTLIVING_S = 600;

/**
 * Starts a helper of the harness outside this extension host, so that it is none of the host's processes (which
 * Agent Trees ends when the host is gone: see src/proc/hostChildren): without the host's mark (`AGENT_TREES_HOST`),
 * and re-parented to PID 1 at once (`setsid -f`), no parent link or mark leads to it. What must outlive a phase
 * (a monitor, a child a later phase looks at) is started this way. Resolves with its pid.
 */
export async function startOutsideHost(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-outside-')), 'pid');
  const outside: NodeJS.ProcessEnv = { ...process.env, ELECTRON_RUN_AS_NODE: '1', ...env };
  delete outside.AGENT_TREES_HOST;
  const script = 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"';
  spawn('setsid', ['-f', 'sh', '-c', script, pidFile, command, ...args], { stdio: 'ignore', env: outside }).unref();
  await waitFor(`${command} to start`, () => fs.existsSync(pidFile), 10_000);
  return Number(fs.readFileSync(pidFile, 'utf8').trim());
}

/**
 * Starts test/fixtures/monitor.js outside every tree and outside this host (startOutsideHost): it watches this
 * host, `pids` and `recordFile`, and writes when each was gone to `<global storage>/<name>-monitor.json`.
 */
export async function startMonitor(name: string, recordFile: string, pids: number[]): Promise<string> {
  const trees = await api();
  const out = path.join(path.dirname(trees.recordsDir), `${name}-monitor.json`);
  fs.rmSync(out, { force: true });
  const spec = {
    host: { pid: process.pid, startTicks: processes.readStat(process.pid)!.startTicks },
    record: recordFile,
    processes: pids.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks })),
  };
  await startOutsideHost(process.execPath, [path.join(REPO, 'test', 'fixtures', 'monitor.js'), out, JSON.stringify(spec)], {
    LIFETIME: String(PHASE_OUTLIVING_S),
  });
  await waitFor('the monitor started', () => fs.existsSync(out), 10_000);
  return out;
}

/** The monitor's report once it is done (everything gone) or gave up; fails if it never finishes. */
export async function monitorReport(out: string, timeoutMs = 60_000): Promise<MonitorReport> {
  const read = (): MonitorReport | undefined => {
    try {
      return JSON.parse(fs.readFileSync(out, 'utf8'));
    } catch {
      return undefined;
    }
  };
  await waitFor(
    () => `the monitor (${out}) did not finish`,
    () => read()?.done !== undefined,
    timeoutMs,
  );
  return read()!;
}

/** When this process started, in ms since boot (the monitor's clock). */
export function startedAtMs(pid = process.pid): number {
  return Number(processes.readStat(pid)!.startTicks) * 10;
}

/**
 * Before a host is killed (crash, server-kill): hands its helpers (`pids`, processes of its trees) over to the
 * next phase and starts the monitor that timestamps their end and its record's. Then the test asks for the kill.
 */
export async function watchAfterHostKill(name: string, pids: number[]): Promise<void> {
  const handover = await writeHandover(name, pids);
  await startMonitor(name, handover.recordFile, pids);
}

/**
 * The phase after the kill: the killed host's watchdog ended every helper and removed its record before this
 * window's host even started (the monitor's report), and none of them runs now. `how`: the kill, for the log.
 */
export async function checkEndedBeforeThisHost(name: string, how: string): Promise<void> {
  const handover = await readHandover(name);
  assert.ok(!processes.isAlive(handover.hostPid), 'the old host is dead');
  const report = await monitorReport(path.join(path.dirname((await api()).recordsDir), `${name}-monitor.json`));
  assert.deepStrictEqual(report.survivors, [], 'no survivor');
  assert.ok(
    report.done && report.hostGoneAt !== null && report.processesGoneAt !== null && report.recordGoneAt !== null,
    JSON.stringify(report),
  );
  const thisHostStarted = startedAtMs();
  log(
    `[${name}] after ${how}: host ${handover.hostPid}'s ${handover.helpers.length} processes were gone in ` +
      `${report.processesGoneAt! - report.hostGoneAt!} ms, its record in ${report.recordGoneAt! - report.hostGoneAt!} ms; ` +
      `this window's host started ${thisHostStarted - report.recordGoneAt!} ms later`,
  );
  assert.ok(report.recordGoneAt! < thisHostStarted && report.processesGoneAt! < thisHostStarted, 'done before this window existed');
  assert.deepStrictEqual(handover.alive(), []);
  assert.deepStrictEqual(handover.cgroupsLeft(), [], "the watchdog removed the trees' cgroups");
}
