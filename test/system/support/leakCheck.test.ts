/** The leak check of the unit and system runs (test/support/leakCheck.ts), run on a spec of its own that leaks. */
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as path from 'path';
import { REPO } from '../../support/repo';
import { RUN_MARKER, runId } from '../../support/started';

describe('the leak check', () => {
  it('fails a run that leaves a process behind, and ends that process', function () {
    this.timeout(20_000);
    const mocha = path.join(REPO, 'node_modules', 'mocha', 'bin', 'mocha.js');
    const r = spawnSync(
      process.execPath,
      [
        mocha,
        '--no-config',
        '--file',
        path.join(REPO, 'out', 'test', 'support', 'leakCheck.js'),
        path.join(REPO, 'test', 'fixtures', 'leaky.spec.js'),
      ],
      {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, [RUN_MARKER]: `leaky-${runId()}` }, // its own run: it must not see (or end) ours
      },
    );
    assert.notStrictEqual(r.status, 0, r.stdout);
    assert.match(r.stdout, /leak check: 1 process\(es\) started by the tests were still alive/);
    assert.match(r.stdout, /sleep 30/);
  });
});
