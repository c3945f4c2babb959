// The real claude's tree over a window reload: phase 2 launches claude, whose Bash tool call starts a `setsid`
// helper and a background one, and reloads the window; phase 3 finds claude and both helpers ended by the old
// host's shutdown (phase 3 runs with the activation sweep off: see reload.phased.test.ts).
import * as assert from 'assert';
import { claudeOrWhy, claudeSession, helpersCommand, pidsIn, turns } from './claudeFixtures';
import { api, readHandover, writeHandover } from './fixtures';
import { inPhase, log, reloadWindowAfterResult } from './harness';
import { waitFor } from '../support/wait';

const HANDOVER = 'claude-reload';

inPhase(2, 'the real claude over a reload: claude with helpers, then the window reloads', () => {
  it('launches claude, whose tool call starts helpers, then asks for a reload', async function () {
    this.timeout(120_000);
    const found = claudeOrWhy();
    if (!found.claude) {
      log(`[claude reload] skipped: ${found.why}`);
      this.skip();
    }
    const trees = await api();
    // The endpoint lives in this host and dies with it; claude has used it by then.
    const s = await claudeSession(found.claude!, []);
    const helpers = helpersCommand(s.cwd);
    (s.endpoint as unknown as { push(...t: unknown[]): void }).push(turns.bash(helpers.command), turns.text('Started.'));
    const id = await trees.launch({
      name: 'claude-reload',
      command: found.claude!,
      args: ['start the helpers', '--permission-mode', 'default', '--allowedTools', 'Bash'],
      cwd: s.cwd,
      env: s.env,
      timeoutSeconds: 0,
    });
    let pids: number[] | undefined;
    await waitFor('the helpers started', () => (pids = pidsIn(helpers.files)) !== undefined, 60_000);
    const root = trees.list().find((t) => t.id === id)!.rootPid;
    await writeHandover(HANDOVER, [root, ...pids!]);
    log(`[claude reload] host ${process.pid}: claude ${root}, helpers ${pids!.join(', ')}`);
    reloadWindowAfterResult();
  });
});

inPhase(3, 'the real claude over a reload: all of its tree ended with the old host', () => {
  it('left neither claude nor its helpers', async function () {
    this.timeout(20_000);
    let handover;
    try {
      handover = await readHandover(HANDOVER);
    } catch {
      this.skip(); // phase 2 skipped it (no claude)
    }
    assert.deepStrictEqual(handover.alive(), [], 'claude and both helpers ended with the old host');
  });
});
