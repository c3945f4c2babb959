/**
 * Where things are, for the unit, system and integration tests and the benchmark: the repository, its fixtures
 * and bundles, temp folders, and the harness-side process helper (test/support/processes.js).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type * as Processes from './processes';

/** The repository (this file runs as out/test/support/repo.js). */
export const REPO = path.resolve(__dirname, '..', '..', '..');
/** The test fixtures' folder. */
export const FIXTURES = path.join(REPO, 'test', 'fixtures');
/** The fixture tree builder (test/fixtures/tree.sh MODE PIDFILE). */
export const FIXTURE = path.join(FIXTURES, 'tree.sh');
/** The bundled CLI; AGENT_TREES_TEST_CLI points the CLI tests at another build (an earlier one, say). */
export const CLI = process.env.AGENT_TREES_TEST_CLI ?? path.join(REPO, 'dist', 'cli.js');

/**
 * Reading /proc and killing by pid + start time, independent of the product's core on purpose (the tests check the
 * core). Plain JavaScript shared with scripts/host, loaded from the source tree.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain JavaScript with no build step, by path
export const processes: typeof Processes = require(path.join(REPO, 'test', 'support', 'processes.js'));

/** A fresh folder under the system's temp folder (mode 0700). */
export function tmpDir(prefix = 'agent-trees-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
