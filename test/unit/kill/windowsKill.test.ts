/**
 * Killing on Windows (src/proc/kill/windowsKill.ts): taskkill through an injected exec, and the tree killer on a
 * Windows machine of ps-list's listing (test/support/synthetic.ts). No Windows machine runs here.
 */
import * as assert from 'assert';
import { killWindows, TASKKILL_TIMEOUT_MS, WindowsKillDeps } from '../../../src/proc/kill/windowsKill';
import { ExecAsync } from '../../../src/proc/platform/execAsync';
import { WindowsProcessTable } from '../../../src/proc/platform/windowsProcessTable';
import { OUTSIDER as outsider, OWNED, TREE, windowsMachine } from '../../support/synthetic';

describe('taskkill (killWindows)', () => {
  const tree = { id: 'w1', rootPid: 4000, pgid: 4000, sid: 4000, rootStartTime: 0, trackedAt: 0, cgroup: null };
  const target = { kind: 'tree' as const, tree };
  const owned = (graceMs: number, rootAlive: () => boolean) => ({ graceMs, continuouslyOwned: true, cgroupVerified: false, rootAlive });
  const deps = (
    exec: ExecAsync,
    killProcess: WindowsKillDeps['killProcess'] = () => assert.fail('no direct kill expected'),
  ): WindowsKillDeps => ({ table: new WindowsProcessTable(async () => []), exec, killProcess });

  it('asks taskkill /T first, then /T /F after the grace period, with every call bounded', async () => {
    const calls: { args: string[]; timeout: number }[] = [];
    let alive = true;
    const report = await killWindows(
      target,
      owned(150, () => alive),
      deps(async (file, args, timeout) => {
        calls.push({ args: [file, ...args], timeout });
        if (args.includes('/F')) alive = false;
        return { code: 0, stdout: '' };
      }),
    );
    assert.deepStrictEqual(
      calls.map((c) => c.args),
      [
        ['taskkill', '/T', '/PID', '4000'],
        ['taskkill', '/T', '/F', '/PID', '4000'],
      ],
    );
    assert.ok(calls.every((c) => c.timeout > 0 && c.timeout <= 3000));
    assert.strictEqual(report.escalated, true);
    assert.strictEqual(report.survivors, 0);
  });

  it('stops after the polite request when the tree ends within the grace period', async () => {
    let alive = true;
    const calls: string[][] = [];
    const report = await killWindows(
      target,
      owned(2000, () => alive),
      deps(async (_file, args) => {
        calls.push(args);
        alive = false;
        return { code: 0, stdout: '' };
      }),
    );
    assert.strictEqual(calls.length, 1);
    assert.strictEqual(report.escalated, false);
  });

  it('a stalled taskkill does not hold the kill: every call is bounded, then the root is killed directly', async () => {
    const killedRoots: number[] = [];
    // A taskkill that never answers: it ends only through its bound, as execFile's timeout ends it. A call
    // without a bound would hang here, and the test with it.
    const stalled: ExecAsync = (_f, _a, timeout) =>
      timeout > 0 && timeout <= TASKKILL_TIMEOUT_MS
        ? new Promise((r) => setTimeout(() => r({ code: 1, stdout: '' }), 20))
        : new Promise(() => {});
    const report = await killWindows(
      target,
      owned(50, () => true),
      deps(stalled, (pid) => killedRoots.push(pid)),
    );
    assert.deepStrictEqual(killedRoots, [4000], 'the root is killed itself when taskkill did nothing');
    assert.strictEqual(report.survivors, 1, 'and a root that still runs is reported');
  });

  it('does not touch a tree it did not spawn (no start time to prove the root)', async () => {
    const report = await killWindows(
      target,
      { graceMs: 10, continuouslyOwned: false, cgroupVerified: false, rootAlive: () => true },
      deps(async () => {
        throw new Error('must not run');
      }),
    );
    assert.strictEqual(report.signalled, 0);
    assert.match(report.refused[0], /only the owner that spawned a tree/);
  });
});

describe('the tree killer on Windows (injected ps-list and taskkill)', () => {
  const success = (pids: number[]) =>
    pids.map((p) => `SUCCESS: The process with PID ${p} (child process of PID 4000) has been terminated.`).join('\r\n');

  it('"Kill Process and Its Children" ends the subtree through taskkill /T and counts what it ended', async () => {
    const { m, calls } = windowsMachine(() => ({ code: 0, stdout: success([4002, 4003, 4001]) }));
    const report = await m.core.killer.killSubtree(4001, 0, { ...OWNED, graceMs: 1000 });
    assert.deepStrictEqual(calls, [['/T', '/PID', '4001']]);
    assert.strictEqual(report.signalled, 3);
    assert.strictEqual(report.survivors, 0);
  });

  it('refuses a tree it does not own: no start times to prove any of it', async () => {
    const { m, calls } = windowsMachine(() => assert.fail('taskkill must not run'));
    const report = await m.core.killer.kill({ ...TREE, rootPid: 4000, pgid: 4000, sid: 4000 }, outsider);
    assert.deepStrictEqual(calls, []);
    assert.match(report.refused[0], /only the owner that spawned a tree can prove/);
  });
});
