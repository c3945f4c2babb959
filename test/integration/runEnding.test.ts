// How a run's ending is told: Kill Agent Tree's notification (read from the workbench's DOM), the agent's terminal
// and the log say one line, the same in all three.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks } from '../../src/extension/testHooks';
import { api, testHooks } from './fixtures';
import { waitFor } from '../support/wait';
import { until } from './renderedView';
import { evaluate, hasPage, PageElement } from './workbenchPage';

declare const document: PageElement;

/** Runs in the page: the messages of the notification toasts on the screen. */
function toastMessages(): string[] {
  return Array.from(document.querySelectorAll('.notifications-toasts .notification-toast .notification-list-item-message'))
    .filter((m) => m.getClientRects().length > 0)
    .map((m) => (m.textContent ?? '').trim());
}

/** The lines of the extension's log ("Agent Trees") in this user data folder's sessions that contain `text`. */
function logLines(trees: AgentTreesApi, text: string): string[] {
  // recordsDir is <user data>/User/globalStorage/<extension>/owned-trees; the logs are <user data>/logs/<session>/...
  const logs = path.resolve(trees.recordsDir, '..', '..', '..', '..', 'logs');
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name === 'Agent Trees.log')
        found.push(
          ...fs
            .readFileSync(full, 'utf8')
            .split('\n')
            .filter((l) => l.includes(text)),
        );
    }
  };
  walk(logs);
  return found;
}

describe('Agent Trees: how a run ended, told in one line', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;

  before(async function () {
    if (!hasPage()) this.skip(); // the notification is read through the host runner's page
    trees = await api();
    hooks = await testHooks();
  });

  after(() => vscode.commands.executeCommand('notifications.clearAll'));

  it("Kill Agent Tree: the notification, the agent's terminal and the log end with the same line", async () => {
    const name = 'told-once';
    const id = await trees.launch({ name, command: 'sh', args: ['-c', 'sleep 120 & sleep 120 & exec sleep 120'], timeoutSeconds: 0 });
    await waitFor('the agent and its two helpers run', () => trees.list().find((t) => t.id === id)?.members.length === 3, 10_000);
    await vscode.commands.executeCommand('agentTrees.killTree', id);
    const ending = await until("the agent's terminal to show how it ended", async () => hooks.terminalState(id)?.ending ?? undefined);
    assert.strictEqual(ending, 'killed: ended 3 processes');
    const toast = await until('the notification', async () => (await evaluate(toastMessages)).find((m) => m.startsWith(`${name}:`)));
    assert.strictEqual(toast, `${name}: ${ending}`);
    const logged = await until('the log line', async () => logLines(trees, `${name} (tree ${id}): `)[0]);
    assert.ok(logged.endsWith(`${name} (tree ${id}): ${ending}`), logged);
  });

  it("a limit's end: the notification, the agent's terminal and the log say which limit, in the same line", async () => {
    const name = 'past-its-limit';
    const id = await trees.launch({
      name,
      command: 'sh',
      args: ['-c', 'sleep 120 & sleep 120 & exec sleep 120'],
      timeoutSeconds: 0,
      maxProcesses: 2,
    });
    const ending = await until("the agent's terminal to show how it ended", async () => hooks.terminalState(id)?.ending ?? undefined);
    assert.strictEqual(ending, 'process limit 2 exceeded (3): ended 3 processes');
    const toast = await until('the notification', async () => (await evaluate(toastMessages)).find((m) => m.startsWith(`${name}:`)));
    assert.strictEqual(toast, `${name}: ${ending}`);
    const logged = await until('the log line', async () => logLines(trees, `${name} (tree ${id}): `)[0]);
    assert.ok(logged.endsWith(`${name} (tree ${id}): ${ending}`), logged);
    assert.strictEqual(trees.list().find((t) => t.id === id)?.limitExceeded, 'process limit 2 exceeded (3)');
  });
});
