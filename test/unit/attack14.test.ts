/**
 * Adversarial probes of the view's member tracking (issue 14: memberTracker.ts, the census, the owner's watch and
 * the kill's wait on the cgroup), each on real processes: what a probe broke is pinned here, so it stays fixed.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawn, spawnSync } from 'child_process';
import { endTerminalTree, processCore, processKey, readShell, TreeOwner, WINDOW_TAG_VARIABLE } from '../../src/proc';
import { LinuxProcessTable } from '../../src/proc/platform/linuxProcessTable';
import { listMembers, MemberListing, TreeQuery, ViewExtras } from '../../src/proc/tracking/listing';
import { canTrack, MemberTracker, refreshMembers } from '../../src/proc/tracking/memberTracker';
import { aliveOf, register, tmpDir, waitAllDead, waitFor } from '../support/started';

const core = processCore();

/** The view's refresh as it runs it (tracker + refreshMembers), on a clock the test moves. */
function tracked(table = new LinuxProcessTable()) {
  const clock = { now: 1_000_000 };
  const tracker = new MemberTracker(core, { now: () => clock.now });
  const refresh = (trees: TreeQuery[], extras: ViewExtras = {}): MemberListing => {
    const r = refreshMembers(table, tracker.next(trees, extras, canTrack(table, trees, extras, core)), core);
    tracker.learn(r);
    return r;
  };
  return { clock, tracker, refresh, table };
}

const queryOf = (owner: TreeOwner, id: string): TreeQuery => {
  const record = owner.get(id)!.record;
  return { ...record, continuouslyOwned: true, cgroupVerified: record.cgroup !== null };
};
const pidsOf = (r: MemberListing, id: string) => (r.trees.find((t) => t.id === id)?.members ?? []).map((m) => m.pid);
const readLines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
const roleOf = (file: string, role: string) => {
  const m = new RegExp(`^${role} (\\d+)$`, 'm').exec(readLines(file));
  return m ? Number(m[1]) : undefined;
};

describe('attack probes of issue 14: the owner watch', function () {
  this.timeout(30_000);

  // Probed: the watch (watchOnce) looked at every tree, running ones too, and dropped one with no live member while
  // its root's exit was not yet reported: a pseudo-terminal root reports its exit up to 200 ms after it died (node-pty
  // drains the output first). checkAll, which it replaced, skipped running trees (commit 36cacf1).
  it("never ends a tree before its root's exit is reported (a pseudo-terminal root reports it late)", async function () {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off', watchIntervalMs: 10 });
    // A tree whose root exits at once leaving a daemon: it keeps the watch running every 10 ms.
    const pidfile = path.join(tmpDir(), 'pids');
    const keeper = owner.spawn({
      command: 'sh',
      args: ['-c', 'setsid -f sh -c \'echo "daemon $$" > "$0"; exec sleep 60\' "$0"', pidfile],
      stdio: 'ignore',
    });
    register(keeper.child.pid!);
    const events: string[] = [];
    owner.on('ended', (t) => events.push(`ended ${t.record.id}`));
    owner.on('rootExit', (t) => events.push(`rootExit ${t.record.id}`));
    let daemon: number | undefined;
    try {
      daemon = await waitFor('the daemon', () => roleOf(pidfile, 'daemon'));
      register(daemon);
      await waitFor("the keeper's root to exit", () => keeper.rootExit !== undefined);
      for (let i = 0; i < 5; i++) {
        let tree;
        try {
          tree = owner.spawnTerminal({ command: 'sh', args: ['-c', 'exit 0'] });
        } catch (e) {
          this.skip(); // no pseudo-terminals here
        }
        register(tree.child.pid);
        const id = tree.record.id;
        await waitFor('the pty tree to end', () => events.includes(`ended ${id}`));
        const ended = events.indexOf(`ended ${id}`);
        const exited = events.indexOf(`rootExit ${id}`);
        assert.ok(exited >= 0 && exited < ended, `round ${i}: the tree ended before its root's exit was known: ${events.join(', ')}`);
      }
    } finally {
      if (daemon) process.kill(daemon, 'SIGKILL');
      await owner.dispose(0);
    }
  });
});

describe('attack probes of issue 14: a terminal of the window', function () {
  this.timeout(30_000);

  // Probed: a window-tagged process of the editor's own (a language server of another window opened from one of
  // our terminals: it inherits our tag) that started after a census was shown under the terminal: the tracked
  // snapshot did not hold its ancestors up to the editor, so "under the editor" was not seen. Worse, its children
  // with a scrubbed environment went into the terminal's `seen`, and a full resolution then took them as members:
  // End Everything Under This Terminal (and a close) ended them.
  it("does not show the editor's own tagged processes under a terminal, nor end them with it", async () => {
    const tag = `attack14-window-${process.pid}`;
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
    const all = () => [editor.pid!, shellChild.pid!, ...['host', 'server', 'helper'].flatMap((r) => roleOf(pidfile, r) ?? [])];
    try {
      const host = await waitFor('the other window host', () => roleOf(pidfile, 'host'));
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
      const server = await waitFor('the language server', () => roleOf(pidfile, 'server'));
      const helper = await waitFor('its helper', () => roleOf(pidfile, 'helper'));
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

/** A root that, on a line on its stdin, leaves a `setsid -f` daemon behind (re-parented away from the tree). */
function spawnEscaper(owner: TreeOwner) {
  const pidfile = path.join(tmpDir(), 'pids');
  const script = 'read go; setsid -f sh -c \'echo "daemon $$" >> "$0"; exec sleep 60\' "$0"; exec sleep 60';
  const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile], stdio: ['pipe', 'ignore', 'ignore'], cgroups: 'off' });
  register(tree.child.pid!);
  return {
    tree,
    async escape(): Promise<number> {
      tree.child.stdin!.write('go\n');
      const daemon = await waitFor('the daemon', () => roleOf(pidfile, 'daemon'));
      register(daemon);
      const t = new LinuxProcessTable();
      await waitFor('the daemon to leave the parent chain', () => {
        const d = t.read(daemon);
        return d && d.ppid !== tree.record.rootPid && t.read(d.ppid)?.sid !== tree.record.sid;
      });
      return daemon;
    },
  };
}

describe('attack probes of issue 14: clock steps', function () {
  this.timeout(30_000);

  // Probed: the interval between full scans was measured on the wall clock; a step back (NTP, a suspended VM, a
  // user setting the date) put the next full scan off by the size of the step: an escaped daemon stayed hidden
  // from the view for an hour after a 1 h step.
  it('a wall-clock step back does not put off the full scan: an escaped daemon is shown within 10 s', async () => {
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const escaper = spawnEscaper(owner);
    const id = escaper.tree.record.id;
    const { clock, refresh } = tracked();
    try {
      assert.strictEqual(refresh([queryOf(owner, id)]).fullScan, true);
      clock.now -= 3_600_000;
      const daemon = await escaper.escape();
      let shownAt: number | undefined;
      for (let s = 1; s <= 12 && shownAt === undefined; s++) {
        clock.now += 1000;
        if (pidsOf(refresh([queryOf(owner, id)]), id).includes(daemon)) shownAt = s;
      }
      assert.ok(shownAt !== undefined && shownAt <= 10, `the daemon was not shown within 12 refreshes after the step back`);
    } finally {
      await owner.dispose(0);
    }
  });
});

describe('attack probes of issue 14: pid allocation that goes round behind the census', function () {
  this.timeout(240_000);

  // Probed: the census keeps a pid's start key from its last read unless ns_last_pid and the fork count say that
  // allocation may have come round to it. Forks that fail after their pid was allocated (here: in a pid namespace
  // whose init exited, open to any user with user namespaces; also a full pids cgroup) move allocation on without
  // counting as forks. A member used them to leave a daemon at a pid the census had seen, and to move allocation
  // back past where the census had left it: every later census took the daemon for the old holder and never read
  // it, so the view never showed it (kills, on a full scan, still reached it).
  it('a daemon left at a pid the census saw before, with allocation moved round by failing forks, is shown within a minute', async function () {
    const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
    if (pidMax > 100_000 || process.arch !== 'x64' || spawnSync('perl', ['-e', '1']).status !== 0) this.skip(); // ~pid_max failing forks
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const pidfile = path.join(tmpDir(), 'pids');
    const script = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'pidWrap.pl');
    const tree = owner.spawn({
      command: 'sh',
      args: ['-c', 'perl "$0" "$1"; exec sleep 60', script, pidfile],
      stdio: ['pipe', 'ignore', 'ignore'],
      cgroups: 'off',
    });
    register(tree.child.pid!);
    const id = tree.record.id;
    // An unrelated process the first census sees; its pid goes to the daemon.
    const old = spawn('sleep', ['60'], { stdio: 'ignore' });
    register(old.pid!);
    const { clock, refresh } = tracked();
    let daemon: number | undefined;
    try {
      await waitFor('the attacker', () => /^(ready|failed)/m.test(readLines(pidfile)));
      if (/^failed/m.test(readLines(pidfile))) this.skip(); // no user namespaces here
      assert.strictEqual(refresh([queryOf(owner, id)]).fullScan, true, 'the first census reads every process');
      const lastPidAtCensus = Number(fs.readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
      const target = old.pid!;
      if (target < 400 || target >= lastPidAtCensus) this.skip(); // no room below
      old.kill('SIGKILL');
      await waitFor('the old holder to be reaped', () => !fs.existsSync(`/proc/${target}`));
      tree.child.stdin!.write(`${target} ${lastPidAtCensus + 20}\n`);
      await waitFor('the daemon', () => /^(daemon|failed)/m.test(readLines(pidfile)), 150_000).catch((e: Error) =>
        assert.fail(`${e.message}: ${readLines(pidfile)}`),
      );
      if (/^failed/m.test(readLines(pidfile))) this.skip(); // the machine kept taking that pid
      daemon = roleOf(pidfile, 'daemon')!;
      register(daemon);
      assert.strictEqual(daemon, target);
      assert.ok(
        owner.members(id).some((p) => p.pid === daemon),
        'a member for a full resolution (its tag)',
      );
      let shownAt: number | undefined;
      for (let s = 1; s <= 65 && shownAt === undefined; s++) {
        clock.now += 1000;
        if (pidsOf(refresh([queryOf(owner, id)]), id).includes(daemon)) shownAt = s;
      }
      assert.ok(shownAt !== undefined && shownAt <= 61, `the daemon was shown after ${shownAt ?? 'more than 65'} s of refreshes`);
    } finally {
      old.kill('SIGKILL');
      await owner.dispose(0);
      if (daemon) assert.deepStrictEqual(await waitAllDead([daemon]), [], 'the kill reached it');
    }
  });
});

describe('attack probes of issue 14: a member that leaves the cgroup (root)', function () {
  this.timeout(60_000);
  const cgroupProbe = core.cgroupTier('auto');

  // Probed: as root a member can write its pid into another cgroup's cgroup.procs. The view refreshes a tree in
  // the cgroup tier from the cgroup's listing alone (no census), so such a member is never shown (a known limit,
  // pinned here); but the kill, after cgroup.kill and the wait on the cgroup's listing, resolves on a full scan
  // and ends it, and the owner's watch keeps the tree while it runs.
  it('is never shown by the view, but the kill ends it and the watch keeps the tree until it does', async function () {
    if (process.getuid?.() !== 0 || !cgroupProbe.tier || cgroupProbe.tier.kind !== 'directory') this.skip();
    const mount = path.dirname(cgroupProbe.tier.base);
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'auto', watchIntervalMs: 20 });
    const pidfile = path.join(tmpDir(), 'pids');
    const script = `sh -c 'echo $$ > "$1/cgroup.procs"; echo "out $$" >> "$0"; exec sleep 60' "$0" "$1" & sleep 0.3; exit 0`;
    const tree = owner.spawn({ command: 'sh', args: ['-c', script, pidfile, mount], stdio: 'ignore', cgroups: 'auto' });
    register(tree.child.pid!);
    const id = tree.record.id;
    let out: number | undefined;
    let ended = false;
    owner.on('ended', () => (ended = true));
    try {
      assert.strictEqual(tree.tier, 'cgroup');
      out = await waitFor('the member that left', () => roleOf(pidfile, 'out'));
      register(out);
      await waitFor(
        'it to leave the cgroup',
        () => !fs.readFileSync(`/proc/${out}/cgroup`, 'utf8').includes(path.basename(tree.record.cgroup!)),
      );
      await waitFor('the root to exit', () => tree.rootExit !== undefined);
      assert.ok(
        owner.members(id).some((p) => p.pid === out),
        'a member for a full resolution (group, session, tag)',
      );
      const { clock, refresh } = tracked();
      for (let s = 0; s < 25; s++) {
        clock.now += 1000;
        assert.ok(!pidsOf(refresh([queryOf(owner, id)]), id).includes(out), 'the known limit: the view never shows it');
      }
      const shared = core.table as LinuxProcessTable;
      const snapshotOf = shared.snapshotOf.bind(shared);
      let looks = 0;
      shared.snapshotOf = (pids, walk) => (looks++, snapshotOf(pids, walk));
      try {
        await waitFor('ten looks of the watch', () => looks >= 10);
      } finally {
        shared.snapshotOf = snapshotOf;
      }
      assert.strictEqual(ended, false, 'the watch keeps the tree while a member runs');
      const report = await owner.kill(id, 0);
      assert.deepStrictEqual([report.survivors, await waitAllDead([out])], [0, []]);
    } finally {
      await owner.dispose(0);
    }
  });
});

describe('attack probes of issue 14: a known member whose pid goes to an unrelated process', function () {
  this.timeout(30_000);

  // Probed (held): the walk starts from the pids of the members it knew, so it reads whoever holds such a pid now.
  // An unrelated process of another session given that pid (ns_last_pid, root) is read but is no member by the
  // core's rules, so it is not shown; a kill from the old row, or from a row naming the new holder, signals nothing.
  it('is read by the walk but never shown, and a kill from its row ends nothing', async function () {
    if (process.getuid?.() !== 0) this.skip(); // moving ns_last_pid needs root
    const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
    const tree = owner.spawn({ command: 'sh', args: ['-c', 'while :; do sleep 60 & wait; done'], stdio: 'ignore' });
    register(tree.child.pid!);
    const id = tree.record.id;
    const { clock, refresh } = tracked();
    const started: ReturnType<typeof spawn>[] = [];
    try {
      await waitFor('two members', () => owner.members(id).length === 2);
      refresh([queryOf(owner, id)]);
      clock.now += 1000;
      const before = refresh([queryOf(owner, id)]).trees[0].members;
      const member = before.find((m) => m.pid !== tree.record.rootPid)!;
      process.kill(member.pid, 'SIGKILL');
      await waitFor('the member to be reaped', () => !fs.existsSync(`/proc/${member.pid}`));
      let stranger: ReturnType<typeof spawn> | undefined;
      for (let attempt = 0; attempt < 20 && stranger?.pid !== member.pid; attempt++) {
        fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(member.pid - 1));
        stranger = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
        started.push(stranger);
        if (stranger.pid) register(stranger.pid);
      }
      if (stranger?.pid !== member.pid) this.skip(); // the machine kept taking that pid
      const now = new LinuxProcessTable().read(member.pid)!;
      clock.now += 1000;
      const r = refresh([queryOf(owner, id)]);
      assert.strictEqual(r.fullScan, false, 'a walk from the known members');
      assert.ok(!pidsOf(r, id).includes(member.pid), 'the new holder of the pid is not shown');
      for (const key of [member.startKey, now.startKey]) {
        const report = await owner.killProcess(member.pid, key, 0);
        assert.strictEqual(report.signalled, 0);
      }
      assert.deepStrictEqual(aliveOf([member.pid]), [member.pid], 'the unrelated process still runs');
    } finally {
      for (const c of started) c.kill('SIGKILL');
      await owner.dispose(0);
    }
  });
});
