// What a sweep says, in a user's words: what it found (which agent trees, what was still running, an empty cgroup)
// and where it came from (the process that started them, when, and that it was stopped before it could end them).
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { localSweepParts, Logger, processCore, RecordStore, selfIdentity, sweepOrphans } from '../../../src/proc';
import { removeUnnamedEmptyCgroups, treeCgroupPath } from '../../../src/proc/cgroup/treeCgroup';
import { REPO, tmpDir } from '../../support/repo';
import { fixturePids } from '../../support/fixtures';
import { register, waitAllDead } from '../../support/started';
import { requireCgroupTier } from '../../support/environment';

/** A logger that keeps its info and warning lines. */
function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (m: string) => lines.push(m);
  return { lines, trace() {}, debug() {}, info: keep, warn: keep, error: keep };
}

const TIME = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d';

describe('what a sweep says: what it found and where it came from', function () {
  this.timeout(30_000);

  it('the trees of a stopped owner: their names, who started them and when, and what was still running', async () => {
    const records = tmpDir();
    const pidfile = path.join(tmpDir(), 'pids');
    const owner = spawn(process.execPath, [path.join(REPO, 'test', 'fixtures', 'owner.js'), records, 'daemon', pidfile, 'off'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    register(owner.pid!);
    const [treeId] = (await new Promise<string>((resolve) => owner.stdout!.once('data', (d) => resolve(String(d))))).trim().split(' ');
    const pids = await fixturePids(pidfile);
    owner.kill('SIGKILL');
    await new Promise((resolve) => owner.once('exit', resolve));
    const log = capture();
    const table = processCore().table;
    const result = await sweepOrphans(new RecordStore(records), {
      ...localSweepParts(processCore()),
      self: selfIdentity(table),
      graceMs: 300,
      cgroups: 'off',
      log,
    });
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.ok(result.killed > 0);
    const ended = result.killed === 1 ? '1 process' : `${result.killed} processes`;
    const expected = [
      new RegExp(
        `^found agent tree "tree\\.sh" started by process ${owner.pid} \\(started ${TIME}\\), which was stopped before it could end it ` +
          '\\(an editor window closed or crashed, or agent-trees run killed\\): ending what is left$',
      ),
      new RegExp(`^"tree\\.sh" \\(tree ${treeId}\\) of stopped process ${owner.pid}: ended ${ended} it left running$`),
      new RegExp(`^sweep: ended ${ended} that 1 agent tree of stopped owners left running$`),
    ];
    for (const re of expected)
      assert.ok(
        log.lines.some((l) => re.test(l)),
        `${re} in:\n${log.lines.join('\n')}`,
      );
  });

  it('an empty cgroup no record names: the agent tree it was made for, when, and why it was left', function () {
    const tier = requireCgroupTier(this, 'directory');
    const id = `${process.pid.toString(16)}feed`;
    const dir = treeCgroupPath(tier, id);
    fs.mkdirSync(dir);
    try {
      // Every other tree cgroup counts as named: only this test's one may go.
      const others = new Set(
        fs
          .readdirSync(tier.base)
          .map((n) => path.join(tier.base, n))
          .filter((d) => d !== dir),
      );
      const log = capture();
      assert.deepStrictEqual(removeUnnamedEmptyCgroups(tier, others, Date.now() + 120_000, log), [dir]);
      assert.strictEqual(log.lines.length, 1, log.lines.join('\n'));
      const line = new RegExp(
        `^removed ${dir}: the empty cgroup of agent tree ${id}, made ${TIME}; its processes had all ended, but what ran it ` +
          '\\(an editor window, or agent-trees run\\) was stopped before it could remove it, ' +
          'or let them go \\(--keep-descendants\\) and could not move them out of it$',
      );
      assert.match(log.lines[0], line);
    } finally {
      if (fs.existsSync(dir)) fs.rmdirSync(dir);
    }
  });
});
