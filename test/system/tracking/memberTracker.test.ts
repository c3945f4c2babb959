/**
 * The view's member tracking (src/proc/tracking/memberTracker.ts) on real trees: the same members as a full
 * resolution, for owned trees and the window's terminals, and reads that follow the members, not the machine.
 * Process reads are counted by the table itself (`reads`) and by a recording wrapper around it.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn, spawnSync } from 'child_process';
import { endTerminalTree, processCore, processKey, readShell, TreeOwner, WINDOW_TAG_VARIABLE } from '../../../src/proc';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { COMMAND_SETTLES_MS } from '../../../src/proc/platform/processTable';
import { listMembers, MemberListing, ViewExtras } from '../../../src/proc/tracking/listing';
import { SCENARIOS } from '../../fixtures/scenarios';
import { FIXTURE, tmpDir } from '../../support/repo';
import { sleep, waitFor } from '../../support/wait';
import { fixturePids, roleIn } from '../../support/fixtures';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { pidsOf, queryOf, RecordingTable, sorted, tracked } from '../../support/ownedTrees';
import { requireCgroupTier, requireEnvironment } from '../../support/environment';

/** This process's guard and cgroups (the table under test is each test's own). */
const core = processCore();

describe('member tracking: the same members as a full resolution', function () {
  this.timeout(60_000);
  for (const tier of ['cgroup', 'group'] as const) {
    for (const { mode, title } of SCENARIOS) {
      it(`${tier} tier, ${title}`, async function () {
        if (tier === 'cgroup') requireCgroupTier(this);
        const cgroups = tier === 'cgroup' ? 'auto' : 'off';
        const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups });
        const table = new RecordingTable();
        const { clock, refresh } = tracked(table);
        const pidfile = path.join(tmpDir(), 'pids');
        const tree = owner.spawn({ command: FIXTURE, args: [mode, pidfile], stdio: 'ignore', cgroups });
        register(tree.child.pid!);
        const id = tree.record.id;
        let pids: Awaited<ReturnType<typeof fixturePids>> | undefined;
        try {
          // The view watches the tree from its start, refreshing while it grows (here far faster than 1 Hz).
          const first = refresh([queryOf(owner, id)]);
          if (tier === 'group') assert.strictEqual(first.fullScan, true, 'the first refresh is a full scan');
          await waitFor('the fixture', () => {
            refresh([queryOf(owner, id)]);
            return fs.existsSync(pidfile) && /^(ready|unsupported) /m.test(fs.readFileSync(pidfile, 'utf8'));
          });
          const fixture = (pids = await fixturePids(pidfile));
          if (fixture.roles.has('unsupported'))
            requireEnvironment(this, false, 'root, to choose the next pid (ns_last_pid) for the wraparound fixture');
          // Once the fixture says ready, what is a member no longer changes (test/fixtures/tree.sh), but for the root of
          // root-exits, which exits right after: both resolutions below must look at the same tree.
          if (mode === 'root-exits') await waitFor('the root to exit', () => tree.rootExit !== undefined);
          if (mode === 'forker') await sleep(300);
          const scansBefore = table.fullScans;
          const incremental = refresh([queryOf(owner, id)]);
          if (mode !== 'forker') {
            // (The forker's hundreds of members are a large part of this machine: listing /proc is the cheaper refresh.)
            assert.strictEqual(incremental.fullScan, false);
            assert.strictEqual(table.fullScans, scansBefore, 'no full scan between the slow ones');
          }
          const full = sorted(owner.members(id).map((p) => p.pid));
          const alive = new Set(aliveOf(full));
          // Never a process the full resolution does not count (or one that died meanwhile).
          for (const pid of pidsOf(incremental, id)) assert.ok(full.includes(pid) || !alive.has(pid), `${pid} is not a member`);
          // After the slow scan every member is known, escaped daemons too; later refreshes keep them.
          clock.now += 10_000;
          const slow = refresh([queryOf(owner, id)]);
          assert.strictEqual(slow.fullScan, tier === 'group', 'no full scan for a tree in its own cgroup');
          clock.now += 1000;
          const after = refresh([queryOf(owner, id)]);
          if (mode !== 'forker') assert.strictEqual(after.fullScan, false);
          const fullAgain = sorted(owner.members(id).map((p) => p.pid));
          const named = (list: number[]) => list.filter((pid) => fixture.all.includes(pid));
          if (mode === 'forker' || mode === 'ignore-term') {
            // Members come and go by the millisecond: compare the fixture's own processes.
            assert.deepStrictEqual(named(pidsOf(after, id)), named(fullAgain));
          } else {
            assert.deepStrictEqual(pidsOf(after, id), fullAgain);
          }
          const unreachable = tier === 'group' && mode === 'daemon-scrubbed' ? fixture.roles.get('daemon')! : [];
          assert.deepStrictEqual(named(fullAgain), sorted(aliveOf(fixture.all).filter((pid) => !unreachable.includes(pid))));
        } finally {
          await owner.dispose(300);
          // The group tier's known limit (the scrubbed daemon) is not killed by the tree's kill: ours to end.
          for (const pid of aliveOf(pids?.all ?? [])) process.kill(pid, 'SIGKILL');
        }
      });
    }
  }

  it('walks children forked by any thread, not only the main one', async function () {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    // A worker thread spawns the child: its parent task is that thread, listed in the thread's own children file.
    const workerFile = path.join(tmpDir(), 'worker.js');
    fs.writeFileSync(
      workerFile,
      `const c = require('child_process').spawn('sleep', ['60'], { stdio: 'ignore' });
      require('fs').appendFileSync(${JSON.stringify(pidfile)}, 'child ' + c.pid + '\\n');
      setTimeout(() => {}, 60000);`,
    );
    const script = `new (require('worker_threads').Worker)(${JSON.stringify(workerFile)}); setTimeout(() => {}, 60000);`;
    const tree = owner.spawn({ command: process.execPath, args: ['-e', script], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    try {
      const child = await waitFor('the child', () => {
        const m = /^child (\d+)$/m.exec(fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '');
        return m ? Number(m[1]) : undefined;
      });
      register(child);
      const root = tree.record.rootPid;
      const mainList = fs.readFileSync(`/proc/${root}/task/${root}/children`, 'latin1').split(' ').map(Number);
      assert.ok(!mainList.includes(child), 'the child hangs off a worker thread, not the main one');
      const table = new RecordingTable();
      const { refresh } = tracked(table);
      refresh([queryOf(owner, id)]); // the first refresh is the full scan; the second walks
      const r = refresh([queryOf(owner, id)]);
      assert.strictEqual(r.fullScan, false);
      assert.deepStrictEqual(pidsOf(r, id), sorted([root, child]));
    } finally {
      await owner.dispose(300);
    }
  });
});

describe('member tracking: a terminal of the window', function () {
  this.timeout(30_000);

  it('finds what a full resolution finds under a shell, its window-tagged daemon too, refresh after refresh', async () => {
    const tag = `test-window-${process.pid}`;
    const pidfile = path.join(tmpDir(), 'pids');
    const script = `
      echo "shell $$" >> "$1"
      setsid sh -c 'echo "setsid $$" >> "$1"; exec sleep 60' x "$1" &
      setsid -f sh -c 'echo "daemon $$" >> "$1"; exec sleep 60' x "$1"
      sleep 0.2
      echo "ready $$" >> "$1"
      exec sleep 60`;
    const child = spawn('sh', ['-c', script, 'shell', pidfile], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag },
    });
    register(child.pid!);
    const { all, roles } = await fixturePids(pidfile);
    try {
      const shell = readShell(child.pid!, core.table)!;
      const extras: ViewExtras = { terminals: { windowTags: [tag], shells: [shell], seen: {}, kept: [] } };
      const full = () => listMembers(new LinuxProcessTable().snapshot(), [], core, { extras }).terminals[0].members.map((m) => m.pid);
      const { clock, refresh } = tracked(new RecordingTable());
      const first = refresh([], extras);
      assert.strictEqual(first.fullScan, true, 'a terminal it knows nothing of: every process read');
      assert.deepStrictEqual(
        first.terminals[0].members.map((m) => m.pid),
        full(),
      );
      assert.ok(full().includes(roles.get('daemon')![0]), 'the daemon, by the window tag');
      extras.terminals!.seen[shell.key] = first.terminals[0].members.filter((m) => m.pid !== shell.pid).map(processKey);
      for (let i = 0; i < 3; i++) {
        clock.now += 1000;
        const r = refresh([], extras);
        assert.strictEqual(r.fullScan, false);
        assert.deepStrictEqual(
          r.terminals[0].members.map((m) => m.pid),
          full(),
        );
      }
      assert.deepStrictEqual(full(), sorted(all));
    } finally {
      for (const pid of aliveOf(all)) process.kill(pid, 'SIGKILL');
    }
  });

  // with a scrubbed environment went into the terminal's `seen`, and a full resolution then took them as members:
  // End Everything Under This Terminal (and a close) ended them.
  it("does not show the editor's own tagged processes under a terminal, nor end them with it", async () => {
    const tag = `editor-window-${process.pid}`;
    const dir = tmpDir();
    const fifo = path.join(dir, 'go');
    const pidfile = path.join(dir, 'pids');
    spawnSync('mkfifo', [fifo]);
    // The editor (E) runs another window's extension host (U, tagged: opened from our terminal), which starts a
    // language server (T) later; T starts a helper with a scrubbed environment (C).
    const editorScript = `
      sh -c 'echo "host $$" >> "$1"; read x < "$2"
        sh -c '"'"'echo "server $$" >> "$1"; env -i sh -c "echo helper \\$\\$ >> $1; exec sleep 60" & exec sleep 60'"'"' x "$1" &
        wait' x "$0" "$1" &
      echo "editor $$" >> "$0"; wait`;
    const editor = spawn('sh', ['-c', editorScript, pidfile, fifo], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag },
    });
    register(editor.pid!);
    const shellChild = spawn('sh', ['-c', 'exec sleep 60'], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [WINDOW_TAG_VARIABLE]: tag },
    });
    register(shellChild.pid!);
    const all = () => [editor.pid!, shellChild.pid!, ...['host', 'server', 'helper'].flatMap((r) => roleIn(pidfile, r) ?? [])];
    try {
      const host = await waitFor('the other window host', () => roleIn(pidfile, 'host'));
      register(host);
      const shell = await waitFor('the shell', () => readShell(shellChild.pid!, core.table));
      const extras: ViewExtras = { terminals: { windowTags: [tag], shells: [shell], seen: {}, kept: [], editorRoot: editor.pid! } };
      const { clock, refresh } = tracked();
      const full = () => listMembers(new LinuxProcessTable().snapshot(), [], core, { extras }).terminals[0].members.map((m) => m.pid);
      const observe = (r: MemberListing) => {
        // As the extension's WindowTerminals.observe does.
        const t = r.terminals[0];
        extras.terminals!.seen[shell.key] = t.members.filter((p) => p.pid !== shell.pid && !t.unclaimed.includes(p.pid)).map(processKey);
        return t.members.map((m) => m.pid);
      };
      assert.deepStrictEqual(observe(refresh([], extras)), [shell.pid], 'the first (thorough) look: the shell alone');
      fs.writeFileSync(fifo, 'go\n');
      const server = await waitFor('the language server', () => roleIn(pidfile, 'server'));
      const helper = await waitFor('its helper', () => roleIn(pidfile, 'helper'));
      register(server);
      register(helper);
      await waitFor('the helper to run sleep', () => fs.readFileSync(`/proc/${helper}/cmdline`, 'latin1').startsWith('sleep'));
      assert.deepStrictEqual(full(), [shell.pid], "a full resolution: none of them is the terminal's");
      for (let i = 0; i < 12; i++) {
        clock.now += 1000;
        const shown = observe(refresh([], extras));
        assert.deepStrictEqual(shown, [shell.pid], `second ${i + 1}: the view shows only the shell (census every 10 s)`);
      }
      const report = await endTerminalTree(core.killer, { query: extras.terminals!, shellKey: shell.key, graceMs: 0 });
      assert.strictEqual(report.signalled, 0, `End Everything Under This Terminal ended ${report.signalled} of the editor's processes`);
      assert.deepStrictEqual(aliveOf([server, helper]), [server, helper]);
    } finally {
      for (const pid of aliveOf(all())) process.kill(pid, 'SIGKILL');
      assert.deepStrictEqual(await waitAllDead(all()), []);
    }
  });
});

describe('member tracking: what a refresh reads', function () {
  this.timeout(60_000);

  it('reads the members, not the machine: 300 more processes elsewhere cost a refresh nothing', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable();
    const { clock, refresh } = tracked(table);
    let crowd: ReturnType<typeof spawn> | undefined;
    try {
      await waitFor('five members', () => owner.members(id).length === 5);
      await sleep(COMMAND_SETTLES_MS); // a younger process's command line is read again at each refresh (it may exec)
      refresh([queryOf(owner, id)]); // full scan; command lines and environments read once
      clock.now += 1000;
      refresh([queryOf(owner, id)]);
      const readsOf = () => {
        clock.now += 1000;
        const before = table.reads;
        const r = refresh([queryOf(owner, id)]);
        assert.strictEqual(r.fullScan, false);
        assert.strictEqual(pidsOf(r, id).length, 5);
        return table.reads - before;
      };
      const quiet = readsOf();
      // One stat and one children list per member (each is one thread), nothing else.
      assert.strictEqual(quiet, 10);
      crowd = spawn('sh', ['-c', 'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; echo up; wait'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        detached: true,
      });
      register(crowd.pid!);
      await new Promise((r) => crowd!.stdout!.once('data', r));
      const crowded = readsOf();
      assert.strictEqual(crowded, quiet, 'the same reads with 300 more processes on the machine');
      assert.strictEqual(table.fullScans, 1);
    } finally {
      if (crowd) process.kill(-crowd.pid!, 'SIGKILL');
      await owner.dispose(300);
    }
  });

  it('lists the same members in the same order on every refresh, walk or full scan (the view fires only changes)', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const { clock, refresh } = tracked(new RecordingTable());
    try {
      await waitFor('five members', () => owner.members(id).length === 5);
      const orders = new Set<string>();
      for (let i = 0; i < 12; i++) {
        clock.now += 1000;
        orders.add(
          refresh([queryOf(owner, id)])
            .trees[0].members.map((m) => m.pid)
            .join(' '),
        );
      }
      assert.strictEqual(orders.size, 1, [...orders].join(' / '));
    } finally {
      await owner.dispose(300);
    }
  });

  it('reads nothing when there is no tree to show', () => {
    const table = new RecordingTable();
    const { refresh } = tracked(table);
    const before = table.reads;
    const r = refresh([]);
    assert.deepStrictEqual(r.trees, []);
    assert.strictEqual(table.reads - before, 0);
    assert.strictEqual(table.fullScans, 0);
    assert.strictEqual(table.partialSnapshots.length, 0);
  });

  it('falls back to a full scan on every refresh where the kernel lists no children (CONFIG_PROC_CHILDREN)', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'sleep 60 & exec sleep 60'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable(new LinuxProcessTable(), false);
    const { clock, refresh } = tracked(table);
    try {
      await waitFor('two members', () => owner.members(id).length === 2);
      for (let i = 0; i < 3; i++) {
        clock.now += 1000;
        const r = refresh([queryOf(owner, id)]);
        assert.strictEqual(r.fullScan, true);
        assert.deepStrictEqual(pidsOf(r, id), sorted(owner.members(id).map((p) => p.pid)));
      }
      assert.strictEqual(table.fullScans, 3);
      assert.strictEqual(table.partialSnapshots.length, 0);
    } finally {
      await owner.dispose(300);
    }
  });

  it('cgroup tier: members from the cgroup and every cgroup below it, scrubbed daemon too, without a full scan', async function () {
    requireCgroupTier(this, 'directory');
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto' });
    const pidfile = path.join(tmpDir(), 'pids');
    // One member moves into a cgroup of its own below the tree's; another leaves as a scrubbed daemon.
    const script = `cg=/sys/fs/cgroup/unified$(sed -n 's/^0:://p' /proc/self/cgroup)
      [ -d "$cg" ] || cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
      mkdir "$cg/sub"
      sh -c 'echo $$ > "$1/sub/cgroup.procs"; echo "sub $$" >> "$2"; exec sleep 60' x "$cg" "$0" &
      setsid -f env -i /bin/sh -c 'echo "daemon $$" >> "$0"; exec sleep 60 </dev/null >/dev/null 2>&1' "$0"
      echo "root $$" >> "$0"; exec sleep 60`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const table = new RecordingTable();
    const { refresh } = tracked(table);
    let roles: Map<string, number[]> | undefined;
    try {
      assert.strictEqual(tree.tier, 'cgroup');
      roles = await waitFor('all three', () => {
        const text = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8') : '';
        const m = new Map(
          text
            .split('\n')
            .filter(Boolean)
            .map((l) => [l.split(' ')[0], [Number(l.split(' ')[1])]]),
        );
        return m.has('sub') && m.has('daemon') && m.has('root') ? m : undefined;
      });
      for (const [, [pid]] of roles) register(pid);
      const sub = roles.get('sub')![0];
      await waitFor('the sub-cgroup member', () => fs.readFileSync(`/proc/${sub}/cgroup`, 'utf8').includes('/sub'));
      const r = refresh([queryOf(owner, id)]);
      assert.strictEqual(r.fullScan, false);
      assert.strictEqual(table.fullScans, 0);
      assert.deepStrictEqual(pidsOf(r, id), sorted([...roles.values()].flat()));
      assert.deepStrictEqual(pidsOf(r, id), sorted(owner.members(id).map((p) => p.pid)));
    } finally {
      await owner.dispose(300);
      if (tree.record.cgroup)
        await waitFor('the sub-cgroup removed', () => {
          try {
            fs.rmdirSync(path.join(tree.record.cgroup!, 'sub'));
            return true;
          } catch (e) {
            return (e as NodeJS.ErrnoException).code === 'ENOENT';
          }
        });
      if (roles) assert.deepStrictEqual(await waitAllDead([...roles.values()].flat()), []);
    }
  });
});
