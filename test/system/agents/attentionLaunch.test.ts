// Launching agents with their own hooks (src/agents/attentionLaunch.ts through AgentRuns, real processes): the
// real claude gets its hooks on the command line, its user's own hooks in ~/.claude/settings.json still fire and
// that file is not changed; a program that is not a proven CLI gets nothing added; and no tree keeps an inherited
// AGENT_TREES_NOTIFY that is not its own.
import * as assert from 'assert';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { AttentionFolder, NOTIFY_VARIABLE } from '../../../src/agents/attentionChannel';
import { AttentionInbox } from '../../../src/agents/attentionInbox';
import { AgentRuns } from '../../../src/agents/runs';
import { processCore, silentLogger, TreeOwner } from '../../../src/proc';
import { CLI, REPO, tmpDir } from '../../support/repo';
import { requireEnvironment } from '../../support/environment';
import { register } from '../../support/started';
import { waitFor } from '../../support/wait';

const table = processCore().table;

/* eslint-disable @typescript-eslint/no-require-imports -- the fixtures are plain JavaScript shared with the scripts */
const agentPackages = require(path.join(REPO, 'scripts', 'host', 'agentPackages.js'));
const { startModelEndpoint, turns } = require(path.join(REPO, 'test', 'fixtures', 'agents', 'modelEndpoint.js'));
const claudeRunner = require(path.join(REPO, 'test', 'fixtures', 'agents', 'claudeRunner.js'));
/* eslint-enable @typescript-eslint/no-require-imports */

const settings = { defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true };

describe('launching agents with their own hooks', function () {
  this.timeout(90_000);
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function hookedRuns(): { runs: AgentRuns; inbox: AttentionInbox } {
    const records = tmpDir();
    const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: 'off' });
    const runs = new AgentRuns(owner, () => settings);
    const folder = new AttentionFolder(records, silentLogger);
    const inbox = new AttentionInbox(folder, { pid: process.pid, startKey: table.read(process.pid)!.startKey }, silentLogger);
    runs.useHooks({ inbox, notify: { execPath: process.execPath, cliScript: CLI, electron: false } });
    cleanups.push(async () => {
      runs.dispose();
      await owner.dispose(300);
      inbox.dispose();
      folder.dispose();
    });
    return { runs, inbox };
  }

  it("claude gets its hooks on the command line; its user's own hooks still fire, and their settings file is not changed", async function () {
    const got = agentPackages.requireAgents(['@anthropic-ai/claude-code']);
    requireEnvironment(this, got.ok, `the real claude (${got.why})`); // gated on the package being installable, as the real-CLI trials are
    const claude = agentPackages.binOf(got.status, 'claude');
    const cwd = tmpDir();
    fs.mkdirSync(path.join(cwd, 'victim'));
    const endpoint = await startModelEndpoint({ turns: [turns.bash(`rm -rf ${cwd}/victim && echo removed`), turns.text('Removed.')] });
    cleanups.push(() => endpoint.close());
    const home = claudeRunner.makeClaudeHome({ cwd });
    // The user's own PermissionRequest hook, in their settings file.
    const users = claudeRunner.recordingHook(home.dir, 'PermissionRequest');
    fs.mkdirSync(path.join(home.dir, '.claude'));
    const settingsFile = path.join(home.dir, '.claude', 'settings.json');
    fs.writeFileSync(settingsFile, users.settings);
    const digest = () => createHash('sha256').update(fs.readFileSync(settingsFile)).digest('hex');
    const before = digest();
    const env: Record<string, string> = {};
    const full = claudeRunner.claudeEnv({ home, baseUrl: endpoint.url });
    for (const [k, v] of Object.entries(full) as [string, string][]) if (process.env[k] !== v) env[k] = v;
    const { runs } = hookedRuns();
    const run = runs.launch({ name: 'claude', command: claude, args: ['--permission-mode', 'default', 'remove it'], cwd, env });
    register(run.tree.record.rootPid);
    assert.strictEqual(run.definition.args?.[0], '--permission-mode', 'the definition is not changed');
    await waitFor('claude waiting', () => run.attention.current.state === 'waiting', 60_000);
    assert.strictEqual(run.attention.current.message, 'Claude needs your permission');
    await users.waitFor(() => true, 10_000);
    assert.strictEqual(users.events().length, 1, "the user's own hook fired too");
    assert.strictEqual(digest(), before, "the user's settings file is as it was");
    run.write('1');
    assert.strictEqual(run.attention.current.state, 'working', 'the key ended the wait');
    await waitFor('the command run', () => !fs.existsSync(path.join(cwd, 'victim')), 30_000);
    await runs.kill(run.id);
  });

  it('a program that is not a proven agent CLI gets nothing added, and no inherited AGENT_TREES_NOTIFY', async () => {
    const { runs } = hookedRuns();
    const out = path.join(tmpDir(), 'env');
    const inherited = process.env[NOTIFY_VARIABLE];
    process.env[NOTIFY_VARIABLE] = `1:2:${'a'.repeat(32)}:/somewhere`; // as if this host ran inside a hooked tree
    try {
      const run = runs.launch({ name: 'claude', command: '/bin/sh', args: ['-c', `env > ${out}; echo "$@" >> ${out}`, 'x', 'arg'] });
      register(run.tree.record.rootPid);
      await waitFor('its environment and arguments written', () => fs.existsSync(out) && /^arg$/m.test(fs.readFileSync(out, 'utf8')));
    } finally {
      if (inherited === undefined) delete process.env[NOTIFY_VARIABLE];
      else process.env[NOTIFY_VARIABLE] = inherited;
    }
    const written = fs.readFileSync(out, 'utf8');
    assert.ok(!written.includes(`${NOTIFY_VARIABLE}=`), 'no AGENT_TREES_NOTIFY');
    assert.match(written, /^arg$/m, 'its arguments as given, nothing added');
  });
});
