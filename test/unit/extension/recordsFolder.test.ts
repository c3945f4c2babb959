/**
 * Whether an extension host can keep its records (src/extension/recordsFolder.ts): the sentence activation shows
 * names the folder and what is wrong with it. A full disk and a read-only file system: test/system/extension.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { RecordStore } from '../../../src/proc';
import { recordsFolderProblem } from '../../../src/extension/recordsFolder';

describe('whether records can be kept (the activation check)', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-records-check-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('a folder that can be made and written: no problem, and nothing left in it', () => {
    const dir = path.join(root, 'globalStorage', 'owned-trees');
    assert.strictEqual(recordsFolderProblem(new RecordStore(dir)), undefined);
    assert.deepStrictEqual(fs.readdirSync(dir), []);
  });

  it("a file where the extension's storage folder should be: names the folder and says a file is in the way", () => {
    fs.writeFileSync(path.join(root, 'globalStorage'), '');
    const dir = path.join(root, 'globalStorage', 'owned-trees');
    const problem = recordsFolderProblem(new RecordStore(dir));
    assert.ok(problem?.includes(dir), problem);
    assert.match(problem!, /ENOTDIR.*a file stands where a folder should be/);
  });

  it('a file where the records folder should be', () => {
    const dir = path.join(root, 'owned-trees');
    fs.writeFileSync(dir, '');
    assert.match(recordsFolderProblem(new RecordStore(dir)) ?? '', /owned-trees: not a folder/);
  });

  it('a symbolic link to nothing', () => {
    const dir = path.join(root, 'owned-trees');
    fs.symlinkSync(path.join(root, 'nowhere', 'at-all'), dir);
    const problem = recordsFolderProblem(new RecordStore(dir));
    assert.ok(problem?.startsWith(`records folder ${dir}`), problem);
  });

  it('a folder other users may write to: its records would not be trusted', () => {
    const dir = path.join(root, 'owned-trees');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o777);
    assert.match(recordsFolderProblem(new RecordStore(dir)) ?? '', /writable by other users/);
  });
});
