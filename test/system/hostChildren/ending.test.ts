/**
 * Other extensions' processes of an extension host, ended on real processes (src/proc/hostChildren, the sweep's
 * phase in sweep/sweepOrphans.ts, the owner's record and watchdog). test/fixtures/extensionHost.js stands in for
 * the host: it marks itself, starts what extensions would (a language server, a double-forked daemon, a child with
 * a scrubbed environment), looks at them as the extension does and records them. SIGKILLed, its watchdog ends
 * them, through the same proofs as trees; a process with the same command line started elsewhere, another user's
 * process carrying a forged mark and a kept extension's process live on. While a host lives, it ends its own
 * children (which share its process group) one by one, and never a process of that group that is not its.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { HostProcessesRecord, processCore, TreeOwner } from '../../../src/proc';
import { endHostSubtrees } from '../../../src/proc/hostChildren/ending';
import { hostMark, resolveHostProcesses } from '../../../src/proc/hostChildren/membership';
import { LinuxProcessTable } from '../../../src/proc/platform/linuxProcessTable';
import { MemberTracker, refreshMembers } from '../../../src/proc/tracking/memberTracker';
import { runCli } from '../../support/cli';
import { fixturePids } from '../../support/fixtures';
import { AS_OTHER_USER } from '../../support/otherUser';
import { identity, nowTicks } from '../../support/records';
import { isRoot, requireEnvironment } from '../../support/environment';
import { CLI, FIXTURE, REPO, tmpDir } from '../../support/repo';
import { aliveOf, register, waitAllDead } from '../../support/started';
import { waitFor } from '../../support/wait';

const table = new LinuxProcessTable();

const HOST_FIXTURE = path.join(REPO, 'test', 'fixtures', 'extensionHost.js');

interface HostState {
  mark: string;
  watchdog: number;
  children: number[];
  members: string[];
  whose: Record<string, string>;
  recorded?: HostProcessesRecord;
}

interface Spec {
  folders: { id: string; folder: string }[];
  keep: { extensionId: string; folder: string }[];
  children: { command: string; args: string[]; scrubbed?: boolean }[];
}

/** Hosts started by the running test: SIGKILLed after it, so that a failed test leaves nothing (their watchdogs end the rest). */
const started: { pid: number; startKey: number }[] = [];

/** Starts the stand-in host on `spec`; resolves once `ready(state)` holds. */
async function startHost(spec: Spec, ready: (s: HostState) => boolean) {
  const records = tmpDir();
  const stateFile = path.join(tmpDir(), 'state.json');
  const child = spawn(process.execPath, [HOST_FIXTURE, records, stateFile, JSON.stringify(spec)], {
    stdio: 'ignore',
    env: { ...process.env, WATCHDOG_CLI: CLI, LIFETIME: '120' },
  });
  register(child.pid!);
  started.push({ pid: child.pid!, startKey: table.read(child.pid!)?.startKey ?? -1 });
  const read = (): HostState | undefined => {
    try {
      return JSON.parse(fs.readFileSync(stateFile, 'utf8'));
    } catch {
      return undefined;
    }
  };
  const recordFile = path.join(records, `${child.pid}.json`);
  // Ready, and what it holds recorded on disk: it writes its record at most about once a second, and a process with
  // no mark (a scrubbed one) is found after the host's death only if that record names it.
  const onDisk = (s: HostState) => recordedPids(s).every((pid) => writtenPids(recordFile).includes(pid));
  const state = await waitFor(
    'the host to record its processes',
    () => {
      const s = read();
      return s && ready(s) && onDisk(s) && s;
    },
    20_000,
  );
  register(state.watchdog);
  for (const key of state.members) register(Number(key.split(':')[0]));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, records, state, read: () => read()!, exited, recordFile };
}

const recordedPids = (s: HostState) => (s.recorded?.seen ?? []).map((p) => p.pid);
/** What the host's record on disk names (a change reaches it at most once a second). */
function writtenPids(recordFile: string): number[] {
  try {
    return (JSON.parse(fs.readFileSync(recordFile, 'utf8')).hostProcesses?.seen ?? []).map((p: { pid: number }) => p.pid);
  } catch {
    return [];
  }
}
const pidOf = (key: string) => Number(key.split(':')[0]);

/** A language server (a sleeper), a daemon that double-forks at once (found by the mark only), and a scrubbed child with a setsid grandchild. */
function typicalSpec(dir: string, extra: Partial<Spec> = {}): { spec: Spec; daemonPids: string; scrubbedPids: string } {
  const daemonPids = path.join(dir, 'daemon');
  const scrubbedPids = path.join(dir, 'scrubbed');
  return {
    daemonPids,
    scrubbedPids,
    spec: {
      folders: [{ id: 'test.language-server', folder: '/bin' }],
      keep: [{ extensionId: 'agent-trees.agent-trees', folder: REPO }],
      children: [
        { command: '/bin/sleep', args: ['120'] },
        { command: 'sh', args: [FIXTURE, 'daemon', daemonPids] },
        { command: 'sh', args: [FIXTURE, 'setsid', scrubbedPids], scrubbed: true },
      ],
      ...extra,
    },
  };
}

describe("other extensions' processes of an extension host, on real processes", function () {
  this.timeout(60_000);
  afterEach(async () => {
    for (const h of started.splice(0)) if (table.read(h.pid)?.startKey === h.startKey) process.kill(h.pid, 'SIGKILL');
  });

  it('a SIGKILLed host: its watchdog ends every process it recorded or marked; a decoy, a forged mark and the kept live on', async function () {
    const dir = tmpDir();
    const { spec, daemonPids, scrubbedPids } = typicalSpec(dir);
    const host = await startHost(spec, (s) => s.children.every((pid) => recordedPids(s).includes(pid)));
    const daemon = (await fixturePids(daemonPids)).all;
    const scrubbed = await fixturePids(scrubbedPids);
    // The scrubbed child's setsid grandchild carries no mark: only having been seen makes it the host's. Its parent
    // ends, so it leaves the chain, as a daemon whose parent exited does.
    const grandchild = scrubbed.roles.get('setsid')![0];
    await waitFor('the grandchild recorded', () => writtenPids(host.recordFile).includes(grandchild));
    process.kill(scrubbed.roles.get('root')![0], 'SIGKILL');
    await waitFor(
      'the grandchild to leave the chain',
      () => table.read(grandchild)?.ppid === 1 || table.read(grandchild)?.ppid !== scrubbed.roles.get('root')![0],
    );

    // Outside the host: the language server's very command line, and another user's process with the host's mark.
    const decoy = spawn('/bin/sleep', ['120'], { stdio: 'ignore', detached: true });
    register(decoy.pid!);
    requireEnvironment(this, isRoot, "root, to start another user's process carrying the host's mark", { part: true });
    const forged = isRoot
      ? spawn('setpriv', [...AS_OTHER_USER, 'env', `AGENT_TREES_HOST=${host.state.mark}`, '/bin/sleep', '120'], { stdio: 'ignore' })
      : undefined;
    if (forged) register(forged.pid!);
    await waitFor('the outsiders to run', () => aliveOf([decoy.pid!, ...(forged ? [forged.pid!] : [])]).length === (forged ? 2 : 1));

    const ours = [...host.state.children.filter((p) => p !== scrubbed.roles.get('root')![0]), ...daemon, grandchild];
    const killedAt = Date.now();
    host.child.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(ours, 10_000), [], "every process of the host's ended");
    const ms = Date.now() - killedAt;
    await waitFor(
      'the record (and its claim) to go',
      () => fs.readdirSync(host.records).filter((n) => !n.startsWith('window-')).length === 0,
    );
    this.test!.title += ` (${ours.length} processes ended ${ms} ms after the SIGKILL)`;
    assert.deepStrictEqual(aliveOf([decoy.pid!]), [decoy.pid!], 'the decoy lives');
    if (forged) assert.deepStrictEqual(aliveOf([forged.pid!]), [forged.pid!], "another user's process with a forged mark lives");
    for (const p of [decoy, forged]) p?.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead([decoy.pid!, ...(forged ? [forged.pid!] : [])]), []);
  });

  it("keeps a kept extension's processes and their descendants", async function () {
    const dir = tmpDir();
    const kept = tmpDir('agent-trees-kept-extension-');
    const script = path.join(kept, 'server.sh');
    // Stays `sh <kept>/server.sh` (no exec): what it runs names the kept folder.
    fs.writeFileSync(script, `#!/bin/sh\nsleep 120 &\nsleep 120\n`);
    const { spec } = typicalSpec(dir, {});
    spec.folders.push({ id: 'kept.extension', folder: kept });
    spec.keep.push({ extensionId: 'kept.extension', folder: kept });
    spec.children.push({ command: 'sh', args: [script] });
    const host = await startHost(
      spec,
      (s) => s.children.every((pid) => recordedPids(s).includes(pid)) && Object.values(s.whose).includes('kept.extension'),
    );
    const keptPids = Object.entries(host.state.whose)
      .filter(([, id]) => id === 'kept.extension')
      .map(([key]) => pidOf(key));
    for (const pid of keptPids) register(pid);
    assert.ok(keptPids.length >= 2, `the kept server and its child: ${keptPids.join(', ')}`);
    const others = host.state.members.map(pidOf).filter((pid) => !keptPids.includes(pid));
    host.child.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(others, 10_000), []);
    await waitFor('the record to go', () => !fs.existsSync(host.recordFile));
    assert.deepStrictEqual(aliveOf(keptPids), keptPids, "the kept extension's processes live on");
    for (const pid of keptPids) process.kill(pid, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead(keptPids), []);
  });

  it("a live host whose window went to a newer host (the takeover) ends its processes but the kept extension's, in its own group, and records them no more", async function () {
    const dir = tmpDir();
    const kept = tmpDir('agent-trees-kept-extension-');
    const script = path.join(kept, 'server.sh');
    fs.writeFileSync(script, `#!/bin/sh\nsleep 120 &\nsleep 120\n`);
    const { spec, daemonPids } = typicalSpec(dir, {});
    spec.folders.push({ id: 'kept.extension', folder: kept });
    spec.keep.push({ extensionId: 'kept.extension', folder: kept });
    spec.children.push({ command: 'sh', args: [script] });
    const host = await startHost(
      spec,
      (s) => s.children.every((pid) => recordedPids(s).includes(pid)) && Object.values(s.whose).includes('kept.extension'),
    );
    const keptPids = Object.entries(host.state.whose)
      .filter(([, id]) => id === 'kept.extension')
      .map(([key]) => pidOf(key));
    const ours = [...host.state.members.map(pidOf).filter((pid) => !keptPids.includes(pid)), ...(await fixturePids(daemonPids)).all];
    // The host's children share its process group (as under code-server): the kill must go one by one.
    assert.ok(
      host.state.children.some((pid) => table.read(pid)?.pgid === table.read(host.child.pid!)?.pgid),
      "a child in the host's group",
    );
    host.child.kill('SIGUSR2');
    const report = await waitFor(
      'the hand-over',
      () => {
        const s = host.read() as HostState & { handedOver?: { survivors: number } | string };
        return typeof s.handedOver === 'object' && s.handedOver;
      },
      15_000,
    );
    assert.deepStrictEqual(
      await waitAllDead(ours, 10_000),
      [],
      `every process of the host's but the kept extension's: ${JSON.stringify(report)}`,
    );
    assert.deepStrictEqual(aliveOf(keptPids), keptPids, "the kept extension's processes live on");
    assert.deepStrictEqual(
      aliveOf([host.child.pid!]),
      [host.child.pid!],
      'the host itself lives on (it lingers for the reconnection grace)',
    );
    await waitFor('its record to go with them', () => !fs.existsSync(host.recordFile));
    for (const pid of keptPids) process.kill(pid, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead(keptPids), []);
  });

  it('a host whose watchdog was killed too: the next sweep ends what the record names', async function () {
    const dir = tmpDir();
    const { spec, daemonPids } = typicalSpec(dir);
    const host = await startHost(spec, (s) => s.children.every((pid) => recordedPids(s).includes(pid)));
    const all = [...host.state.members.map(pidOf), ...(await fixturePids(daemonPids)).all];
    process.kill(host.state.watchdog, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead([host.state.watchdog]), []);
    host.child.kill('SIGKILL');
    await host.exited;
    assert.ok(fs.existsSync(host.recordFile), 'the record waits for a sweep');
    assert.ok(aliveOf(all).length > 0, 'nothing ended them yet');
    const swept = await runCli(['sweep', '--records', host.records, '--json', '--grace', '0.5']);
    assert.strictEqual(swept.code, 0, swept.stderr);
    const result = JSON.parse(swept.stdout);
    assert.strictEqual(result.hostProcesses.length, 1);
    assert.deepStrictEqual(await waitAllDead(all, 10_000), []);
    assert.ok(!fs.existsSync(host.recordFile));
  });

  it("a gone host's record edited to name another live host's mark, or a process older than itself: the sweep ends neither", async function () {
    const dir = tmpDir();
    const { spec } = typicalSpec(dir);
    const live = await startHost(spec, (s) => s.children.every((pid) => recordedPids(s).includes(pid)));
    const older = spawn('/bin/sleep', ['120'], { stdio: 'ignore', detached: true });
    register(older.pid!);
    const olderKey = await waitFor('the older process to run', () => table.read(older.pid!)?.startKey);
    await waitFor('a clock tick to pass: the host starts after it', () => nowTicks() > olderKey + 1);
    const gone = spawn('/bin/sleep', ['0.2'], { stdio: 'ignore' });
    const goneKey = await waitFor('the gone host to start', () => table.read(gone.pid!)?.startKey);
    await new Promise((resolve) => gone.once('exit', resolve));
    const records = tmpDir();
    const record = {
      version: 1,
      owner: identity(gone.pid!, goneKey),
      trees: [],
      hostProcesses: { mark: live.state.mark, seen: [{ pid: older.pid!, startTicks: olderKey, extensionId: 'some.ext' }], keep: [] },
    };
    fs.writeFileSync(path.join(records, `${gone.pid}.json`), JSON.stringify(record), { mode: 0o600 });
    const swept = await runCli(['sweep', '--records', records, '--json', '--grace', '0.5', '--no-cgroup']);
    assert.strictEqual(swept.code, 0, swept.stderr);
    assert.strictEqual(JSON.parse(swept.stdout).killed, 0, swept.stdout);
    const others = [older.pid!, ...live.state.members.map(pidOf)];
    assert.deepStrictEqual(aliveOf(others), others, "the live host's processes and the older process live on");
    older.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead([older.pid!]), []);
  });

  it("a SIGKILLed host: a terminal an extension opened with the host's environment (its mark and the window's tag) lives on, with what runs in it", async function () {
    const dir = tmpDir();
    const { spec } = typicalSpec(dir);
    const host = await startHost(spec, (s) => s.children.every((pid) => recordedPids(s).includes(pid)));
    // The pty host starts the shell, not the extension host: `createTerminal({ env: process.env })` gives it the mark.
    const shell = spawn('sh', ['-c', 'sleep 120 & wait'], {
      stdio: 'ignore',
      detached: true,
      env: { ...process.env, AGENT_TREES_HOST: host.state.mark, AGENT_TREES_WINDOW: 'a-window-id' },
    });
    register(shell.pid!);
    const inShell = await waitFor('the shell to start its command', () =>
      table
        .snapshot()
        .children()
        .get(shell.pid!)
        ?.map((p) => p.pid),
    );
    for (const pid of inShell) register(pid);
    const ours = host.state.members.map(pidOf);
    host.child.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(ours, 10_000), [], "every process of the host's ended");
    await waitFor('the record to go', () => !fs.existsSync(host.recordFile));
    assert.deepStrictEqual(aliveOf([shell.pid!, ...inShell]), [shell.pid!, ...inShell], 'the terminal and its command live on');
    for (const pid of [shell.pid!, ...inShell]) process.kill(pid, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead([shell.pid!, ...inShell]), []);
  });

  it("a SIGKILLed host: an `agent-trees run` an agent started in it keeps its watchdog, which ends the run's tree (it ignores SIGTERM)", async function () {
    const cliRecords = tmpDir();
    const run = `${process.execPath} ${CLI} run --records ${cliRecords} -- sh -c 'trap "" TERM; sleep 120 & wait'; :`;
    const spec: Spec = { folders: [{ id: 'some.agent', folder: '/usr' }], keep: [], children: [{ command: 'sh', args: ['-c', run] }] };
    const host = await startHost(spec, (s) => s.members.length >= 2 && s.members.every((key) => recordedPids(s).includes(pidOf(key))));
    const tree = await waitFor('the run to record its tree', () => {
      const file = fs.readdirSync(cliRecords).find((n) => /^\d+\.json$/.test(n));
      const root = file && JSON.parse(fs.readFileSync(path.join(cliRecords, file), 'utf8')).trees[0]?.rootPid;
      const below = root && table.snapshot().children().get(root);
      return below?.length ? [root as number, ...below.map((p: { pid: number }) => p.pid)] : undefined;
    });
    for (const pid of tree) register(pid);
    host.child.kill('SIGKILL');
    assert.deepStrictEqual(await waitAllDead(host.state.members.map(pidOf), 10_000), [], "every process of the host's ended");
    assert.deepStrictEqual(await waitAllDead(tree, 10_000), [], "the run's tree ended, by its own watchdog");
    await waitFor("the run's record to go", () => fs.readdirSync(cliRecords).filter((n) => n.endsWith('.json')).length === 0);
  });

  it('an owner that records host processes starts its watchdog (its records folder made first), keeps both past its teardown, and stops them when it records nothing', async () => {
    const records = path.join(tmpDir(), 'not-made-yet');
    const core = processCore();
    const me = core.table.read(process.pid)!;
    const owner = new TreeOwner({ core, recordsDir: records, watchdog: { cliPath: CLI } });
    owner.setHostProcesses({ mark: hostMark({ pid: me.pid, startKey: me.startKey }), seen: [], keep: [] });
    const watchdog = owner.watchdogPid;
    assert.ok(watchdog, 'a watchdog runs');
    register(watchdog);
    assert.ok(fs.existsSync(path.join(records, `${process.pid}.json`)));
    await owner.dispose(0);
    assert.strictEqual(owner.watchdogPid, watchdog, 'the teardown keeps the watchdog: it acts once this process is gone');
    assert.ok(fs.existsSync(path.join(records, `${process.pid}.json`)), 'and the record');
    owner.setHostProcesses(undefined);
    assert.deepStrictEqual(await waitAllDead([watchdog]), [], 'told to quit');
    assert.ok(!fs.existsSync(path.join(records, `${process.pid}.json`)));
  });

  it("the view's look at a host's processes: what a full resolution finds; between walks (every 3 s) it reads the known ones only", async () => {
    const core = processCore();
    const me = core.table.read(process.pid)!;
    const host = { pid: me.pid, startKey: me.startKey };
    const query = { host, mark: hostMark(host), seen: [], exclude: [] };
    const first = path.join(tmpDir(), 'pids');
    const child = spawn('sh', [FIXTURE, 'setsid', first], { stdio: 'ignore' });
    register(child.pid!);
    const tree = (await fixturePids(first)).all;
    const clock = { now: 0 };
    const tracker = new MemberTracker(core, { now: () => clock.now }, 'host test');
    const look = () => {
      const request = tracker.next([], { host: query }, true);
      const reads = table.reads;
      const r = refreshMembers(table, request, core);
      tracker.learn(r);
      return { request, pids: r.host!.members.map((m) => m.pid), reads: table.reads - reads };
    };
    const full = () => resolveHostProcesses(core.table.snapshot(), query, core).members.map((p) => p.pid);
    const walked = look();
    assert.ok(walked.request.hostWalk, 'the first look walks');
    for (const pid of [child.pid!, ...tree]) assert.ok(walked.pids.includes(pid), `${pid} found`);
    assert.deepStrictEqual(walked.pids, full(), 'what a full resolution finds');
    clock.now += 1000;
    const second = path.join(tmpDir(), 'pids');
    const later = spawn('sh', [FIXTURE, 'deep', second], { stdio: 'ignore' });
    register(later.pid!);
    const deep = (await fixturePids(second)).all;
    const between = look();
    assert.strictEqual(between.request.hostWalk, false, 'a look 1 s later reads the known ones');
    assert.ok(!between.pids.includes(later.pid!), 'a newcomer waits for the next walk');
    assert.ok(between.reads < walked.reads, `${between.reads} reads, against ${walked.reads} for the walk`);
    clock.now += 2000;
    const next = look();
    assert.ok(next.request.hostWalk, '3 s after the last walk, the next');
    for (const pid of [later.pid!, ...deep]) assert.ok(next.pids.includes(pid), `${pid} found`);
    for (const p of [child, later]) p.kill('SIGKILL');
    for (const pid of [...tree, ...deep]) process.kill(pid, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead([child.pid!, later.pid!, ...tree, ...deep]), []);
  });

  it("a live host ends its own child and the child's tree one by one, in its own process group; never a process of its group that is not its", async () => {
    const core = processCore();
    const me = core.table.read(process.pid)!;
    const pids = path.join(tmpDir(), 'pids');
    // A child of ours in our own group (as an extension's child shares the extension host's), with a setsid
    // grandchild; and a process of our group that is no descendant of ours and carries no mark (scrubbed, double-forked).
    const child = spawn('sh', [FIXTURE, 'setsid', pids], { stdio: 'ignore', env: { ...process.env, AGENT_TREES_HOST: '' } });
    register(child.pid!);
    const tree = (await fixturePids(pids)).all;
    const strangerFile = path.join(tmpDir(), 'stranger');
    spawn('sh', ['-c', `env -i sh -c 'echo $$ > ${strangerFile}; exec sleep 120' &`], { stdio: 'ignore' }).unref();
    const stranger = await waitFor(
      'the stranger',
      () => fs.existsSync(strangerFile) && Number(fs.readFileSync(strangerFile, 'utf8').trim()),
    );
    register(stranger);
    await waitFor(
      'the stranger to be re-parented',
      () => table.read(stranger)?.ppid !== undefined && table.read(stranger)!.ppid !== process.pid,
    );
    assert.strictEqual(table.read(stranger)!.pgid, me.pgid, 'the stranger is in our group');
    assert.strictEqual(table.read(child.pid!)!.pgid, me.pgid, 'our child is in our group');
    // The guard alone would refuse both (our own group): a tree kill could not reach them.
    assert.ok(core.guard.protectedReason(table.read(child.pid!)!));

    const query = {
      host: { pid: me.pid, startKey: me.startKey },
      mark: hostMark({ pid: me.pid, startKey: me.startKey }),
      seen: [],
      exclude: [],
    };
    const snap = core.table.snapshot();
    const refused = await endHostSubtrees(
      snap,
      { query, roots: [{ pid: stranger, startKey: table.read(stranger)!.startKey }], id: 'stranger' },
      core,
      {
        killer: core.killer,
        graceMs: 200,
      },
    );
    assert.strictEqual(refused.signalled, 0);
    assert.match(refused.refused.join('; '), /not \(any more\) a process of this extension host/);
    const report = await endHostSubtrees(
      core.table.snapshot(),
      { query, roots: [{ pid: child.pid!, startKey: table.read(child.pid!)!.startKey }], id: 'child' },
      core,
      { killer: core.killer, graceMs: 200 },
    );
    assert.deepStrictEqual(await waitAllDead([child.pid!, ...tree]), []);
    assert.strictEqual(report.survivors, 0);
    assert.deepStrictEqual(aliveOf([stranger]), [stranger], 'the stranger in our group lives');
    process.kill(stranger, 'SIGKILL');
    assert.deepStrictEqual(await waitAllDead([stranger]), []);
  });
});
