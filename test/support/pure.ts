/**
 * Root hook of the unit run (.mocharc.unit.json): a unit test is pure, it starts no process and so runs on every
 * platform. Starting one fails the test that does it: a test on real processes belongs in test/system.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the module object itself, to replace its functions
const childProcess = require('child_process') as Record<string, unknown>;

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  childProcess[name] = () => {
    throw new Error(`a unit test starts no process (child_process.${name}): a test on real processes goes in test/system`);
  };
}
