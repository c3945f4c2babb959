/**
 * The cgroup probe of an ordinary user (src/proc/cgroup/probe.ts), on real processes as another uid with a stand-in
 * `systemd-run` first on PATH: `ps` never runs it, and the probe never holds the event loop while it runs.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { register } from '../../support/started';
import { dirFor, runCli } from '../../support/cli';
import { AS_OTHER_USER, OTHER_UID, readableDir, scriptForOtherUser } from '../../support/otherUser';
import { requireRoot } from '../../support/environment';

describe('the cgroup probe of an ordinary user (as another user)', () => {
  before(function () {
    requireRoot(this, 'to probe as an ordinary user (the systemd-run path)');
  });

  /** A fake `systemd-run` first on PATH that notes each call in `calls`. */
  function fakeSystemdRun(): { bin: string; calls: string } {
    const bin = dirFor(0);
    const calls = path.join(dirFor(OTHER_UID, 0o777), 'calls');
    fs.writeFileSync(path.join(bin, 'systemd-run'), `#!/bin/sh\necho "$*" >> "${calls}"\nexit 0\n`, { mode: 0o755 });
    return { bin, calls };
  }

  it('`agent-trees ps` never runs it', async () => {
    const { bin, calls } = fakeSystemdRun();
    const records = dirFor(OTHER_UID);
    for (const args of [['ps'], ['ps', '--json']]) {
      const r = await runCli([...args, '--records', records], {
        asUid: OTHER_UID,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      });
      assert.strictEqual(r.code, 0, r.stderr);
    }
    assert.ok(!fs.existsSync(calls), `systemd-run ran: ${fs.existsSync(calls) && fs.readFileSync(calls, 'utf8')}`);
  });

  it('never holds the event loop while systemd-run runs', async () => {
    // The fake systemd-run waits (up to 5 s) for a file that only a timer of the probing process writes: if the
    // probe held the event loop, the timer could not run until systemd-run gave up.
    const bin = dirFor(0);
    const dir = dirFor(OTHER_UID, 0o777);
    fs.writeFileSync(
      path.join(bin, 'systemd-run'),
      `#!/bin/sh\ni=0\nwhile [ ! -e "${dir}/loop" ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done\n` +
        `if [ -e "${dir}/loop" ]; then echo saw-loop > "${dir}/result"; else echo no-loop > "${dir}/result"; fi\nexit 1\n`,
      { mode: 0o755 },
    );
    const script = scriptForOtherUser(
      'cgroup-probe',
      `const { createCore } = require('./src/proc/core');
      const core = createCore();
      const now = core.cgroupTier('auto');
      setTimeout(() => require('fs').writeFileSync(${JSON.stringify(path.join(dir, 'loop'))}, ''), 0);
      core.cgroupProber.probe('auto').then((r) => console.log(JSON.stringify({ now, later: r })));`,
    );
    const child = spawn('setpriv', [...AS_OTHER_USER, process.execPath, script], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: readableDir(),
    });
    register(child.pid!);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    await new Promise((resolve) => child.on('close', resolve));
    assert.strictEqual(fs.readFileSync(path.join(dir, 'result'), 'utf8').trim(), 'saw-loop');
    const { now, later } = JSON.parse(out);
    assert.match(now.unavailable, /has not finished/);
    assert.match(later.unavailable, /systemd-run --user --scope does not work here/);
  });
});
