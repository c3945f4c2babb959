// Terminals VS Code keeps over a reload (persistent sessions) are not orphans. Phase 2 opens a bash terminal
// whose shell runs a SIGHUP-ignoring child and a daemon, sets agentTrees.terminals.onClose to "end" (the harshest
// setting) and reloads the window (the reload test asks for it too). terminals.afterReload.test.ts checks, in the
// host the reload starts, that nothing of the terminal was ended and that it is shown again.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { inPhase, log, reloadWindowAfterResult } from './harness';
import { processes } from '../support/repo';
import { api, pidFile } from './fixtures';
import { fixturePids } from '../support/fixtures';
import { Handover, handoverFile } from './terminalFixtures';

const config = () => vscode.workspace.getConfiguration('agentTrees');

inPhase(2, 'reload with a terminal open: its shell leaves helpers running', () => {
  it('opens a terminal with a SIGHUP-ignoring child and a daemon, sets onClose to "end", and asks for a reload', async function () {
    this.timeout(30_000);
    await api();
    await config().update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
    const terminal = vscode.window.createTerminal({ name: 'it-persistent', shellPath: '/bin/bash' });
    const shellPid = await terminal.processId;
    assert.ok(shellPid);
    const file = pidFile();
    terminal.sendText(
      `F=${file}; sh -c 'trap "" HUP; echo "nohup $$" >> "$1"; exec sleep 300' x "$F" & setsid -f sh -c 'echo "daemon $$" >> "$1"; exec sleep 300' x "$F"; sleep 0.3; echo "ready $$" >> "$F"`,
    );
    const children = (await fixturePids(file)).all;
    const handover: Handover = {
      shell: { pid: shellPid, startTicks: processes.readStat(shellPid)!.startTicks },
      children: children.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks })),
    };
    fs.writeFileSync(await handoverFile(), JSON.stringify(handover));
    log(`[terminals] shell ${shellPid} with ${children.join(', ')} kept over the reload`);
    reloadWindowAfterResult();
  });
});
