/**
 * The owner's watch of its trees (src/proc/owner/treeOwner.ts), on real trees: a tree whose root exited stays owned
 * while a member runs, found without a full scan each look, and a tree is never ended before its root's exit is known.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../../src/proc';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { roleIn } from '../../support/fixtures';
import { aliveOf, register } from '../../support/started';
import { requireEnvironment } from '../../support/environment';

const core = processCore();

describe("the owner's watch", function () {
  this.timeout(30_000);

  it('follows the members: a daemon that left the parent chain keeps the tree owned, found without a full scan each look; it ends once the daemon is gone', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchIntervalMs: 50 });
    const pidfile = path.join(tmpDir(), 'pids');
    const tree = owner.spawn({
      command: 'sh',
      args: ['-c', 'setsid -f sh -c \'echo "$$" > "$0"; exec sleep 60\' "$0"', pidfile],
      stdio: 'ignore',
    });
    register(tree.child.pid!);
    const shared = core.table as LinuxProcessTable;
    const calls = { full: 0, partial: 0 };
    const snapshot = shared.snapshot.bind(shared);
    const snapshotOf = shared.snapshotOf.bind(shared);
    shared.snapshot = () => (calls.full++, snapshot());
    shared.snapshotOf = (pids, walk) => (calls.partial++, snapshotOf(pids, walk));
    let ended = false;
    owner.on('ended', () => (ended = true));
    try {
      const daemon = await waitFor('the daemon', () => Number(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim() || 0 : 0));
      register(daemon);
      await waitFor('the root to exit', () => tree.rootExit !== undefined);
      await waitFor('a first look', () => calls.partial + calls.full > 0);
      const before = { ...calls };
      await waitFor('three more looks', () => calls.partial >= before.partial + 3);
      assert.strictEqual(ended, false, 'still owned: the daemon is a member');
      assert.strictEqual(calls.full, before.full, 'no full scan while the walk finds a member');
      process.kill(daemon, 'SIGKILL');
      await waitFor('the tree to end', () => ended);
    } finally {
      shared.snapshot = snapshot;
      shared.snapshotOf = snapshotOf;
      await owner.dispose(0);
    }
  });

  // The watch looks at every tree, running ones too: it must not drop one with no live member while its root's exit
  // is not yet reported, as a pseudo-terminal root reports its exit up to 200 ms after it died (node-pty drains the
  // output first).
  it("never ends a tree before its root's exit is reported (a pseudo-terminal root reports it late)", async function () {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchIntervalMs: 10 });
    // A tree whose root exits at once leaving a daemon: it keeps the watch running every 10 ms.
    const pidfile = path.join(tmpDir(), 'pids');
    const keeper = owner.spawn({
      command: 'sh',
      args: ['-c', 'setsid -f sh -c \'echo "daemon $$" > "$0"; exec sleep 60\' "$0"', pidfile],
      stdio: 'ignore',
    });
    register(keeper.child.pid!);
    const events: string[] = [];
    owner.on('ended', (t) => events.push(`ended ${t.record.id}`));
    owner.on('rootExit', (t) => events.push(`rootExit ${t.record.id}`));
    let daemon: number | undefined;
    try {
      daemon = await waitFor('the daemon', () => roleIn(pidfile, 'daemon'));
      register(daemon);
      await waitFor("the keeper's root to exit", () => keeper.rootExit !== undefined);
      for (let i = 0; i < 5; i++) {
        let tree;
        try {
          tree = owner.spawnTerminal({ command: 'sh', args: ['-c', 'exit 0'] });
        } catch (e) {
          requireEnvironment(this, false, `pseudo-terminals: ${(e as Error).message}`);
          return;
        }
        register(tree.child.pid);
        const id = tree.record.id;
        await waitFor('the pty tree to end', () => events.includes(`ended ${id}`));
        const ended = events.indexOf(`ended ${id}`);
        const exited = events.indexOf(`rootExit ${id}`);
        assert.ok(exited >= 0 && exited < ended, `round ${i}: the tree ended before its root's exit was known: ${events.join(', ')}`);
      }
    } finally {
      if (daemon) process.kill(daemon, 'SIGKILL');
      await owner.dispose(0);
    }
  });
});

describe("an owned tree's process group, once its root has exited", function () {
  this.timeout(30_000);

  it("is still the tree's while a member holds it: one started with a scrubbed environment long after the spawn is ended with the tree (group tier)", async () => {
    // An agent that starts a helper with an environment of its own (as MCP clients do: no tag) a while after it
    // started, and exits before it: the helper stays in the root's group and session, and nothing else leads to it.
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchIntervalMs: 100 });
    const pidfile = path.join(tmpDir(), 'pid');
    const script = `read _; env -i /bin/sh -c 'echo $$ > "$0"; exec sleep 631' "${pidfile}" & read _; exit 0`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script], stdio: ['pipe', 'ignore', 'ignore'] });
    register(tree.child.pid!);
    let helper = 0;
    try {
      const spawnedAt = Date.now();
      await waitFor('the first seconds of the tree to pass', () => Date.now() - spawnedAt > 1500);
      tree.child.stdin!.write('\n');
      helper = Number(await waitFor('the helper', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(helper);
      const started = await waitFor('the helper to run sleep', () => core.table.read(helper)?.name === 'sleep' && core.table.read(helper));
      assert.strictEqual(started.pgid, tree.record.pgid, "the helper is in the root's group");
      // The root runs on for many of the owner's looks (100 ms apart) after the helper started; then it exits.
      const running = Date.now();
      await waitFor('the root to run on a while', () => Date.now() - running > 1000);
      tree.child.stdin!.end('\n');
      await waitFor('the root to exit', () => tree.rootExit);
      await waitFor("the owner's watch to look at the exited tree", () => Date.now() - running > 1500);
      assert.strictEqual(owner.list().length, 1, 'the tree is not dropped while its helper runs');
      const report = await owner.kill(tree.record.id, 0);
      assert.deepStrictEqual(aliveOf([helper]), [], 'the helper ended with the tree');
      assert.strictEqual(report.survivors, 0);
      assert.strictEqual(report.signalled, 1, `ended ${report.signalled}`);
    } finally {
      if (helper && aliveOf([helper]).length) process.kill(helper, 'SIGKILL');
      await owner.dispose(0);
    }
  });
});
