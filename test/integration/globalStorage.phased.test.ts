// An extension host whose global storage folder cannot hold records: phase 6 puts a file where the folder should be
// and continues in the window's next host, which activates on it. Activation says which folder and what is wrong;
// agents are not launched (a tree without a record could not be ended after a crash), and the launch says why;
// what needs no record works: the view, a terminal's row with its processes, ending everything under a terminal, a
// sweep. The folder is put back at the end. As root, permissions stop nothing, so the folder is made unusable by a
// file in its place (ENOTDIR for everything beneath it), which stops root too.
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { continueInNextHost, inPhase, RESULT_FILE_VAR } from './harness';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';
import { api, testHooks } from './fixtures';
import type { ApiRow } from '../../src/extension/testHooks';

interface Broken {
  /** The extension's global storage folder, a file now. */
  storage: string;
  /** Where the folder went meanwhile. */
  aside: string;
  /** The host that broke it (the next one activates on it). */
  hostPid: number;
}

/** Kept beside the phase's result file: the global storage is what this test breaks. */
const stateFile = () => `${process.env[RESULT_FILE_VAR]}.global-storage.json`;

function putBack(broken: Broken): void {
  if (fs.statSync(broken.storage, { throwIfNoEntry: false })?.isFile()) fs.rmSync(broken.storage);
  if (fs.existsSync(broken.aside)) fs.renameSync(broken.aside, broken.storage);
  fs.rmSync(stateFile(), { force: true });
}

inPhase(6, 'a global storage folder that cannot hold records', () => {
  it('activation says what is wrong; launching is refused with the reason; the view and the terminals work', async function () {
    this.timeout(90_000);
    const trees = await api();
    if (!fs.existsSync(stateFile())) {
      // This host activated on a good folder: break it for the next host of the window.
      const storage = path.dirname(trees.recordsDir);
      const broken: Broken = { storage, aside: `${storage}.aside`, hostPid: process.pid };
      fs.renameSync(storage, broken.aside);
      fs.writeFileSync(storage, 'a file where the extension expects its folder\n');
      fs.writeFileSync(stateFile(), JSON.stringify(broken));
      continueInNextHost('reload');
      return;
    }
    const broken: Broken = JSON.parse(fs.readFileSync(stateFile(), 'utf8'));
    let terminal: vscode.Terminal | undefined;
    let child = 0;
    let childStart: number | undefined;
    const childFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-it-storage-')), 'child');
    try {
      assert.notStrictEqual(process.pid, broken.hostPid, 'a new host, activated on the broken folder');
      const hooks = await testHooks();
      const problem = hooks.recordsProblem();
      assert.ok(problem?.startsWith(`records folder ${trees.recordsDir}:`), `activation told: ${problem}`);
      assert.match(problem!, /ENOTDIR.*a file stands where a folder should be/);

      await assert.rejects(
        trees.launch({ name: 'no-records', command: 'sleep', args: ['60'], timeoutSeconds: 0 }),
        (e: Error) => e.message.includes('Cannot launch no-records') && e.message.includes(`records folder ${trees.recordsDir}`),
      );
      const viaCommand = await vscode.commands.executeCommand('agentTrees.launchAgent', {
        name: 'no-records',
        command: 'sleep',
        args: ['60'],
      });
      assert.strictEqual(viaCommand, undefined, 'Launch Agent reports the error and starts nothing');
      assert.deepStrictEqual(trees.list(), []);
      assert.deepStrictEqual(
        vscode.window.terminals.filter((t) => t.name.includes('no-records')).map((t) => t.name),
        [],
        'no agent terminal was opened for it',
      );

      // A terminal of the window, with a child: its row shows the child, and ending it works.
      terminal = vscode.window.createTerminal({
        name: 'storage-test',
        shellPath: '/bin/sh',
        shellArgs: ['-c', `sleep 300 & echo $! > ${childFile}; wait`],
      });
      const shellPid = await terminal.processId;
      await waitFor('the child started', () => fs.existsSync(childFile) && fs.readFileSync(childFile, 'utf8').trim() !== '', 10_000);
      child = Number(fs.readFileSync(childFile, 'utf8'));
      childStart = processes.readStat(child)?.startTicks;
      let row: ApiRow | undefined;
      await waitFor(
        'the view to show the terminal with its child',
        async () => {
          row = (await hooks.view()).find((r) => r.target.kind === 'terminal' && r.target.shellPid === shellPid);
          return row && JSON.stringify(row.children).includes(`"pid":${child}`);
        },
        { timeoutMs: 20_000, everyMs: 200 },
      ).catch(() => undefined); // the assertions below say what the view showed
      assert.ok(row && row.target.kind === 'terminal', `the view shows the terminal: ${JSON.stringify(row)}`);
      assert.ok(JSON.stringify(row.children).includes(`"pid":${child}`), `with its child ${child} beneath: ${JSON.stringify(row)}`);
      const ended = await vscode.commands.executeCommand<{ signalled: number }>('agentTrees.endTerminal', row.target.shellKey);
      assert.ok(ended && ended.signalled >= 1, JSON.stringify(ended));
      await waitFor('the child was ended', () => !processes.isAlive(child), 10_000);

      assert.deepStrictEqual(await trees.sweep(), { trees: 0, killed: 0 }, 'a sweep runs, and finds nothing to end');
    } finally {
      if (childStart !== undefined && processes.isAlive(child, childStart)) process.kill(child, 'SIGKILL');
      terminal?.dispose();
      putBack(broken);
    }
  });
});
