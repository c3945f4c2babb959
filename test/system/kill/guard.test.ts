/**
 * The guard has no side door (src/proc/identity/guard.ts, on every kill path), on real processes: a killer inside
 * the tree it kills spares itself, its ancestors and its own group on every path (cgroup.kill, group signals);
 * Kill Process outside our trees refuses PID 1, its caller's ancestry and group, and another user's process; a
 * member in a child cgroup of the tree's cgroup does not escape; survivors are counted by their real uid, and a
 * member that changed uid is ended by root and reported by an ordinary owner.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn, spawnSync } from 'child_process';
import { processCore, TreeOwner } from '../../../src/proc';
import { dirFor, runBounded, startCli } from '../../support/cli';
import { AS_OTHER_USER, OTHER_UID, readableDir, scriptForOtherUser } from '../../support/otherUser';
import { rolesOnce } from '../../support/fixtures';
import { CLI, tmpDir } from '../../support/repo';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { waitFor } from '../../support/wait';
import { requireCgroupTier, requireRoot, requireTools } from '../../support/environment';

const core = processCore();
const cgroupProbe = core.cgroupTier('auto');
/** This process's table, to read the processes a test started. */
const table = core.table;

function stateOf(pid: number): string | undefined {
  return table.read(pid)?.state;
}

function killAll(pids: number[]): void {
  for (const pid of aliveOf(pids)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

for (const tier of ['cgroup', 'group'] as const) {
  describe(`a killer inside the tree it kills, ${tier} tier`, function () {
    before(function () {
      if (tier === 'cgroup') requireCgroupTier(this);
    });
    const tierArgs = tier === 'cgroup' ? [] : ['--no-cgroup'];

    it('`agent-trees kill $AGENT_TREES_TREE_ID` from inside spares itself and its parent shell, and ends the rest', async () => {
      const records = tmpDir();
      const pids = path.join(tmpDir(), 'pids');
      const out = path.join(tmpDir(), 'kill.out');
      // The root shell starts a daemon (its own session and group) that ignores SIGTERM, so the kill escalates
      // to its atomic SIGKILLs (cgroup.kill, the group); then it runs the kill from inside the tree.
      const script = `
        setsid -f sh -c 'trap "" TERM; echo "daemon $$" >> "$P"; exec sleep 60' </dev/null >/dev/null 2>&1
        while ! grep -qs '^daemon ' "$P"; do sleep 0.02; done
        echo "shell $$" >> "$P"
        "$NODE" "$CLI" kill "$AGENT_TREES_TREE_ID" --records "$R" --grace 0.3 > "$OUT" 2>&1
        echo "killer-exit $?" >> "$P"
        echo "shell-alive $$" >> "$P"
        exec sleep 60`;
      const run = startCli(['run', '--records', records, ...tierArgs, '--', 'sh', '-c', script], {
        env: { ...process.env, P: pids, R: records, OUT: out, NODE: process.execPath, CLI },
      });
      try {
        const roles = await rolesOnce(pids, 'daemon');
        register(roles.get('daemon')![0]);
        const done = await rolesOnce(pids, 'shell-alive', 15_000);
        const shell = done.get('shell')![0];
        assert.strictEqual(done.get('shell-alive')![0], shell, 'the parent shell lived through the kill');
        assert.strictEqual(done.get('killer-exit')![0], 0, fs.readFileSync(out, 'utf8'));
        assert.deepStrictEqual(await waitAllDead(roles.get('daemon')!), [], 'the rest of the tree was ended');
        assert.match(fs.readFileSync(out, 'utf8'), /ended 1 process\b/);
      } finally {
        run.child.kill('SIGTERM');
        await run.done;
      }
      assert.deepStrictEqual(fs.readdirSync(records), []);
    });

    it("a leaderless group holding the caller's ancestor gets no group signal", async () => {
      const records = tmpDir();
      const pids = path.join(tmpDir(), 'pids');
      const go = path.join(tmpDir(), 'go');
      const cgroups = tier === 'cgroup' ? 'auto' : 'off';
      const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups });
      // The root leaves a tagged member and a parent shell in its group, then exits: the group is leaderless.
      // Once told to, the parent shell starts the killer in a session of its own (so the killer's own group is
      // not the tree's), which kills the tree as an outsider (not its continuous owner).
      const script = `
        sleep 60 </dev/null >/dev/null 2>&1 &
        echo "member $!" >> "$P"
        sh -c 'echo "parent $$" >> "$P"; while [ ! -e "$GO" ]; do sleep 0.02; done
               setsid "$NODE" "$CLI" kill "$AGENT_TREES_TREE_ID" --records "$R" --grace 1 > "$P.out" 2>&1
               echo "parent-done $$" >> "$P"; exec sleep 60' &
        while ! grep -qs '^parent ' "$P"; do sleep 0.02; done
        echo "ready $$" >> "$P"`;
      const tree = owner.spawn({
        command: 'sh',
        args: ['-c', script],
        stdio: 'ignore',
        cgroups,
        env: { P: pids, GO: go, R: records, NODE: process.execPath, CLI },
      });
      register(tree.child.pid!);
      const roles = await rolesOnce(pids, 'ready');
      const member = roles.get('member')![0];
      const parent = roles.get('parent')![0];
      register(member);
      register(parent);
      await waitFor('the root to exit', () => tree.rootExit);
      const snap = core.table.snapshot();
      assert.ok(!snap.processes.has(tree.record.pgid), 'the group has no leader');
      assert.strictEqual(snap.processes.get(parent)!.pgid, tree.record.pgid, 'the parent shell is in the group');
      try {
        fs.writeFileSync(go, '');
        await rolesOnce(pids, 'parent-done', 15_000);
        assert.notStrictEqual(stateOf(parent), 'T', 'the parent shell was not stopped');
        assert.deepStrictEqual(await waitAllDead([member]), [], 'the tagged member was ended one by one');
      } finally {
        if (stateOf(parent) === 'T') process.kill(parent, 'SIGCONT');
        await owner.dispose(300);
      }
    });
  });
}

describe("a member in a child cgroup of the tree's cgroup", () => {
  it('an `env -i setsid -f` daemon that moved itself into <tree cgroup>/sub dies, and the report counts it', async function () {
    requireCgroupTier(this);
    const mount = path.dirname(cgroupProbe.tier!.base);
    const records = tmpDir();
    const pids = path.join(tmpDir(), 'pids');
    // The daemon: no session, group, parent link or tag leads to it; only the cgroup does, one level down.
    const script = `
      CG="$CGROOT$(sed -n 's/^0:://p' /proc/self/cgroup)"
      mkdir "$CG/sub"
      setsid -f env -i /bin/sh -c 'echo $$ > "$1/sub/cgroup.procs"; echo "daemon $$" >> "$2"; exec sleep 60' x "$CG" "$P" </dev/null >/dev/null 2>&1
      while ! grep -qs '^daemon ' "$P"; do sleep 0.02; done`;
    const run = startCli(['run', '--records', records, '--verbose', '--', 'sh', '-c', script], {
      env: { ...process.env, P: pids, CGROOT: mount },
    });
    const roles = await rolesOnce(pids, 'daemon');
    const daemon = roles.get('daemon')![0];
    register(daemon);
    try {
      const r = await run.done;
      assert.strictEqual(r.code, 0, r.stderr);
      assert.deepStrictEqual(await waitAllDead([daemon]), [], 'the daemon in the child cgroup was ended');
      assert.match(r.stderr, /ended 1 process sh left running/);
    } finally {
      killAll([daemon]);
    }
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });
});

describe('survivors and the real uid (as another user)', () => {
  before(function () {
    requireRoot(this, 'to switch users');
  });

  it('an ordinary owner counts and ends its own non-dumpable process (as ssh-agent is)', async () => {
    const records = dirFor(OTHER_UID);
    const pids = path.join(dirFor(OTHER_UID), 'pids');
    const script = `
      /usr/bin/python3 -c 'import ctypes, os, sys, time
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
open(sys.argv[1], "a").write("nodump %d\\n" % os.getpid())
time.sleep(60)' "$P" </dev/null >/dev/null 2>&1 &
      while ! grep -qs '^nodump ' "$P"; do sleep 0.02; done
      sleep 1 # a root that runs on a while: its owner sees the member it started (see the group tier's known limit)`;
    const run = startCli(['run', '--records', records, '--verbose', '--grace', '1', '--', 'sh', '-c', script], {
      asUid: OTHER_UID,
      env: { ...process.env, P: pids },
    });
    const roles = await rolesOnce(pids, 'nodump');
    const nodump = roles.get('nodump')![0];
    register(nodump);
    try {
      assert.strictEqual(fs.statSync(`/proc/${nodump}/stat`).uid, 0, "/proc shows a non-dumpable process as root's");
      const r = await run.done;
      assert.strictEqual(r.code, 0, r.stderr);
      assert.deepStrictEqual(await waitAllDead([nodump]), [], r.stderr);
      assert.match(r.stderr, /ended 1 process sh left running/);
    } finally {
      killAll([nodump]);
    }
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });

  it('an ordinary owner reports a member that became root, says why, and keeps its record', async () => {
    const records = dirFor(OTHER_UID);
    const pids = path.join(dirFor(OTHER_UID), 'pids');
    // A set-uid-root copy of setpriv: what a set-uid program in an agent's tree does (all its uids become 0).
    const bin = dirFor(0);
    const suid = path.join(bin, 'setpriv');
    fs.copyFileSync('/usr/bin/setpriv', suid);
    fs.chmodSync(suid, 0o4755);
    const script = `
      "$SUID" --reuid=0 --regid=0 --clear-groups sh -c 'echo "rooted $$" >> "$P"; exec sleep 60' </dev/null >/dev/null 2>&1 &
      while ! grep -qs '^rooted ' "$P"; do sleep 0.02; done
      sleep 1 # a root that runs on a while: its owner sees the member it started (see the group tier's known limit)`;
    const run = startCli(['run', '--records', records, '--verbose', '--grace', '1', '--', 'sh', '-c', script], {
      asUid: OTHER_UID,
      env: { ...process.env, P: pids, SUID: suid },
    });
    const roles = await rolesOnce(pids, 'rooted');
    const rooted = roles.get('rooted')![0];
    register(rooted);
    try {
      const r = await run.done;
      assert.match(r.stderr, /1 survived/, r.stderr);
      assert.match(r.stderr, new RegExp(`pid ${rooted} runs as uid 0`), r.stderr);
      assert.strictEqual(aliveOf([rooted]).length, 1);
      assert.strictEqual(fs.readdirSync(records).filter((f) => f.endsWith('.json')).length, 1, 'the record is kept for a later sweep');
    } finally {
      killAll([rooted]);
    }
  });

  it('root ends a member of its tree that changed to another uid', async () => {
    const records = tmpDir();
    const pids = path.join(dirFor(OTHER_UID), 'pids');
    const script = `
      setpriv --reuid=${OTHER_UID} --regid=${OTHER_UID} --clear-groups sh -c 'echo "dropped $$" >> "$P"; exec sleep 60' </dev/null >/dev/null 2>&1 &
      while ! grep -qs '^dropped ' "$P"; do sleep 0.02; done
      sleep 1 # a root that runs on a while: its owner sees the member it started (see the group tier's known limit)`;
    const run = startCli(['run', '--records', records, '--verbose', '--grace', '1', '--no-cgroup', '--', 'sh', '-c', script], {
      env: { ...process.env, P: pids },
    });
    const roles = await rolesOnce(pids, 'dropped');
    const dropped = roles.get('dropped')![0];
    register(dropped);
    try {
      const r = await run.done;
      assert.deepStrictEqual(await waitAllDead([dropped]), [], r.stderr);
      assert.match(r.stderr, /ended 1 process sh left running/);
    } finally {
      killAll([dropped]);
    }
    assert.deepStrictEqual(fs.readdirSync(records), []);
  });
});

describe('Kill Process outside our trees: the guard', () => {
  /**
   * The probe: a disposable "host" (run in a session of its own, so that if the guard failed only the probe's own
   * shell died) that asks Kill Process for PID 1, its parent, itself, a sibling in its own group and the pids it is
   * given, and prints what each got. Bundled where another user can run it too.
   */
  const probe = () =>
    scriptForOtherUser(
      'kill-process-probe',
      `const { TreeOwner, processCore } = require('./src/proc');
const { LinuxProcessTable } = require('./src/proc/platform/linuxProcessTable');
const { spawn } = require('child_process');
const fs = require('fs');
(async () => {
  const table = new LinuxProcessTable();
  const owner = new TreeOwner({ core: processCore(), recordsDir: fs.mkdtempSync('/tmp/agent-trees-probe-'), cgroups: 'off' });
  const sibling = spawn('sleep', ['60'], { stdio: 'ignore' }); // our own process group
  while (!table.read(sibling.pid)) await new Promise((r) => setTimeout(r, 10));
  const targets = [1, process.ppid, process.pid, sibling.pid, ...process.argv.slice(2).map(Number)];
  const out = {};
  for (const pid of targets) {
    const p = table.read(pid);
    const r = p ? await owner.killForeignProcess(pid, p.startKey, 200) : { signalled: -1 };
    out[pid] = { signalled: r.signalled, refused: r.refused, survivors: r.survivors };
  }
  out.sibling = sibling.pid;
  out.alive = targets.filter((pid) => { try { process.kill(pid, 0); return true; } catch { return false; } });
  sibling.kill('SIGKILL');
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stdout.write('ERROR ' + e.stack); });
`,
    );

  it('PID 1, its own parent, itself and its own group: refused, nothing signalled', () => {
    const ran = spawnSync('setsid', ['-w', 'sh', '-c', `"${process.execPath}" "${probe()}"; echo " sh-survived"`], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.match(ran.stdout, / sh-survived\s*$/, ran.stdout + ran.stderr);
    const out = JSON.parse(ran.stdout.replace(/ sh-survived\s*$/, ''));
    for (const [pid, r] of Object.entries(out)) {
      if (pid === 'alive' || pid === 'sibling') continue;
      assert.strictEqual((r as { signalled: number }).signalled, 0, `pid ${pid}: ${JSON.stringify(r)}`);
    }
    assert.ok(out.alive.includes(1) && out.alive.includes(out.sibling), JSON.stringify(out));
  });

  it("another user's process: nothing signalled, no throw, the process lives (as another user)", async function () {
    requireRoot(this, 'to switch users');
    requireTools(this, 'setpriv');
    const victim = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    register(victim.pid!);
    try {
      await waitFor('the sleep', () => table.read(victim.pid!));
      const ran = spawnSync('setpriv', [...AS_OTHER_USER, 'setsid', '-w', process.execPath, probe(), String(victim.pid)], {
        encoding: 'utf8',
        timeout: 20_000,
        cwd: readableDir(),
      });
      assert.doesNotMatch(ran.stdout, /^ERROR/, ran.stdout + ran.stderr);
      const out = JSON.parse(ran.stdout);
      const r = out[victim.pid!];
      assert.strictEqual(r.signalled, 0, JSON.stringify(r));
      assert.ok(r.survivors >= 1 || r.refused.length > 0, `told it could not end it: ${JSON.stringify(r)}`);
      assert.deepStrictEqual(aliveOf([victim.pid!]), [victim.pid!]);
    } finally {
      victim.kill('SIGKILL');
      assert.deepStrictEqual(await waitAllDead([victim.pid!]), []);
    }
  });
});

describe('a killer inside the tree it kills, and the rest of its own process group', () => {
  // `agent-trees kill $AGENT_TREES_TREE_ID` run by the tree's own shell spares itself and its ancestors (above),
  // and also every other member of its own process group (the guard never signals our group): a background job of
  // that shell runs on, so the kill must say so and fail, not print "ended 0 processes" and exit 0.
  it('says which members of its own group it left running and exits 1, signalling none of them', async () => {
    const records = tmpDir();
    const marker = path.join(tmpDir(), 'after');
    const ran = await runBounded(process.execPath, [
      CLI,
      'run',
      '--records',
      records,
      '--no-cgroup',
      '--timeout',
      '30',
      '--',
      'sh',
      '-c',
      `sleep 60 & "${process.execPath}" "${CLI}" kill "$AGENT_TREES_TREE_ID" --records "${records}" --grace 1; echo "kill exit $?"; kill $!; touch "${marker}"`,
    ]);
    assert.strictEqual(ran.timedOut, false);
    assert.match(ran.stdout, /^kill exit 1$/m, ran.stdout + ran.stderr);
    assert.match(
      ran.stdout,
      /ended 0 processes; spared this command and its ancestors \(\d+, \d+\); 1 left running: in this command's own process group \(\d+\)/,
    );
    assert.ok(fs.existsSync(marker), 'the shell that ran it was not signalled');
  });
});
