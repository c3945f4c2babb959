/** Loading the pseudo-terminal module (src/proc/pty/spawnPtyTree.ts): why it cannot load, and for which platform. */
import * as assert from 'assert';
import { loadPtyWith } from '../../../src/proc/pty/spawnPtyTree';

describe('the pseudo-terminal module', () => {
  it('says why it cannot load, and for which platform', () => {
    const missing = loadPtyWith(() => {
      throw new Error("Cannot find module '@lydell/node-pty'\nRequire stack:\n- /x/dist/extension.js");
    }, 'linux');
    assert.strictEqual(missing.module, undefined);
    assert.strictEqual(missing.problem, `cannot load @lydell/node-pty (linux-${process.arch}): Cannot find module '@lydell/node-pty'`);
    assert.match(loadPtyWith(() => ({}), 'darwin').problem!, /has no spawn\(\)/);
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the real module, loaded as pty.ts loads it
    const real = () => require('@lydell/node-pty');
    assert.match(loadPtyWith(real, 'win32').problem!, /on Windows agents run on pipes/);
    assert.strictEqual(typeof loadPtyWith(real, 'linux').module?.spawn, 'function');
  });
});
