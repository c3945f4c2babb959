/**
 * Whether an extension host can keep its records (src/extension/recordsFolder.ts) on a full disk and a read-only file
 * system: a small tmpfs mounted in a mount namespace of a child's own (`unshare -rm`: nothing is mounted for anyone
 * else, and the mount goes with the child), since permissions alone do not stop root.
 */
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPO } from '../../support/repo';

/** The check, run in a child that first mounts a 16 KB tmpfs on `dir` and runs `prepare` (sh) in it. */
function problemOnTmpfs(dir: string, prepare: string): { problem?: string; error?: string } {
  const check =
    `const { RecordStore } = require(${JSON.stringify(path.join(REPO, 'out', 'src', 'proc'))});` +
    `const { recordsFolderProblem } = require(${JSON.stringify(path.join(REPO, 'out', 'src', 'extension', 'recordsFolder'))});` +
    `process.stdout.write(JSON.stringify({ problem: recordsFolderProblem(new RecordStore(process.argv[1])) ?? null }));`;
  const script = `set -e; mount -t tmpfs -o size=16k,mode=0700 tmpfs "$1"; cd "$1"; ${prepare}; exec "$2" -e "$3" "$1/owned-trees"`;
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', script, 'sh', dir, process.execPath, check], { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) return { error: `${r.error?.message ?? ''} ${r.stderr}`.trim() };
  return { problem: JSON.parse(r.stdout).problem ?? undefined };
}

describe('whether records can be kept on a full or read-only file system (the activation check)', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-records-check-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('a full disk: the write that would hold a record fails, and the sentence says the disk is full', function () {
    const r = problemOnTmpfs(root, 'mkdir -m 700 owned-trees; head -c 1048576 /dev/zero > fill 2>/dev/null || true');
    if (r.error !== undefined) assert.fail(`no private mount namespace with a tmpfs here (unshare -rm): ${r.error}`);
    assert.ok(r.problem?.startsWith(`records folder ${root}/owned-trees: cannot be written (ENOSPC)`), r.problem);
    assert.match(r.problem!, /the disk is full$/);
  });

  it('a disk with room for one write but not for records: the sentence says the disk is full', function () {
    const r = problemOnTmpfs(root, 'mkdir -m 700 owned-trees');
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
