#!/usr/bin/env node
// Runs the same integration suite (out/test/integration/index.js) in desktop VS Code through
// @vscode/test-electron, for a machine that can download VS Code (this project's CI machines cannot:
// they use scripts/host/runTests.js with code-server instead). Phased tests are not run here: they
// need the phases of runTests.js, so `inPhase` blocks declare nothing without AGENT_TREES_PHASE.
//
// Usage (after `npm run build-tests && node esbuild.js`):
//   node scripts/host/runTestElectron.js [--version 1.100.3]     (or: npm run test:electron)
// Needs a display (or xvfb-run) like any Electron app. Prints `N passed, N failed` from the suite's
// result file; exit code 0 only when the result file says every test passed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

async function main() {
  const { runTests } = require('@vscode/test-electron');
  const root = path.resolve(__dirname, '..', '..');
  const vi = process.argv.indexOf('--version');
  const version = vi > 0 ? process.argv[vi + 1] : '1.100.3';
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-electron-'));
  const resultFile = path.join(tmp, 'result.json');
  const workspace = path.join(tmp, 'workspace');
  fs.mkdirSync(workspace);
  let result;
  let error;
  try {
    await runTests({
      version,
      extensionDevelopmentPath: root,
      extensionTestsPath: path.join(root, 'out', 'test', 'integration', 'index.js'),
      extensionTestsEnv: { AGENT_TREES_TEST_RESULT: resultFile },
      launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust', '--user-data-dir', path.join(tmp, 'user-data')],
    });
  } catch (e) {
    error = e;
  }
  try {
    result = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
  } catch {
    // no result: the suite never ran, or its extension host died
  }
  if (result && result.state === 'done' && result.failed === 0 && result.passed > 0 && !error) {
    console.log(`${result.passed} passed, 0 failed`);
    fs.rmSync(tmp, { recursive: true, force: true });
    return;
  }
  if (error) console.error(`test-electron: ${error.message || error}`);
  if (!result) console.error('no result file: the suite did not run to the end');
  console.log(`${result ? result.passed : 0} passed, ${Math.max(result ? result.failed : 0, 1)} failed`);
  process.exitCode = 1;
}

main();
