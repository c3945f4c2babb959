/**
 * Spawning an owned tree (spawn/spawnTree.ts, through the owner): a tree is findable from the moment it exists.
 * Its root does not run what it was asked to before the owner's record of it is in place, so an owner killed at
 * any moment of a spawn leaves no tree that no record names.
 */
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { processCore } from '../../../src/proc';
import { runCli } from '../../support/cli';
import { CLI, tmpDir } from '../../support/repo';
import { register, waitAllDead } from '../../support/started';
import { waitFor } from '../../support/wait';
import { requireCgroupTier, requireTools } from '../../support/environment';

const table = processCore().table;

describe('spawning an owned tree', function () {
  this.timeout(30_000);

  for (const tier of ['cgroup', 'group'] as const) {
    it(`runs nothing of the command before its record is in place: an owner SIGKILLed as it renames the record into place leaves no tree (${tier} tier)`, async function () {
      requireTools(this, 'strace');
      if (tier === 'cgroup') requireCgroupTier(this);
      const records = tmpDir();
      const dir = tmpDir();
      const ran = path.join(dir, 'ran');
      // The second rename of the run is its record's: `.current` is linked first, then the record renamed.
      const r = spawnSync(
        'strace',
        [
          '-qq',
          '-o',
          '/dev/null',
          '-e',
          'trace=rename',
          '-e',
          'inject=rename:signal=KILL:when=2',
          process.execPath,
          CLI,
          'run',
          '--records',
          records,
          ...(tier === 'group' ? ['--no-cgroup'] : []),
          '--',
          'sh',
          '-c',
          `echo $$ > "${ran}"; trap "" HUP TERM; exec sleep 342`,
        ],
        { stdio: 'ignore', timeout: 20_000 },
      );
      assert.ok(r.signal === 'SIGKILL' || r.status === 128 + 9, `the run was SIGKILLed (strace: ${r.signal ?? r.status})`);
      const pid = fs.existsSync(ran) ? Number(fs.readFileSync(ran, 'utf8')) : 0;
      if (pid) register(pid);
      try {
        assert.strictEqual(pid, 0, `the command ran (pid ${pid}) before its record was in place`);
        // What the dead owner left is only what a sweep tidies: no record names a tree, and no tree runs.
        const swept = await runCli(['sweep', '--records', records, '--json']);
        assert.strictEqual(JSON.parse(swept.stdout).trees.length, 0, swept.stdout);
        // The dead owner's watchdog sweeps too; its trace stays until its own sweep is done (records/store.ts).
        await waitFor('the records folder empty', () => fs.readdirSync(records).length === 0, 20_000).catch(() => undefined);
        assert.deepStrictEqual(fs.readdirSync(records), []);
      } finally {
        if (pid && table.read(pid)) process.kill(pid, 'SIGKILL');
        if (pid) await waitAllDead([pid]);
      }
    });
  }
});
