// Nothing of other extensions outlives the extension host, with the stand-ins of Claude Code's and Codex's extensions:
//   - phases 1-2: a Claude Code session runs (claude, two MCP servers, our server's setsid child), and a decoy with
//     the setsid child's very command line runs outside the host (started from a terminal). Phase 1 SIGKILLs the
//     host (code-server frozen: no window opens again); its watchdog ends the session, as a monitor outside the
//     host timestamps; phase 2 finds all of it gone before its own host started, and the decoy alive;
//   - phases 3-4: the same with the Claude Code stand-in in agentTrees.otherExtensions.keep: its session lives on;
//   - phase 5: a session runs, and a terminal with a child; the window reloads. In the host the reload starts
//     (otherExtensionsLifetime.standIns.afterReload.test.ts): the session gone once the old host is, the
//     terminal and its child kept.
// (Codex's app-server is no witness here: it exits by itself when its stdin closes with the host.)
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { api, checkEndedBeforeThisHost, pidFile, startMonitor, watchAfterHostKill } from './fixtures';
import { inPhase, killHostAfterResult, log, reloadWindowAfterResult } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { CLAUDE_STAND_IN, startClaudeSession, waitShownAndRecorded } from './standInFixtures';
import { HOST_MARK_VARIABLE } from '../../src/proc/platform/processTable';

const config = () => vscode.workspace.getConfiguration('agentTrees');

interface Outsiders {
  decoy: { pid: number; startTicks: number };
}

async function outsidersFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'standins-outsiders.json');
}

/**
 * A terminal of the window running `command`: as a job of its shell, or (`ownSession`) in a session of its own, so
 * that the end of the terminal (its pty host killed between phases) does not end it. Resolves with the pid.
 */
async function inTerminal(
  name: string,
  command: string,
  ownSession: boolean,
  env?: Record<string, string | undefined>,
): Promise<{ terminal: vscode.Terminal; pid: number }> {
  const terminal = vscode.window.createTerminal({ name, shellPath: '/bin/bash', env });
  const file = pidFile();
  terminal.sendText(ownSession ? `setsid -f sh -c 'echo $$ > "$0"; exec ${command}' ${file}` : `${command} & echo $! > ${file}`);
  await waitFor(`${command} started in the terminal`, () => fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n'), 10_000);
  return { terminal, pid: Number(fs.readFileSync(file, 'utf8').trim()) };
}

const identityOf = (pid: number) => ({ pid, startTicks: processes.readStat(pid)!.startTicks });

inPhase(1, 'other extensions: a session and a decoy, then the host is SIGKILLed', () => {
  it('leaves a session of the Claude Code stand-in, and a decoy outside the host with the command line of one of its processes', async function () {
    this.timeout(90_000);
    await api();
    const session = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    // The decoy: our MCP server's setsid child's command line (`sleep <lifetime>`), started outside the host.
    const decoyCommand = processes.commandLine(session.setsidChild);
    const { pid: decoy } = await inTerminal('it-decoy', decoyCommand, true);
    assert.strictEqual(processes.commandLine(decoy), decoyCommand);
    const outsiders: Outsiders = { decoy: identityOf(decoy) };
    fs.writeFileSync(await outsidersFile(), JSON.stringify(outsiders));
    await watchAfterHostKill('standins-crash', session.pids);
    log(`[standins-crash] host ${process.pid}: session ${session.pids.join(', ')}; decoy ${decoy} (${decoyCommand})`);
    killHostAfterResult();
  });
});

inPhase(2, 'other extensions: what the SIGKILLed host left', () => {
  it('its watchdog ended the session before any window opened again; the decoy lives on', async function () {
    this.timeout(60_000);
    const outsiders: Outsiders = JSON.parse(fs.readFileSync(await outsidersFile(), 'utf8'));
    try {
      await checkEndedBeforeThisHost('standins-crash', "the host's SIGKILL");
      assert.ok(processes.isAlive(outsiders.decoy.pid, outsiders.decoy.startTicks), 'the decoy outside the host lives');
    } finally {
      processes.signalIfSame(outsiders.decoy.pid, outsiders.decoy.startTicks, 'SIGKILL');
    }
  });
});

async function keptFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'standins-kept.json');
}

inPhase(3, 'other extensions: a session of a kept extension, then the host is SIGKILLed', () => {
  it('leaves a session of the Claude Code stand-in, which agentTrees.otherExtensions.keep names', async function () {
    this.timeout(90_000);
    const trees = await api();
    await config().update('otherExtensions.keep', [CLAUDE_STAND_IN], vscode.ConfigurationTarget.Global);
    const session = await startClaudeSession();
    const state = await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    assert.ok(
      state.recorded?.keep.some((k) => k.extensionId === CLAUDE_STAND_IN),
      'the record names it kept',
    );
    const kept = {
      hostPid: process.pid,
      record: path.join(trees.recordsDir, `${process.pid}.json`),
      session: session.pids.map(identityOf),
    };
    fs.writeFileSync(await keptFile(), JSON.stringify(kept));
    log(`[standins-kept] host ${process.pid}: kept session ${session.pids.join(', ')}`);
    killHostAfterResult();
  });
});

inPhase(4, 'other extensions: what the SIGKILLed host left of a kept extension', () => {
  it('its watchdog removed its record and ended nothing of the kept extension', async function () {
    this.timeout(60_000);
    const kept: { hostPid: number; record: string; session: { pid: number; startTicks: number }[] } = JSON.parse(
      fs.readFileSync(await keptFile(), 'utf8'),
    );
    try {
      assert.ok(!processes.isAlive(kept.hostPid), 'the old host is dead');
      await waitFor('its record is gone: its watchdog ran', () => !fs.existsSync(kept.record), 10_000);
      assert.deepStrictEqual(
        kept.session.filter((p) => !processes.isAlive(p.pid, p.startTicks)).map((p) => p.pid),
        [],
        "the kept extension's session lives on",
      );
    } finally {
      for (const p of kept.session) processes.signalIfSame(p.pid, p.startTicks, 'SIGKILL');
      await config().update('otherExtensions.keep', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});

inPhase(5, 'other extensions: a session and a terminal, then the window reloads', () => {
  it('runs a session of the Claude Code stand-in and a terminal with a child, then asks for a reload', async function () {
    this.timeout(90_000);
    const trees = await api();
    const session = await startClaudeSession();
    await waitShownAndRecorded(CLAUDE_STAND_IN, session.pids);
    const { terminal, pid: child } = await inTerminal('it-kept-over-reload', 'sleep 300', false);
    const shell = await terminal.processId;
    assert.ok(shell);
    // An extension that opens a terminal with the host's environment (as some do) gives its shell the host's mark.
    const withHostEnv = await inTerminal('it-host-env-kept-over-reload', 'sleep 301', false, { ...process.env });
    const hostEnvShell = await withHostEnv.terminal.processId;
    assert.ok(hostEnvShell);
    const environ = fs.readFileSync(`/proc/${hostEnvShell}/environ`, 'utf8').split('\0');
    assert.ok(
      environ.includes(`${HOST_MARK_VARIABLE}=${process.env[HOST_MARK_VARIABLE]}`),
      "that terminal's shell carries the host's mark",
    );
    await startMonitor('standins-reload', path.join(trees.recordsDir, `${process.pid}.json`), session.pids);
    const handover = {
      hostPid: process.pid,
      shell: identityOf(shell),
      child: identityOf(child),
      hostEnvShell: identityOf(hostEnvShell),
      hostEnvChild: identityOf(withHostEnv.pid),
      session: session.pids.map(identityOf),
    };
    fs.writeFileSync(path.join(path.dirname(trees.recordsDir), 'standins-reload.json'), JSON.stringify(handover));
    log(`[standins-reload] host ${process.pid}: session ${session.pids.join(', ')}; terminal shell ${shell} with ${child}`);
    reloadWindowAfterResult();
  });
});
