// What a newcomer's `npm ci && npm run demo` prints on the way to the URL: no npm warning. npm 11 warns about
// dependencies' install scripts that package.json's allowScripts does not cover, and about settings it does not
// know, such as those scripts/host/install.sh hands to the npm that installs code-server. And no failure because
// another apt (a fresh machine's unattended upgrades) holds dpkg's lock while install.sh installs Debian packages.
import * as assert from 'assert';
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { REPO, tmpDir } from '../../support/repo';
import { requireEnvironment, skipBecause } from '../../support/environment';
import { register } from '../../support/started';
import { waitFor } from '../../support/wait';

function npm(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO) {
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('a newcomer’s install: no npm warning, and a busy apt waited out', function () {
  this.timeout(60_000);

  it("npm ci: every dependency's install script is covered by package.json's allowScripts", function () {
    const r = npm(['install-scripts', 'ls']);
    if (/Unknown command/i.test(r.out)) {
      skipBecause(this, 'this npm has no allowScripts, so it warns about none');
    }
    assert.strictEqual(r.status, 0, r.out);
    assert.doesNotMatch(r.out, /not yet covered/, r.out);
  });

  it('scripts/host/install.sh hands npm only settings npm knows', () => {
    const script = fs.readFileSync(path.join(REPO, 'scripts', 'host', 'install.sh'), 'utf8');
    // The settings of its `env ... npm install` command: one `npm_config_NAME=VALUE \` line each.
    const names = [...new Set([...script.matchAll(/^\s*(npm_config_[a-z_]+)=\S*\s*\\$/gm)].map((m) => m[1]))];
    assert.ok(names.includes('npm_config_yes'), `found the installer's npm settings: ${names.join(', ')}`);
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "probe", "private": true }');
    for (const name of names) {
      const r = npm(['ls'], { [name]: name === 'npm_config_script_shell' ? '/bin/sh' : 'true' }, dir);
      assert.doesNotMatch(r.out, /npm warn/i, `${name}: ${r.out}`);
    }
  });

  it("scripts/host/install.sh waits for dpkg's lock while another apt holds it, instead of failing", async function () {
    this.timeout(150_000);
    requireEnvironment(
      this,
      process.getuid?.() === 0 && fs.existsSync('/usr/bin/apt-get') && fs.existsSync('/usr/bin/dpkg-query'),
      'root and Debian apt',
    );
    // pngquant (installed) looks missing to the script until apt-get has run, so it runs apt-get install, which
    // changes nothing: the real apt-get, under the real lock.
    const stubs = tmpDir();
    const ran = path.join(stubs, 'apt-get-ran');
    const stub = (name: string, body: string) => fs.writeFileSync(path.join(stubs, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    stub('dpkg-query', `[ -e "${ran}" ] || case "$*" in *pngquant*) exit 1;; esac\nexec /usr/bin/dpkg-query "$@"`);
    stub('apt-get', `touch "${ran}"\nexec /usr/bin/apt-get "$@"`);
    // dpkg's front-end lock held for 3 s, as apt holds it (an fcntl lock).
    const hold =
      'import fcntl, os, time\nfd = os.open("/var/lib/dpkg/lock-frontend", os.O_RDWR)\nfcntl.lockf(fd, fcntl.LOCK_EX)\nprint("held", flush=True)\ntime.sleep(3)';
    const holder = spawn('python3', ['-c', hold], { stdio: ['ignore', 'pipe', 'inherit'] });
    register(holder.pid!);
    await new Promise((resolve) => holder.stdout!.once('data', resolve));
    const script = spawn('bash', [path.join(REPO, 'scripts', 'host', 'install.sh'), '--host', 'newest'], {
      env: { ...process.env, PATH: `${stubs}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    register(script.pid!);
    let out = '';
    script.stdout!.on('data', (d) => (out += d));
    script.stderr!.on('data', (d) => (out += d));
    let exited = false;
    script.on('exit', () => (exited = true));
    try {
      // Past the Debian packages: on to the hosts (another checkout's install may hold that lock), or ended.
      await waitFor(
        'the Debian packages step to end',
        () => exited || /\[host-install\] (code-server|Node|another install)/.test(out),
        120_000,
      );
      assert.ok(fs.existsSync(ran), `apt-get ran:\n${out}`);
      assert.doesNotMatch(out, /ERROR/, out);
      assert.match(out, /\[host-install\] apt-get install pngquant\n/, out);
    } finally {
      if (!exited) process.kill(-script.pid!, 'SIGTERM');
    }
  });
});
