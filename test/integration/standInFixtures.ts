// Shared by the integration tests that run with the stand-in extensions loaded beside Agent Trees
// (runTests.js --extension test/fixtures/extensions/claude-code --extension test/fixtures/extensions/codex; the
// `*.standIns.*` files): their sessions and app-server, and what Agent Trees shows and records of them.
import * as assert from 'assert';
import * as path from 'path';
import * as vscode from 'vscode';
import type { HostProcessesRecord } from '../../src/proc';
import type { ApiRow, OtherExtensionsState } from '../../src/extension/testHooks';
import { testHooks } from './fixtures';
import { REPO, processes } from '../support/repo';
import { waitFor } from '../support/wait';

export const CLAUDE_STAND_IN = 'agent-trees-tests.claude-code-stand-in';
export const CODEX_STAND_IN = 'agent-trees-tests.codex-stand-in';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the stand-in's plain JavaScript, by path
const session: { waitForOurServer(pidFile: string, timeoutMs?: number): Promise<Record<string, number>> } = require(
  path.join(REPO, 'test', 'fixtures', 'extensions', 'claude-code', 'session.js'),
);

export interface StandInSession {
  id: string;
  claudePid: number;
  mcp: { pid: number; name: string }[];
  pidFile: string;
  /** claude, its two MCP servers, our server's helper tree (its root and its setsid child). */
  pids: number[];
  /** The setsid child of our MCP server's helper tree (`sleep <lifetime>`). */
  setsidChild: number;
}

/** Starts a Claude Code stand-in session (the real Agent SDK and claude); resolves once every process of it runs. */
export async function startClaudeSession(options: Record<string, unknown> = {}): Promise<StandInSession> {
  const s = await vscode.commands.executeCommand<Omit<StandInSession, 'pids' | 'setsidChild'>>(
    'agentTreesStandIn.claudeCode.startSession',
    options,
  );
  const ours = await session.waitForOurServer(s.pidFile);
  const pids = [s.claudePid, ...s.mcp.map((m) => m.pid), ours.root, ours.setsid];
  assert.ok(
    pids.every((p) => p > 0 && processes.isAlive(p)),
    `the session runs: ${pids.join(', ')}`,
  );
  return { ...s, pids, setsidChild: ours.setsid };
}

/** The Codex stand-in's one shared app-server: its pid. */
export async function startCodexAppServer(): Promise<number> {
  const info = await vscode.commands.executeCommand<{ pid: number }>('agentTreesStandIn.codex.start', {});
  assert.ok(info && processes.isAlive(info.pid), 'the app-server runs');
  return info.pid;
}

/** Looks until `pids` are all shown as `extensionId`'s and the record names them; returns the last state. */
export async function waitShownAndRecorded(extensionId: string, pids: number[], timeoutMs = 30_000): Promise<OtherExtensionsState> {
  const hooks = await testHooks();
  let state: OtherExtensionsState | undefined;
  const done = async () => {
    state = await hooks.otherExtensions(true);
    const shown = state.extensions.find((e) => e.id === extensionId);
    const all = [...(shown?.pids ?? []), ...(shown?.left ?? [])];
    const recorded = new Set((state.recorded?.seen ?? []).filter((s) => s.extensionId === extensionId).map((s) => s.pid));
    return pids.every((p) => all.includes(p) && recorded.has(p));
  };
  const until = Date.now() + timeoutMs;
  while (!(await done())) {
    assert.ok(Date.now() < until, `not all of ${pids.join(', ')} shown and recorded as ${extensionId}: ${JSON.stringify(state)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  return state!;
}

/** The view's rows after a fresh look, and the row of `id` (depth first), if any. */
export async function viewRow(id: string): Promise<ApiRow | undefined> {
  const rows = await (await testHooks()).view();
  const find = (list: ApiRow[]): ApiRow | undefined => {
    for (const r of list) {
      if (r.id === id) return r;
      const inner = find(r.children);
      if (inner) return inner;
    }
    return undefined;
  };
  return find(rows);
}

/** Process rows beneath `row`, depth first. */
export function processRows(row: ApiRow): ApiRow[] {
  return row.children.flatMap((c) => [...(c.target.kind === 'process' ? [c] : []), ...processRows(c)]);
}

/** The pids of `row`'s process rows. */
export const pidsUnder = (row: ApiRow) => processRows(row).map((r) => (r.target.kind === 'process' ? r.target.pid : 0));

/** Waits until none of `pids` runs; resolves with those still running at the deadline (the caller names them). */
export async function allGone(pids: { pid: number; startTicks: number }[], timeoutMs = 15_000): Promise<number[]> {
  await waitFor('all gone', () => pids.every((p) => !processes.isAlive(p.pid, p.startTicks)), timeoutMs).catch(() => undefined);
  return pids.filter((p) => processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid);
}

/** Each pid with its start time, as it runs now. */
export const withStarts = (pids: number[]) => pids.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks }));

export type { HostProcessesRecord };
