/** The `agent-trees` launcher the extension puts on its terminals' PATH (src/extension/cliLauncher.ts), run for real. */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { writeCliLauncher } from '../../../src/extension/cliLauncher';
import { CLI, tmpDir } from '../../support/repo';

describe('the agent-trees launcher for terminals', () => {
  it('runs the bundled CLI with the given Node, and is rewritten only when it changes', async () => {
    const dir = path.join(tmpDir(), 'bin');
    writeCliLauncher(dir, { execPath: process.execPath, cliScript: CLI, platform: 'linux', electron: false });
    const file = path.join(dir, 'agent-trees');
    const before = fs.statSync(file);
    assert.strictEqual(before.mode & 0o111, 0o111, 'executable');
    writeCliLauncher(dir, { execPath: process.execPath, cliScript: CLI, platform: 'linux', electron: false });
    assert.strictEqual(fs.statSync(file).ino, before.ino, 'same content: not rewritten');
    const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(file, ['--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
    assert.strictEqual(out.code, 0);
    assert.match(out.stdout, /^Usage:\n\s+agent-trees run/);
    writeCliLauncher(dir, { execPath: process.execPath, cliScript: CLI, platform: 'linux', electron: true });
    assert.match(fs.readFileSync(file, 'utf8'), /^ELECTRON_RUN_AS_NODE=1 exec '.+' '.+cli\.js' "\$@"$/m);
    writeCliLauncher(dir, {
      execPath: 'C:\\Program Files\\Code\\Code.exe',
      cliScript: 'C:\\ext\\dist\\cli.js',
      platform: 'win32',
      electron: true,
    });
    assert.strictEqual(
      fs.readFileSync(path.join(dir, 'agent-trees.cmd'), 'utf8'),
      '@echo off\r\nsetlocal\r\nset ELECTRON_RUN_AS_NODE=1\r\n"C:\\Program Files\\Code\\Code.exe" "C:\\ext\\dist\\cli.js" %*\r\n',
    );
  });
});
