/**
 * Killing a whole tree (src/proc/kill) on real processes: grandchildren, a root that exits first, setsid children,
 * daemons re-parented to PID 1, SIGTERM-ignoring members, forkers, joined requests, and never our own group; then
 * Kill Process on one process and its children, in a tree and outside our trees.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { processCore, TreeOwner } from '../../../src/proc';
import { resolveTreeMembers } from '../../../src/proc/members/treeMembers';
import { spawnTree } from '../../../src/proc/spawn/spawnTree';
import { fixturePids } from '../../support/fixtures';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { WATCHDOG_VARIABLE } from '../../../src/proc/owner/watchdog';
import { TREE_ID_VARIABLE } from '../../../src/proc/platform/processTable';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { waitFor } from '../../support/wait';
import { requireCgroupTier, requireEnvironment } from '../../support/environment';

const core = processCore();
const treeKiller = core.killer;
const table = core.table;

/** The live watchdog of owner `ownerPid` (its child carrying the watchdog variable), or undefined. */
function watchdogOf(ownerPid: number): number | undefined {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      if (env.some((e) => e.startsWith(`${WATCHDOG_VARIABLE}=${ownerPid}:`)) && table.read(Number(name))) return Number(name);
    } catch {
      /* gone, or not readable */
    }
  }
  return undefined;
}

/** Starts a fixture tree through a TreeOwner in the group tier (process group, session, descendants, tag). */
async function ownedFixture(mode: string, options: { cgroups?: 'auto' | 'off'; owner?: TreeOwner } = {}) {
  const owner = options.owner ?? new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: options.cgroups ?? 'off' });
  const pidfile = path.join(tmpDir(), 'pids');
  const tree = owner.spawn({ command: FIXTURE, args: [mode, pidfile], stdio: 'ignore', cgroups: options.cgroups ?? 'off' });
  register(tree.child.pid!);
  const pids = await fixturePids(pidfile);
  return { owner, tree, pids, id: tree.record.id };
}

describe('killing a whole tree (real processes)', () => {
  it('kills a grandchild with its tree', async () => {
    const { owner, id, pids } = await ownedFixture('deep');
    const grandchild = pids.roles.get('grandchild')![0];
    assert.ok(
      owner.members(id).some((p) => p.pid === grandchild),
      'grandchild is a member',
    );
    const report = await owner.kill(id, 2000);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.strictEqual(report.survivors, 0);
    assert.ok(report.signalled >= 3, `signalled ${report.signalled}`);
  });

  it('reaps the group of a root that exited first, leaving live children', async () => {
    const { owner, id, tree, pids } = await ownedFixture('root-exits');
    await waitFor('root to exit', () => tree.rootExit);
    const children = pids.roles.get('child')!;
    assert.deepStrictEqual(aliveOf(children).length, 2, 'children outlive the root');
    assert.strictEqual(owner.members(id).length, 2);
    const report = await owner.kill(id, 2000);
    assert.deepStrictEqual(await waitAllDead(children), []);
    assert.strictEqual(report.signalled, 2);
  });

  it('reaches a child that called setsid (tag and descendant walk)', async () => {
    const { owner, id, pids } = await ownedFixture('setsid');
    const child = pids.roles.get('setsid')![0];
    const info = table.read(child)!;
    assert.strictEqual(info.sid, child, 'the child leads its own session');
    assert.ok(owner.members(id).some((p) => p.pid === child));
    await owner.kill(id, 2000);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('reaches a daemonized child re-parented to PID 1 through its tag', async () => {
    const { owner, id, pids } = await ownedFixture('daemon');
    const daemon = pids.roles.get('daemon')![0];
    const info = table.read(daemon)!;
    assert.notStrictEqual(info.pgid, owner.get(id)!.record.pgid, 'the daemon left the group');
    await waitFor('daemon re-parented away from the tree', () => {
      const ppid = table.read(daemon)?.ppid;
      return ppid !== undefined && !pids.all.includes(ppid);
    });
    assert.ok(
      owner.members(id).some((p) => p.pid === daemon),
      'found by tag',
    );
    await owner.kill(id, 2000);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('kills a SIGTERM-ignoring tree after the grace period', async () => {
    const { owner, id, pids } = await ownedFixture('ignore-term');
    const escalations: string[] = [];
    const onEscalate = (treeId: string) => escalations.push(treeId);
    treeKiller.on('escalate', onEscalate);
    try {
      const report = await owner.kill(id, 300);
      assert.strictEqual(report.escalated, true);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.deepStrictEqual(escalations, [id]);
    } finally {
      treeKiller.off('escalate', onEscalate);
    }
  });

  it('joins a second stop request to the running one: one escalation, one report', async () => {
    const { owner, id, pids } = await ownedFixture('ignore-term');
    let escalations = 0;
    let terminations = 0;
    const onEscalate = (treeId: string) => treeId === id && escalations++;
    const onTerminate = (treeId: string) => treeId === id && terminations++;
    treeKiller.on('escalate', onEscalate).on('terminate', onTerminate);
    try {
      const first = owner.kill(id, 500);
      await waitFor('the first request to send SIGTERM', () => terminations === 1);
      const second = owner.kill(id, 500); // during the first one's grace period
      const [a, b] = await Promise.all([first, second]);
      assert.strictEqual(a, b, 'both requests get the same report');
      assert.strictEqual(escalations, 1);
      assert.strictEqual(terminations, 1);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
    } finally {
      treeKiller.off('escalate', onEscalate).off('terminate', onTerminate);
    }
  });

  it('keeps the members it froze for the whole kill: one orphaned by the group SIGKILL still dies, and the count is true', async () => {
    // Group tier: the setsid'd, untagged member is a member only through its parent, the root, which ignores
    // SIGTERM and so dies in the group SIGKILL; by then the member's parent is PID 1.
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pid');
    const script = `trap '' TERM; setsid env -i /bin/sh -c 'trap "" TERM HUP; echo $$ > "$0"; exec sleep 471' "${pidfile}" & sleep 481`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script], stdio: 'ignore', cgroups: 'off' });
    register(tree.child.pid!);
    const orphan = Number(await waitFor('the setsid member', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
    register(orphan);
    await waitFor('the member to run sleep', () => table.read(orphan)?.name === 'sleep');
    assert.ok(
      owner.members(tree.record.id).some((p) => p.pid === orphan),
      'a member through its parent',
    );
    const report = await owner.kill(tree.record.id, 300);
    assert.deepStrictEqual(await waitAllDead([orphan]), [], 'the member frozen at the start died with the tree');
    assert.strictEqual(report.survivors, 0);
    assert.strictEqual(report.signalled, 3, `ended ${report.signalled}: the root, its sleep and the setsid member`);
  });

  it('with no grace, stops every member before the group SIGKILL: one that is a member only through its parent still dies', async () => {
    // As above, with no SIGTERM round (and so no freeze) before the group SIGKILL.
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pid');
    const script = `trap '' TERM; setsid env -i /bin/sh -c 'trap "" TERM HUP; echo $$ > "$0"; exec sleep 472' "${pidfile}" & sleep 482`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script], stdio: 'ignore', cgroups: 'off' });
    register(tree.child.pid!);
    const orphan = Number(await waitFor('the setsid member', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
    register(orphan);
    await waitFor('the member to run sleep', () => table.read(orphan)?.name === 'sleep');
    const report = await owner.kill(tree.record.id, 0);
    assert.deepStrictEqual(await waitAllDead([orphan]), [], 'the member died with the tree');
    assert.strictEqual(report.survivors, 0);
    assert.strictEqual(report.signalled, 3, `ended ${report.signalled}: the root, its sleep and the setsid member`);
  });

  it('stops every member before the group SIGKILL: one born in the grace, a member only through its parent, still dies', async () => {
    // Group tier: the root ignores SIGTERM, and on it starts an untagged helper in a session of its own, which no
    // freeze before the grace saw; the group SIGKILL that ends the grace then makes its parent PID 1.
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pid');
    const onTerm = `setsid env -i /bin/sh -c 'trap "" TERM HUP; echo $$ > "$0"; exec sleep 473' "${pidfile}" &`;
    const script = `trap '${onTerm.replace(/'/g, `'\\''`)}' TERM; echo ready; while :; do sleep 0.05; done`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script], stdio: ['ignore', 'pipe', 'ignore'], cgroups: 'off' });
    register(tree.child.pid!);
    await new Promise((resolve) => tree.child.stdout!.once('data', resolve));
    let born = 0;
    const killed = owner.kill(tree.record.id, 2000);
    try {
      born = Number(await waitFor('the helper born in the grace', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(born);
      const report = await killed;
      assert.deepStrictEqual(await waitAllDead([born]), [], 'the helper born in the grace died with the tree');
      assert.strictEqual(report.survivors, 0);
    } finally {
      await killed;
      if (born && aliveOf([born]).length) process.kill(born, 'SIGKILL');
    }
  });

  it("a session leader posing as a member's watchdog keeps cgroup.kill off the tree while that member lives, then dies with the rest", async function () {
    requireCgroupTier(this);
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' });
    const pidfile = path.join(tmpDir(), 'pid');
    // What a watchdog is (see watchdogsIn): its own session, its parent's pid and start ticks in the variable. The
    // parent leads a session of its own too, so the SIGKILL of the root's group leaves it, and the pose holds.
    const posing =
      `set -- $(cat /proc/$$/stat); shift 21; ${WATCHDOG_VARIABLE}="$$:$1" setsid sleep 61 & ` +
      'echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait';
    const script = `i=0; while [ $i -lt 40 ]; do sleep 61 & i=$((i+1)); done; setsid sh -c '${posing}' "$0" & wait`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    assert.strictEqual(tree.tier, 'cgroup');
    const pose = Number(await waitFor('the tree', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
    register(pose);
    const parent = processCore().table.read(pose)!.ppid;
    register(parent);
    await waitFor('its 42 members', () => owner.members(tree.record.id).length === 42); // the one posing is none yet
    const report = await owner.kill(tree.record.id, 0);
    assert.ok(
      report.refused.some((r) => r.includes(`not killed as a whole: pid ${pose} is the watchdog of process ${parent}`)),
      report.refused.join('; '),
    );
    assert.strictEqual(report.survivors, 0, `survivors ${report.survivorPids.join(', ')}`);
    assert.strictEqual(report.signalled, 43, 'the root, its 40 sleepers, the parent and the one posing, each counted once');
    assert.deepStrictEqual(await waitAllDead([pose, parent, tree.child.pid!]), [], 'a member again once its parent died');
  });

  for (const tier of ['cgroup', 'group'] as const) {
    it(`a member posing as the watchdog of the process that adopted it (PID 1 or a subreaper, no member) is a member, and dies with the tree (${tier} tier)`, async function () {
      if (tier === 'cgroup') requireCgroupTier(this);
      const cgroups = tier === 'cgroup' ? 'auto' : 'off';
      const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
      const pidfile = path.join(tmpDir(), 'pid');
      // Daemonized (its own session, its parent gone), it names whoever adopted it as its owner, with that one's
      // exact start ticks: the shape of a watchdog whose owner outlives every kill of the tree.
      // It waits until its parent is no process of the tree's session ($1 is the session's id).
      const posing =
        'sid=$1; while set -- $(cat /proc/$$/stat); set -- $(cat /proc/$4/stat); [ -z "$1" ] || [ "$6" = "$sid" ]; do sleep 0.05; done; ' +
        `pp=$1; shift 21; echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec env ${WATCHDOG_VARIABLE}="$pp:$1" sleep 61`;
      const script = `(setsid sh -c '${posing}' "$0" $$ &); exec sleep 61`;
      const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: 'ignore', cgroups });
      register(tree.child.pid!);
      assert.strictEqual(tree.tier, tier);
      const pose = Number(await waitFor('the pose', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(pose);
      await waitFor('its variable', () => fs.readFileSync(`/proc/${pose}/environ`, 'latin1').includes(`${WATCHDOG_VARIABLE}=`));
      try {
        const adopter = table.read(pose)!.ppid;
        assert.ok(
          owner.members(tree.record.id).some((p) => p.pid === pose),
          `pid ${pose}, posing as the watchdog of ${adopter}, is a member`,
        );
        const report = await owner.kill(tree.record.id, 0);
        assert.deepStrictEqual(await waitAllDead([pose, tree.child.pid!]), [], 'the pose died with the tree');
        assert.strictEqual(report.survivors, 0, `survivors ${report.survivorPids.join(', ')}`);
        assert.strictEqual(report.signalled, 2, 'the root and the pose');
        assert.ok(!report.refused.some((r) => r.includes('watchdog')), report.refused.join('; '));
      } finally {
        for (const pid of aliveOf([pose])) process.kill(pid, 'SIGKILL');
        await owner.kill(tree.record.id, 0);
      }
    });

    it(`never kills a watchdog: a run inside the tree keeps its watchdog, which ends the inner tree once the outer kill took its run (${tier} tier)`, async function () {
      if (tier === 'cgroup') requireCgroupTier(this);
      const cgroups = tier === 'cgroup' ? 'auto' : 'off';
      const innerRecords = tmpDir();
      const pidfile = path.join(tmpDir(), 'pid');
      const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
      // An MCP wrapper used by an agent that itself runs as an owned tree: agent-trees run inside the tree.
      const inner = `trap '' TERM; echo $$ > "${pidfile}"; exec sleep 491`;
      const tree = owner.spawn({
        command: process.execPath,
        args: [
          CLI,
          'run',
          '--records',
          innerRecords,
          '--grace',
          '5',
          ...(tier === 'group' ? ['--no-cgroup'] : []),
          '--',
          'sh',
          '-c',
          inner,
        ],
        stdio: 'ignore',
        cgroups,
      });
      register(tree.child.pid!);
      const innerRoot = Number(await waitFor('the inner tree', () => fs.existsSync(pidfile) && fs.readFileSync(pidfile, 'utf8').trim()));
      register(innerRoot);
      const innerRecord = path.join(innerRecords, `${tree.child.pid}.json`);
      await waitFor('the inner record', () => fs.existsSync(innerRecord));
      const watchdog = await waitFor('the inner watchdog', () => owner.members(tree.record.id).length > 0 && watchdogOf(tree.child.pid!));
      register(watchdog);
      assert.ok(!owner.members(tree.record.id).some((p) => p.pid === watchdog), 'the watchdog is no member of the outer tree');
      const report = await owner.kill(tree.record.id, 300);
      assert.strictEqual(report.survivors, 0, `survivors ${report.survivorPids.join(', ')}`);
      assert.deepStrictEqual(await waitAllDead([innerRoot, tree.child.pid!], 10_000), [], 'the inner tree and its run are gone');
      // Only the inner watchdog removes the inner record: nobody else sweeps that folder.
      await waitFor('the inner record to be removed by its watchdog', () => fs.readdirSync(innerRecords).length === 0, 10_000);
      assert.deepStrictEqual(await waitAllDead([watchdog], 10_000), [], 'the watchdog exited after its sweep');
    });
  }

  it('counts every process an immediate group SIGKILL ended', async () => {
    const { owner, id, pids } = await ownedFixture('deep');
    const report = await owner.kill(id, 0);
    assert.strictEqual(report.escalated, true);
    assert.strictEqual(report.signalled, 3, 'root, child and grandchild');
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('kills a tree that is already dead without throwing', async () => {
    const { owner, id, pids, tree } = await ownedFixture('deep');
    await owner.kill(id, 1000);
    await waitAllDead(pids.all);
    await waitFor('exit', () => tree.rootExit);
    const again = await treeKiller.kill(tree.record, { graceMs: 1000, continuouslyOwned: true, cgroupVerified: false });
    assert.strictEqual(again.signalled, 0);
    assert.strictEqual(again.survivors, 0);
    const unknown = await owner.kill('no-such-tree', 1000);
    assert.strictEqual(unknown.signalled, 0);
  });

  it('stops a member that keeps forking while the kill runs', async () => {
    const { owner, id, pids } = await ownedFixture('forker');
    await waitFor('the forker to have children', () => owner.members(id).length >= 4);
    const report = await owner.kill(id, 200);
    assert.strictEqual(report.survivors, 0);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
    assert.strictEqual(owner.members(id).length, 0);
  });

  it('never includes a process whose tag merely starts with the tree id', async () => {
    const { owner, id, pids } = await ownedFixture('deep');
    // Same tag prefix, different tree: AGENT_TREES_TREE_ID=<id>x
    const impostor = spawn('sleep', ['60'], { env: { ...process.env, AGENT_TREES_TREE_ID: `${id}x` }, detached: true, stdio: 'ignore' });
    register(impostor.pid!);
    try {
      await waitFor('impostor', () => table.read(impostor.pid!));
      assert.ok(!owner.members(id).some((p) => p.pid === impostor.pid));
      await owner.kill(id, 1000);
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
      assert.ok(aliveOf([impostor.pid!]).length === 1, 'the impostor is untouched');
    } finally {
      impostor.kill('SIGKILL');
    }
  });

  it('finds members through a child whose own child has a lower pid (wraparound)', async function () {
    const { owner, id, pids } = await ownedFixture('wraparound');
    if (pids.roles.has('unsupported')) {
      await owner.kill(id, 500);
      requireEnvironment(this, false, 'root, to choose the next pid (ns_last_pid) for the wraparound fixture');
    }
    const member = pids.roles.get('member')![0];
    const low = pids.roles.get('lowchild')![0];
    assert.ok(low < member, `child ${low} has a lower pid than its parent ${member}`);
    // Seen through the descendant walk alone: drop group, session and tag from the evidence.
    const record = owner.get(id)!.record;
    const snap = table.snapshot();
    const withoutTag = { ...snap, tagged: () => new Map() };
    const viaRoot = resolveTreeMembers(record, withoutTag, { continuouslyOwned: true, cgroupVerified: false }, core).members.map(
      (p) => p.pid,
    );
    assert.ok(viaRoot.includes(low), 'the low-pid child is a member');
    await owner.kill(id, 1000);
    assert.deepStrictEqual(await waitAllDead(pids.all), []);
  });

  it('never signals its own process group, even when that group has lost its leader', async () => {
    const out = path.join(tmpDir(), 'out.json');
    const sh = spawn(
      'sh',
      ['-c', `"${process.execPath}" "${path.join(REPO, 'test', 'fixtures', 'own-group.js')}" "${out}" & echo $!; exit 0`],
      { detached: true, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    register(sh.pid!);
    const nodePid = Number(await new Promise<string>((resolve) => sh.stdout!.once('data', (d) => resolve(String(d)))));
    register(nodePid);
    const result = JSON.parse(await waitFor('the fixture to report', () => fs.existsSync(out) && fs.readFileSync(out, 'utf8'), 15_000));
    assert.strictEqual(result.leaderAlive, false, 'the group really was leaderless');
    assert.strictEqual(result.survived, true);
    assert.strictEqual(result.report.signalled, 0);
  });

  it('reports who it signalled and who survived, and never signals itself or a process of its own group', async () => {
    const pidfile = path.join(tmpDir(), 'pids');
    const spawned = spawnTree({ command: FIXTURE, args: ['deep', pidfile], stdio: 'ignore', cgroups: 'off' }, core);
    register(spawned.child.pid!);
    const pids = await fixturePids(pidfile);
    // A record whose group is our own (the session stays the fixture's), and a process of our group carrying the
    // record's tag: a member by its tag, were it not for the guard. Whether our group itself counts as the tree's
    // depends on how this run was started (a group whose leader has exited is proven by nothing here), so only
    // the tagged process makes the guard decide, whatever the layout.
    const id = 'own-group';
    const tagged = spawn('sleep', ['60'], { env: { ...process.env, [TREE_ID_VARIABLE]: id }, stdio: 'ignore' });
    register(tagged.pid!);
    try {
      await waitFor('the tagged process of our group to run sleep', () => table.read(tagged.pid!)?.name === 'sleep');
      const own = table.read(process.pid)!;
      assert.strictEqual(table.read(tagged.pid!)!.pgid, own.pgid, 'the tagged process is in our group');
      const report = await treeKiller.kill(
        { ...spawned.record, id, pgid: own.pgid, rootPid: process.pid },
        { graceMs: 0, continuouslyOwned: true, cgroupVerified: false },
      );
      assert.ok(report.refused.includes(`pid ${tagged.pid} is in our own process group`), report.refused.join('; '));
      assert.ok(table.read(process.pid), 'still alive');
      assert.deepStrictEqual(aliveOf([tagged.pid!]), [tagged.pid], 'the process of our own group was not signalled');
      assert.deepStrictEqual(await waitAllDead(pids.all), [], 'the fixture tree itself (its session) was killed');
      assert.ok(!report.survivorPids.includes(process.pid), 'protected processes are not members at all');
      assert.ok(!report.survivorPids.includes(tagged.pid!), 'protected processes are not members at all');
    } finally {
      tagged.kill('SIGKILL');
      assert.deepStrictEqual(await waitAllDead([tagged.pid!]), []);
    }
  });
});

describe('killing one process and its children', () => {
  it('ends the subtree and leaves the rest of the tree running', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    // root (sleep, after exec) -> middle sh -> two sleeps
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sh -c "sleep 30 & sleep 30" & exec sleep 30'], stdio: 'ignore' });
    register(tree.child.pid!);
    const root = tree.record.rootPid;
    const members = await waitFor('four members', () => {
      const m = owner.members(tree.record.id);
      return m.length === 4 && m.filter((p) => p.ppid !== root && p.pid !== root).length === 2 ? m : undefined;
    });
    for (const m of members) register(m.pid);
    const middle = members.find((p) => p.ppid === root)!;
    const report = await owner.killProcess(middle.pid, middle.startKey, 300);
    assert.strictEqual(report.signalled, 3, 'the middle shell and its two children');
    assert.deepStrictEqual(await waitAllDead(members.filter((p) => p.pid !== root).map((p) => p.pid)), []);
    assert.strictEqual(aliveOf([root]).length, 1, 'the root lives on');
    const stale = await owner.killProcess(root, processCore().table.read(root)!.startKey + 99999, 300);
    assert.strictEqual(stale.signalled, 0, 'a pid whose start time does not match is not touched');
    assert.strictEqual(aliveOf([root]).length, 1);
    await owner.dispose(300);
    assert.deepStrictEqual(await waitAllDead([root]), []);
  });
});
describe('Kill Process on a process outside our trees', () => {
  it("a process whose start key is not the row's (its pid reused) gets no signal", async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    register(child.pid!);
    try {
      const p = await waitFor('the sleep', () => table.read(child.pid!));
      for (const key of [p.startKey + 1, p.startKey - 1, 0, NaN]) {
        const report = await owner.killForeignProcess(p.pid, key, 100);
        assert.strictEqual(report.signalled, 0, `start key ${key}`);
        assert.deepStrictEqual(aliveOf([p.pid]), [p.pid]);
      }
      const report = await owner.killForeignProcess(p.pid, p.startKey, 100);
      assert.strictEqual(report.signalled, 1);
    } finally {
      child.kill('SIGKILL');
      assert.deepStrictEqual(await waitAllDead([child.pid!]), []);
    }
  });
});
