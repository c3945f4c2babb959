/**
 * Window takeover (src/proc/takeover.ts) with real processes as the other hosts of a window and an injected
 * round trip as the window: a silent window hands over to a newer host of its key; a window that answers, an
 * older host, another key, a gone host or a file that is not a registration never cause a handover.
 */
import * as assert from 'assert';
import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, ProcessIdentity, windowKey, WindowLease } from '../../../src/proc';
import { OTHER_UID } from '../../support/otherUser';
import { WINDOW_FILE_PREFIX } from '../../../src/proc/owner/windowLease';
import { REPO, tmpDir } from '../../support/repo';
import { waitFor } from '../../support/wait';
import { register } from '../../support/started';
import { isRoot, requireEnvironment } from '../../support/environment';

/** This process's table, to read the processes a test started. */
const table = processCore().table;

const KEY = windowKey('local\nfile:///work/project');

/** Starts another host of a window (test/fixtures/windowHost.js); resolves once it registered. */
async function otherHost(dir: string, key = KEY): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'windowHost.js'), dir, key], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  register(child.pid!);
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.stdin!.end();
  await exited;
}

/** A window under test control: answers round trips until `silence()`, then never again. */
function fakeWindow() {
  let silent = false;
  let probes = 0;
  return {
    probe: () => {
      probes++;
      return silent ? new Promise<void>(() => {}) : Promise.resolve();
    },
    silence: () => (silent = true),
    get probes() {
      return probes;
    },
  };
}

function lease(dir: string, window: ReturnType<typeof fakeWindow>, gone: ProcessIdentity[], key = KEY): WindowLease {
  return new WindowLease({
    dir,
    key,
    probe: window.probe,
    onGone: (h) => gone.push(h),
    probeIntervalMs: 50,
    silentMs: 300,
    scanIntervalMs: 50,
    table: processCore().table,
  });
}

/** Resolves after the lease has looked `n` more times while its window was silent. */
function silentChecks(l: WindowLease, n: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const on = (silent: boolean) => {
      if (silent && ++seen >= n) {
        l.off('checked', on);
        resolve();
      }
    };
    l.on('checked', on);
  });
}

describe('window takeover', () => {
  it('a host whose window went silent hands over to a newer host of its window', async () => {
    const dir = tmpDir();
    const window = fakeWindow();
    const gone: ProcessIdentity[] = [];
    const l = lease(dir, window, gone);
    l.register();
    l.setActive(true);
    await waitFor('a first answer', () => window.probes > 1);
    window.silence(); // the reload: the window stops answering, a little later its next host starts
    await silentChecks(l, 1);
    const newer = await otherHost(dir);
    try {
      await waitFor('the handover', () => gone.length > 0);
      assert.deepStrictEqual(
        gone.map((h) => h.pid),
        [newer.pid],
        'once, naming the newer host',
      );
      await silentChecks(l, 3);
      assert.strictEqual(gone.length, 1, 'not again while the silence lasts');
    } finally {
      l.dispose();
      await stop(newer);
    }
    assert.ok(
      !fs.readdirSync(dir).some((n) => n.endsWith(`-${process.pid}-${table.read(process.pid)!.startKey}`)),
      'dispose removes its registration',
    );
  });

  it('a window that answers keeps its trees when a newer host of its workspace starts (two windows, one workspace)', async () => {
    const dir = tmpDir();
    const window = fakeWindow();
    const gone: ProcessIdentity[] = [];
    const l = lease(dir, window, gone);
    l.register();
    l.setActive(true);
    const second = await otherHost(dir);
    try {
      const after = window.probes;
      await waitFor('several answered round trips', () => window.probes > after + 5);
      assert.deepStrictEqual(gone, []);
      // The second window was there while this one answered: this one going silent later is no reload of it.
      window.silence();
      await silentChecks(l, 5);
      assert.deepStrictEqual(gone, []);
    } finally {
      l.dispose();
      await stop(second);
    }
  });

  it('ignores hosts of other windows, gone hosts, and files that are not registrations', async function () {
    const dir = tmpDir();
    const window = fakeWindow();
    const gone: ProcessIdentity[] = [];
    // A host that registered and died (its file stays), and one of another workspace.
    const dead = await otherHost(dir);
    await stop(dead);
    const stale = fs.readdirSync(dir).find((n) => n.includes(`-${dead.pid}-`))!;
    assert.ok(stale);
    const l = lease(dir, window, gone);
    l.register();
    assert.ok(!fs.existsSync(path.join(dir, stale)), "a gone host's registration is removed");
    l.setActive(true);
    await waitFor('a first answer', () => window.probes > 1);
    window.silence();
    await silentChecks(l, 1);
    const otherKey = await otherHost(dir, windowKey('local\nfile:///work/elsewhere'));
    await silentChecks(l, 5);
    assert.deepStrictEqual(gone, [], 'a newer host of another workspace');
    // The exact name a newer host of our key would register, planted as a FIFO, a symlink, another user's file.
    const planted = path.join(dir, `${WINDOW_FILE_PREFIX}${KEY}-${otherKey.pid}-${table.read(otherKey.pid!)!.startKey}`);
    const kinds: [string, () => void][] = [
      ['a FIFO', () => spawnSync('mkfifo', [planted])],
      ['a symlink', () => fs.symlinkSync('/etc/passwd', planted)],
    ];
    const foreign = isRoot;
    requireEnvironment(this, foreign, 'root, to plant a file of another user', { part: true });
    if (foreign) kinds.push(["another user's file", () => (fs.writeFileSync(planted, ''), fs.chownSync(planted, OTHER_UID, OTHER_UID))]);
    try {
      for (const [what, plant] of kinds) {
        plant();
        await silentChecks(l, 5);
        assert.deepStrictEqual(gone, [], what);
        assert.ok(fs.lstatSync(planted), `${what} is left where it is`);
        fs.rmSync(planted);
      }
      // The same name as a real registration would be taken: the planted ones were the only thing missing.
      fs.writeFileSync(planted, '');
      await waitFor('the handover', () => gone.length > 0);
    } finally {
      l.dispose();
      await stop(otherKey);
    }
  });

  it('never hands over to itself, and sends round trips only while it owns trees', async () => {
    const dir = tmpDir();
    const window = fakeWindow();
    const gone: ProcessIdentity[] = [];
    const l = lease(dir, window, gone);
    l.register();
    window.silence();
    l.setActive(true);
    await silentChecks(l, 3);
    assert.deepStrictEqual(gone, [], 'its own registration is not a newer host');
    assert.strictEqual(window.probes, 1, 'one round trip at a time: none piles up while the window is silent');
    const newer = await otherHost(dir);
    try {
      await waitFor('the handover', () => gone.length > 0);
      assert.strictEqual((gone as ProcessIdentity[])[0].pid, newer.pid);
      l.setActive(false);
      l.setActive(true);
      const probes = window.probes;
      l.setActive(false);
      await stop(newer);
      assert.ok(window.probes <= probes + 1, 'inactive: no more round trips');
    } finally {
      l.dispose();
    }
  });

  it("probes at the interval it is made active with (a host with only other extensions' processes at stake probes less often)", async () => {
    const window = fakeWindow();
    const l = lease(tmpDir(), window, []);
    try {
      l.setActive(true, 400);
      await new Promise((r) => setTimeout(r, 1000));
      const slow = window.probes;
      assert.ok(slow >= 2 && slow <= 4, `${slow} round trips in 1 s at 400 ms`);
      l.setActive(true); // the option's 50 ms again (it owns trees now)
      await waitFor('faster round trips', () => window.probes >= slow + 5);
    } finally {
      l.dispose();
    }
  });
});
