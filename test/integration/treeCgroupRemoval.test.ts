// Every way an agent's tree ends in the extension host removes the tree's cgroup: Kill Agent Tree, its timeout, and
// its own exit (which ends the helpers it left running). The host's teardown at a reload is checked in
// reload.phased.test.ts, a killed host's watchdog in crash.phased.test.ts and serverKill.phased.test.ts (through
// fixtures.ts's handover), `agent-trees run` and the end of a host run in the unit suite.
import * as assert from 'assert';
import * as fs from 'fs';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import { api } from './fixtures';
import { processes } from '../support/repo';
import { waitFor } from '../support/wait';

describe('Agent Trees: an agent tree that ends leaves no cgroup', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;

  /** Launches `script` (sh -c) as an agent; resolves with its tree id and its cgroup, once its root runs in it. */
  const launch = async (name: string, script: string, timeoutSeconds = 0) => {
    const id = await trees.launch({ name, command: 'sh', args: ['-c', script], kind: 'mcp', timeoutSeconds });
    const rootPid = trees.list().find((t) => t.id === id)!.rootPid;
    let cgroup: string | undefined;
    await waitFor('the root in its cgroup', () => (cgroup = processes.agentTreeCgroupOf(rootPid)) !== undefined, 5000);
    return { id, cgroup };
  };
  const state = (id: string) => trees.list().find((t) => t.id === id)?.state;

  before(async function () {
    trees = await api();
    const probe = await launch('cgroup-probe', 'exec sleep 60');
    await trees.kill(probe.id);
    if (!probe.cgroup) this.skip(); // no cgroup tier here (not root, or no writable cgroup v2)
  });

  it('Kill Agent Tree: its cgroup is gone once the kill is done', async () => {
    const { id, cgroup } = await launch('cgroup-killed', 'sleep 120 & exec sleep 120');
    await vscode.commands.executeCommand('agentTrees.killTree', id);
    assert.strictEqual(state(id), 'killed');
    await waitFor(
      () => `${cgroup} to be removed (it is left behind)`,
      () => !fs.existsSync(cgroup!),
      5000,
    );
  });

  it('its timeout: its cgroup is gone once it timed out', async () => {
    const { id, cgroup } = await launch('cgroup-timeout', 'sleep 120 & exec sleep 120', 1);
    await waitFor(
      'the tree to time out and have no member',
      () => state(id) === 'timed out' && !trees.list().find((t) => t.id === id)!.members.length,
      15_000,
    );
    await waitFor(
      () => `${cgroup} to be removed (it is left behind)`,
      () => !fs.existsSync(cgroup!),
      5000,
    );
  });

  it('its own exit, leaving a helper running: the helper is ended and the cgroup is gone', async () => {
    const { id, cgroup } = await launch('cgroup-exited', 'sleep 120 & sleep 1');
    await waitFor(
      () => `the tree to exit (state ${state(id)})`,
      () => state(id) === 'exited',
      15_000,
    );
    await waitFor(
      () => `${cgroup} to be removed (it is left behind)`,
      () => !fs.existsSync(cgroup!),
      10_000,
    );
  });
});
