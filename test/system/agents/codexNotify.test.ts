// Codex's notify (src/agents/attentionHooks.ts): whether a config.toml sets it, and the `-c notify=[...]` withHooks
// gives codex, proven on the real codex that scripts/test-tools.sh installs into .tools/agents.
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { codexConfigHasNotify, NotifyInvocation, withHooks } from '../../../src/agents/attentionHooks';
import { requireEnvironment } from '../../support/environment';
import { REPO, tmpDir } from '../../support/repo';

const NOTIFY: NotifyInvocation = { execPath: '/usr/bin/node', cliScript: '/x/dist/cli.js', electron: false };

describe("codex's notify, on the real codex", () => {
  const agents = path.join(REPO, '.tools', 'agents', 'node_modules');

  beforeEach(function () {
    const have = fs.existsSync(path.join(agents, '.bin', 'codex'));
    requireEnvironment(this, have, 'the real codex package in .tools/agents (node scripts/host/agentPackages.js)');
  });

  /** What the real codex makes of a config.toml and a command line: its exit code and what it says. */
  function codexReads(toml: string | undefined, args: string[]): { code: number | null; said: string } {
    const home = tmpDir();
    if (toml !== undefined) fs.writeFileSync(path.join(home, 'config.toml'), toml);
    const r = spawnSync(path.join(agents, '.bin', 'codex'), [...args, 'mcp', 'list'], {
      env: { ...process.env, CODEX_HOME: home },
      encoding: 'utf8',
      input: '',
      timeout: 30_000,
    });
    fs.rmSync(home, { recursive: true, force: true });
    return { code: r.status, said: `${r.stdout}${r.stderr}` };
  }

  it('a config.toml sets notify exactly when the real codex reads a notify at its top level in it', () => {
    const configs = [
      'developer_instructions = """\n[Important] be brief\n"""\nnotify = 5\n',
      "developer_instructions = '''\n[x]\n'''\nnotify = 5\n",
      'x = [\n  [1, 2],\n]\nnotify = 5\n',
      '"notify" = 5\n',
      "'notify' = 5\n",
      '# [a comment]\nnotify = 5\n',
      'model = "a" # [x]\nnotify = 5\n',
      'x = "a \\" [b]"\n  notify = 5\n',
      '[tui]\nnotify = 5\n',
      'x = { a = 1, notify = 5 }\n',
      'developer_instructions = """\nnotify = 5\n"""\n',
      'notify_me = 5\n',
    ];
    for (const toml of configs) {
      // A notify that is not a list fails codex, naming it, exactly when it is the top-level one.
      const read = codexReads(toml, []);
      const codexSays = read.code !== 0 && /in `notify`/.test(read.said);
      assert.strictEqual(codexConfigHasNotify(toml), codexSays, `${JSON.stringify(toml)}: codex says ${read.said}`);
    }
  });

  it('codex reads the notify it is given, whatever the path of the bundled CLI holds', () => {
    const odd = { ...NOTIFY, cliScript: `/opt/a b'c"d$(x)\\e\nf\x7fg\u2028h/dist/cli.js` };
    const r = withHooks('codex', [], odd, { env: { CODEX_HOME: '/h' }, read: () => undefined });
    assert.ok('args' in r);
    const read = codexReads(undefined, r.args);
    assert.strictEqual(read.code, 0, read.said);
  });
});
