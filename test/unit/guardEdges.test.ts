/**
 * The guard has no side door (issue 10, items 8–10), on real processes: a killer inside the tree it kills
 * spares itself and its ancestors on every path (cgroup.kill, group signals); a member in a child cgroup of
 * the tree's cgroup does not escape; survivors are counted by their real uid, and a member that changed uid
 * is ended by root and reported by an ordinary owner.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { processCore, TreeOwner } from '../../src/proc';
import { aliveOf, CLI, register, table, tmpDir, waitAllDead, waitFor } from './helpers';
import { OTHER_UID, startCli } from './cliHelpers';

const core = processCore();
const cgroupProbe = core.cgroupTier('auto');

/** `ROLE PID` lines written by the scripts below, once `role` has appeared. */
async function linesOf(file: string, role: string, timeoutMs = 10_000): Promise<Map<string, number[]>> {
  return waitFor(
    `"${role}" in ${file}`,
    () => {
      const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
      if (!new RegExp(`^${role}( |$)`, 'm').test(text)) return undefined;
      const roles = new Map<string, number[]>();
      for (const line of text.split('\n')) {
        const [r, pid] = line.split(' ');
        if (r) roles.set(r, [...(roles.get(r) ?? []), Number(pid)]);
      }
      return roles;
    },
    timeoutMs,
  );
}

/** A folder an ordinary user can use (tmpDir makes 0700 folders owned by root). */
function dirFor(uid: number): string {
  const dir = tmpDir();
  fs.chmodSync(dir, 0o755);
  fs.chownSync(dir, uid, uid);
  return dir;
}

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

const isRoot = process.getuid?.() === 0;

for (const tier of ['cgroup', 'group'] as const) {
  describe(`a killer inside the tree it kills, ${tier} tier`, function () {
    before(function () {
      if (tier === 'cgroup' && !cgroupProbe.tier) {
        this.test!.parent!.title += ` (skipped: ${cgroupProbe.unavailable})`;
        this.skip();
      }
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
        const roles = await linesOf(pids, 'daemon');
        register(roles.get('daemon')![0]);
        const done = await linesOf(pids, 'shell-alive', 15_000);
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
      const roles = await linesOf(pids, 'ready');
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
        await linesOf(pids, 'parent-done', 15_000);
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
    if (!cgroupProbe.tier) this.skip();
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
    const roles = await linesOf(pids, 'daemon');
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

describe('survivors and the real uid', () => {
  before(function () {
    if (!isRoot) this.skip(); // switching users needs root
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
    const roles = await linesOf(pids, 'nodump');
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
    const roles = await linesOf(pids, 'rooted');
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
    const roles = await linesOf(pids, 'dropped');
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
