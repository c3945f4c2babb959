// What a newcomer's `npm ci && npm run demo` prints on the way to the URL: no npm warning. npm 11 warns about
// dependencies' install scripts that package.json's allowScripts does not cover, and about settings it does not
// know, such as those scripts/host/install.sh hands to the npm that installs code-server.
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { REPO, tmpDir } from '../../support/repo';
import { skipBecause } from '../../support/environment';

function npm(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO) {
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('a newcomer’s install prints no npm warning', function () {
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
});
