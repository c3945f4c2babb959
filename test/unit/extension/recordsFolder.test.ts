/**
 * Whether an extension host can keep its records (src/extension/recordsFolder.ts): the sentence activation shows
 * names the folder and what is wrong with it. A full disk and a read-only file system are a small tmpfs mounted in
 * a mount namespace of a child's own (`unshare -rm`: nothing is mounted for anyone else, and the mount goes with
 * the child), since permissions alone do not stop root.
 */
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { RecordStore } from '../../../src/proc';
import { recordsFolderProblem } from '../../../src/extension/recordsFolder';

/** The check, run in a child that first mounts a 16 KB tmpfs on `dir` and runs `prepare` (sh) in it. */
function problemOnTmpfs(dir: string, prepare: string): { problem?: string; error?: string } {
  const check =
    `const { RecordStore } = require(${JSON.stringify(require.resolve('../../../src/proc'))});` +
    `const { recordsFolderProblem } = require(${JSON.stringify(require.resolve('../../../src/extension/recordsFolder'))});` +
    `process.stdout.write(JSON.stringify({ problem: recordsFolderProblem(new RecordStore(process.argv[1])) ?? null }));`;
  const script = `set -e; mount -t tmpfs -o size=16k,mode=0700 tmpfs "$1"; cd "$1"; ${prepare}; exec "$2" -e "$3" "$1/owned-trees"`;
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', script, 'sh', dir, process.execPath, check], { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) return { error: `${r.error?.message ?? ''} ${r.stderr}`.trim() };
  return { problem: JSON.parse(r.stdout).problem ?? undefined };
}

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

  it('a full disk: the write that would hold a record fails, and the sentence says the disk is full', function () {
    const r = problemOnTmpfs(root, 'mkdir -m 700 owned-trees; head -c 1048576 /dev/zero > fill 2>/dev/null || true');
    if (r.error !== undefined) assert.fail(`no private mount namespace with a tmpfs here (unshare -rm): ${r.error}`);
    assert.ok(r.problem?.startsWith(`records folder ${root}/owned-trees: cannot be written (ENOSPC)`), r.problem);
    assert.match(r.problem!, /the disk is full$/);
  });

  it('a read-only file system: the sentence says so', function () {
    const r = problemOnTmpfs(root, 'mkdir -m 700 owned-trees; mount -o remount,ro "$1"');
    if (r.error !== undefined) assert.fail(`no private mount namespace with a tmpfs here (unshare -rm): ${r.error}`);
    assert.ok(r.problem?.startsWith(`records folder ${root}/owned-trees: cannot be written (EROFS)`), r.problem);
    assert.match(r.problem!, /the file system is read-only$/);
  });
});
