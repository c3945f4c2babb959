// Other extensions' processes of this extension host, with the stand-ins of Claude Code's and Codex's extensions
// loaded beside Agent Trees (the real Agent SDK with its own claude kept in the stand-in's folder, two stdio MCP
// servers of which ours starts a setsid child and ignores SIGTERM; one shared real `codex app-server`): the view
// lists each under its extension, Kill from the view ends them, the record names them, the modes and the keep list
// are honoured, and the window's terminals never carry the host's mark.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { KillPickItem } from '../../src/extension/testHooks';
import { api, testHooks } from './fixtures';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import {
  allGone,
  CLAUDE_STAND_IN,
  CODEX_STAND_IN,
  pidsUnder,
  processRows,
  startClaudeSession,
  startCodexAppServer,
  viewRow,
  waitShownAndRecorded,
  withStarts,
} from './standInFixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');
const setting = (key: string, value: unknown) => config().update(key, value, vscode.ConfigurationTarget.Global);

describe("other extensions' processes, with the stand-ins of Claude Code's and Codex's extensions", function () {
  this.timeout(120_000);

  before(async () => {
    await api();
    for (const id of [CLAUDE_STAND_IN, CODEX_STAND_IN]) await vscode.extensions.getExtension(id)!.activate();
    await setting('killGraceSeconds', 1);
  });
  after(async () => {
    await vscode.commands.executeCommand('agentTreesStandIn.claudeCode.stopSession');
    await vscode.commands.executeCommand('agentTreesStandIn.codex.stop');
    for (const key of ['killGraceSeconds', 'otherExtensions.mode', 'otherExtensions.keep']) await setting(key, undefined);
  });

  it("marks what this host starts, and the terminals never: they are the pty host's", async () => {
    const { mark } = await (await testHooks()).otherExtensions();
    const me = processes.readStat(process.pid)!;
    assert.strictEqual(mark, `${process.pid}:${me.startTicks}`);
    assert.strictEqual(process.env.AGENT_TREES_HOST, mark, "in this host's own environment");
    const terminal = vscode.window.createTerminal({ name: 'it-no-mark', shellPath: '/bin/bash' });
    try {
      const shell = await terminal.processId;
      assert.ok(shell);
      await waitFor('the shell to be readable', () => processes.readEnviron(shell) !== undefined);
      assert.strictEqual(processes.envOf(shell, 'AGENT_TREES_HOST'), undefined, "the terminal's shell has no mark");
    } finally {
      terminal.dispose();
    }
  });

  it("lists the session under the Claude Code stand-in (claude, both MCP servers, the setsid child) and the app-server under Codex's", async () => {
    const session = await startClaudeSession();
    const appServer = await startCodexAppServer();
    for (const pid of [...session.pids, appServer])
      assert.strictEqual(processes.envOf(pid, 'AGENT_TREES_HOST'), process.env.AGENT_TREES_HOST, `${pid} carries the mark`);
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    const state = await waitShownAndRecorded(CODEX_STAND_IN, [appServer]);
    assert.ok(
      state.recorded!.keep.some((k) => k.extensionId === 'agent-trees.agent-trees'),
      "Agent Trees' own are never ended",
    );

    const section = await viewRow('otherExtensions');
    assert.ok(section, 'the view has the section');
    const claude = section.children.find((r) => r.id === `hostExtension:${CLAUDE_STAND_IN}`);
    assert.ok(claude, `a row for the stand-in: ${section.children.map((r) => r.label).join(', ')}`);
    assert.strictEqual(claude.label, 'Claude Code (stand-in)');
    assert.strictEqual(claude.contextValue, 'otherExtension');
    const shown = pidsUnder(claude);
    assert.match(claude.description ?? '', new RegExp(`^${shown.length} processes · \\d+% CPU · `));
    for (const pid of session.pids) assert.ok(shown.includes(pid), `${pid} shown under the stand-in`);
    const claudeRow = processRows(claude).find((r) => r.target.kind === 'process' && r.target.pid === session.claudePid)!;
    assert.deepStrictEqual(
      claudeRow.children.map((r) => (r.target.kind === 'process' ? r.target.pid : 0)).sort(),
      session.mcp.map((m) => m.pid).sort(),
      'its MCP servers beneath claude',
    );
    const codex = section.children.find((r) => r.id === `hostExtension:${CODEX_STAND_IN}`)!;
    assert.ok(pidsUnder(codex).includes(appServer), 'the shared app-server under the Codex stand-in');
    assert.ok(!section.children.some((r) => r.id === 'hostExtension:agent-trees.agent-trees'), "never Agent Trees' own");
  });

  it('Kill Process and Its Children on the claude row ends the whole session; the app-server runs on', async () => {
    const session = await startClaudeSession();
    const appServer = await startCodexAppServer();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    const claude = await viewRow(`hostExtension:${CLAUDE_STAND_IN}`);
    const row = processRows(claude!).find((r) => r.target.kind === 'process' && r.target.pid === session.claudePid);
    assert.ok(row);
    const pids = withStarts(session.pids);
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killProcess', row);
    assert.deepStrictEqual(await allGone(pids), [], 'claude, its MCP servers, the helper tree and its setsid child');
    assert.strictEqual(result.survivors, 0);
    assert.ok(result.signalled >= session.pids.length, JSON.stringify(result));
    assert.ok(processes.isAlive(appServer), "another extension's process runs on");
  });

  it("an extension's row ends all of its processes, once the user said yes", async () => {
    const a = await startClaudeSession();
    const b = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, [...a.pids, ...b.pids]);
    const row = await viewRow(`hostExtension:${CLAUDE_STAND_IN}`);
    const pids = withStarts([...a.pids, ...b.pids]);
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', row, {
      confirmed: true,
    });
    assert.deepStrictEqual(await allGone(pids), []);
    assert.strictEqual(result.survivors, 0);
  });

  it("an extension's row ends nothing until the user says yes", async () => {
    const session = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    const row = (await viewRow(`hostExtension:${CLAUDE_STAND_IN}`))!;
    // It asks in a modal dialog; a test host shows none (VS Code refuses dialogs while extension tests run, and the
    // question comes back unanswered): so nothing is ended.
    const answer = await Promise.resolve(vscode.commands.executeCommand('agentTrees.killTree', row)).then(
      (r) => r,
      (e: Error) => e.message,
    );
    assert.ok(answer === undefined || /dialog/i.test(String(answer)), `no kill: ${JSON.stringify(answer)}`);
    assert.ok(
      session.pids.every((p) => processes.isAlive(p)),
      'they run on',
    );
  });

  it("Kill Agent Tree's pick lists another extension's process trees; picking claude's ends its session", async () => {
    const session = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    let offered: KillPickItem[] = [];
    (await testHooks()).answerKillPick((items) => {
      offered = items;
      const i = items.findIndex(
        (it) =>
          it.detail === 'Started by the extension Claude Code (stand-in)' &&
          (it.description ?? '').startsWith(`pid ${session.claudePid} ·`),
      );
      return i < 0 ? undefined : i;
    });
    const pids = withStarts(session.pids);
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number } | undefined>('agentTrees.killTree');
    assert.ok(result, `claude's tree among the picks: ${JSON.stringify(offered)}`);
    assert.deepStrictEqual(await allGone(pids), [], 'claude, its MCP servers, the helper tree and its setsid child');
    assert.strictEqual(result.survivors, 0);
  });

  it('what an exited process left shows under "left by an exited process", and that row ends it without asking', async () => {
    const session = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    const pids = withStarts(session.pids);
    // claude dies alone: our MCP server outlives its stdin, with its helper tree and the setsid child.
    process.kill(session.claudePid, 'SIGKILL');
    const hooks = await testHooks();
    let left: number[] = [];
    await waitFor(
      () => `the setsid child ${session.setsidChild} under what an exited process left: ${left.join(', ')}`,
      async () => {
        left = (await hooks.otherExtensions(true)).extensions.find((e) => e.id === CLAUDE_STAND_IN)?.left ?? [];
        return left.includes(session.setsidChild);
      },
      20_000,
    );
    const row = await viewRow(`hostLeft:${CLAUDE_STAND_IN}`);
    assert.ok(row, 'a row for what was left');
    assert.strictEqual(row.contextValue, 'hostLeftovers');
    assert.ok(pidsUnder(row).includes(session.setsidChild), `the setsid child beneath it: ${pidsUnder(row).join(', ')}`);
    assert.ok(!pidsUnder(row).includes(session.claudePid), 'not claude, which exited');
    // No question: these are what an exited process left (a test host would refuse a dialog, and end nothing).
    const result = await vscode.commands.executeCommand<{ signalled: number; survivors: number } | undefined>('agentTrees.killTree', row);
    assert.ok(result, 'ended without a question');
    assert.deepStrictEqual(await allGone(pids), [], 'everything the session left');
    assert.strictEqual(result.survivors, 0);
  });

  it('"keep" records nothing to end, "off" shows nothing, tracks nothing and marks nothing; the keep list goes into the record', async () => {
    const hooks = await testHooks();
    const recordFile = path.join((await api()).recordsDir, `${process.pid}.json`);
    const recordOf = () => (fs.existsSync(recordFile) ? JSON.parse(fs.readFileSync(recordFile, 'utf8')) : undefined);
    const mark = (await hooks.otherExtensions()).mark;
    try {
      await setting('otherExtensions.keep', [CODEX_STAND_IN]);
      const codexFolder = vscode.extensions.getExtension(CODEX_STAND_IN)!.extensionPath;
      await waitFor('the record to keep the Codex stand-in by its folder', () =>
        recordOf()?.hostProcesses?.keep.some(
          (k: { extensionId: string; folder: string }) => k.extensionId === CODEX_STAND_IN && k.folder === codexFolder,
        ),
      );
      await setting('otherExtensions.mode', 'keep');
      await waitFor('nothing to end in the record', () => recordOf()?.hostProcesses === undefined);
      assert.strictEqual((await hooks.otherExtensions()).enabled, true, 'still shown');
      await setting('otherExtensions.mode', 'off');
      await waitFor('no mark', () => process.env.AGENT_TREES_HOST === undefined);
      const off = await hooks.otherExtensions(true);
      assert.strictEqual(off.enabled, false);
      assert.deepStrictEqual(off.extensions, []);
      assert.strictEqual(await viewRow('otherExtensions'), undefined, 'no section');
    } finally {
      await setting('otherExtensions.mode', undefined);
      await setting('otherExtensions.keep', undefined);
    }
    await waitFor('marked again', () => process.env.AGENT_TREES_HOST === mark);
    await waitFor('the record to name the mark', () => recordOf()?.hostProcesses?.mark === mark);
  });
});
