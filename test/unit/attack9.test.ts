/**
 * Adversarial probes of the controller split (issue 9): the definition resolution moved to src/agents, Kill
 * Process on a process outside our trees through TreeOwner.killForeignProcess, the MCP wrapper's owner check
 * (ownerIsChildOf) and the API's lazy members (RunMembers). Real processes where a process is involved.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { execFileSync, spawn, spawnSync } from 'child_process';
import { AgentDefinition, expandVariables, validateDefinitions } from '../../src/agents/definition';
import { commandLineDefinition, findAgent, LaunchContext, resolveDefinition } from '../../src/agents/resolveDefinition';
import { AgentRuns } from '../../src/agents/runs';
import { RunMembers } from '../../src/extension/runMembers';
import { OwnerInfo, ownerIsChildOf, processCore, SpawnError, TreeMembersSource, TreeOwner } from '../../src/proc';
import { createCore } from '../../src/proc/core';
import { hostClock } from '../../src/proc/platform/bootClock';
import { ProcessInfo } from '../../src/proc/platform/processTable';
import { aliveOf, FIXTURE, fixturePids, REPO, register, table, tmpDir, waitAllDead, waitFor } from '../support/started';
import { hasTool } from '../support/records';

const isRoot = process.getuid?.() === 0;

/** The resolution as src/extension/controller.ts did it before the move (61e0e91), for comparison. */
function resolvedBeforeTheMove(def: AgentDefinition, context: LaunchContext): { definition: AgentDefinition; defaultCwd?: string } {
  const workspaceFolder = context.workspaceFolders[0];
  const expanded = expandVariables(def, { workspaceFolder, userHome: context.userHome, env: context.env });
  const cwd =
    expanded.cwd && workspaceFolder && !path.isAbsolute(expanded.cwd) ? path.join(workspaceFolder, expanded.cwd) : expanded.cwd;
  return { definition: { ...expanded, cwd }, defaultCwd: workspaceFolder };
}

describe('attack probes, issue 9 (the controller split)', () => {
  describe('what a launch runs (resolveDefinition)', () => {
    const marker = path.join(os.tmpdir(), `attack9-pwn-${process.pid}`);
    const env = {
      HOLDS_VAR: '${workspaceFolder}/${userHome}/${env:HOME}',
      HOLDS_SHELL: `$(touch ${marker})\`touch ${marker}\``,
      EMPTY: '',
    };
    const context: LaunchContext = { workspaceFolders: ['/ws/one', '/ws/two'], userHome: '/home/u', env };
    const cases: { title: string; def: AgentDefinition; context?: LaunchContext; expect: Partial<AgentDefinition> }[] = [
      {
        title: '${env:X} holding ${workspaceFolder}: expanded once, the value stays as written',
        def: { name: 'a', command: '${env:HOLDS_VAR}', args: ['${env:HOLDS_VAR}'], cwd: '${env:HOLDS_VAR}', env: { V: '${env:HOLDS_VAR}' } },
        expect: {
          command: env.HOLDS_VAR,
          args: [env.HOLDS_VAR],
          cwd: path.join('/ws/one', env.HOLDS_VAR),
          env: { V: env.HOLDS_VAR },
        },
      },
      {
        title: '${env:X} holding $(...) and backquotes: a literal, no shell',
        def: { name: 'a', command: 'echo', args: ['${env:HOLDS_SHELL}'] },
        expect: { command: 'echo', args: [env.HOLDS_SHELL] },
      },
      {
        title: 'unknown variables stay as written',
        def: { name: 'a', command: 'x', args: ['${workspaceFolderBasename}', '${env:}', '${env:1X}', '${config:a.b}', '${ env:HOME }'] },
        expect: { args: ['${workspaceFolderBasename}', '${env:}', '${env:1X}', '${config:a.b}', '${ env:HOME }'] },
      },
      {
        title: 'a relative cwd with .. leaves the first workspace folder (as before)',
        def: { name: 'a', command: 'x', cwd: '../../etc' },
        expect: { cwd: '/etc' },
      },
      {
        title: 'without a workspace folder ${workspaceFolder} and a relative cwd stay as written',
        def: { name: 'a', command: 'x', cwd: 'sub', args: ['${workspaceFolder}'] },
        context: { workspaceFolders: [], userHome: '/home/u', env },
        expect: { cwd: 'sub', args: ['${workspaceFolder}'] },
      },
      {
        title: 'an unset variable expands to nothing',
        def: { name: 'a', command: 'x', args: ['${env:NOT_SET_ANYWHERE}', '${env:EMPTY}'] },
        expect: { args: ['', ''] },
      },
    ];
    for (const c of cases) {
      it(c.title, () => {
        const ctx = c.context ?? context;
        const now = resolveDefinition(c.def, ctx);
        const before = resolvedBeforeTheMove(c.def, ctx);
        for (const [k, v] of Object.entries(c.expect)) assert.deepStrictEqual(now.definition[k as keyof AgentDefinition], v, k);
        assert.deepStrictEqual(now.definition, before.definition, 'as before the move');
        assert.strictEqual(now.defaultCwd, before.defaultCwd);
      });
    }

    it('a $(...) value passed as an argument runs no shell when launched', async () => {
      const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), () => ({
        defaultTimeoutSeconds: 0,
        killGraceSeconds: 0.3,
        killDescendantsOnExit: true,
      }));
      const def = resolveDefinition({ name: 'echo', command: 'echo', args: ['${env:HOLDS_SHELL}'], terminal: 'pipe' }, context).definition;
      const run = runs.launch(def);
      register(run.tree.child.pid!);
      try {
        await waitFor('the echo to end', () => !run.live);
        assert.match(run.output.text(), /\$\(touch /);
        assert.strictEqual(fs.existsSync(marker), false, 'nothing was run by a shell');
      } finally {
        await runs.owner.dispose(300);
      }
    });

    describe('a cwd that is no folder: a clear error, nothing spawned', () => {
      const dir = tmpDir();
      const file = path.join(dir, 'a-file');
      const fifo = path.join(dir, 'a-fifo');
      before(() => {
        fs.writeFileSync(file, '');
        execFileSync('mkfifo', [fifo]);
      });
      const cases: [string, () => string, RegExp][] = [
        ['missing', () => path.join(dir, 'missing'), /working folder .*missing does not exist/],
        ['a file', () => file, /working folder .*a-file is not a folder/],
        ['a FIFO', () => fifo, /working folder .*a-fifo is not a folder/],
        ['empty after expansion (${env:EMPTY})', () => '${env:EMPTY}', /working folder .*empty/],
      ];
      for (const [title, cwdOf, message] of cases) {
        it(title, () => {
          const owner = new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' });
          const runs = new AgentRuns(owner, () => ({ defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true }));
          const started = path.join(dir, `started-${title.length}`);
          const resolved = resolveDefinition(
            { name: 'x', command: '/bin/sh', args: ['-c', `touch ${started}`], cwd: cwdOf(), terminal: 'pipe' },
            { workspaceFolders: [dir], userHome: dir, env },
          );
          assert.throws(
            () => runs.launch(resolved.definition, { defaultCwd: resolved.defaultCwd }),
            (e: Error) => e instanceof SpawnError && message.test(e.message),
          );
          assert.strictEqual(owner.list().length, 0, 'nothing owned');
          assert.strictEqual(fs.existsSync(started), false, 'nothing ran');
        });
      }
    });

    it('an agent name: a bad entry of that name is its error even when a later good one has it (as before)', () => {
      const { agents, errors } = validateDefinitions([
        { name: 'dup', command: 'x', kind: 'bad' },
        { name: 'dup', command: 'y' },
        { name: 'z', command: 'z' },
        { name: 'z', command: 'w' },
      ]);
      const configured = { agents, agentErrors: errors, agentsFrom: 'user' as const, workspaceTrusted: true };
      const dup = findAgent('dup', configured);
      assert.strictEqual('found' in dup && dup.found.command, 'y', 'the good one of two with that name');
      const z = findAgent('z', configured);
      assert.strictEqual('found' in z && z.found.command, 'z', 'the first of two good ones');
      const quote = findAgent('") ("z', configured);
      assert.ok('missing' in quote, 'quotes in a name match no entry by accident');
    });

    it('typed command lines (POSIX): quotes and backslashes reach the shell unchanged', () => {
      const line = `  printf '%s|' "a b" 'c\\d' e\\ f "\\$HOME" '$(x)'  `;
      const def = commandLineDefinition(line, 'linux', {});
      assert.deepStrictEqual(def, { name: 'printf', command: '/bin/sh', args: ['-c', line.trim()] });
      assert.strictEqual(execFileSync(def.command, def.args!, { encoding: 'utf8' }), 'a b|c\\d|e f|$HOME|$(x)|');
    });

    // Probed: a quoted path as the first word was named by a piece of it ("Program", "my").
    it('typed command lines: a quoted first word is one word, named by its file name', () => {
      const names: [string, NodeJS.Platform, string][] = [
        [`'/opt/my tool/bin/agent' --x`, 'linux', 'agent'],
        [`"/opt/my tool/bin/agent" --x`, 'darwin', 'agent'],
        [`"C:\\Program Files\\Agent\\agent.exe" run`, 'win32', 'agent.exe'],
        [`'C:\\x y\\a.exe' run`, 'win32', 'x'], // cmd.exe does not quote with '
        [`"unterminated --x`, 'linux', '"unterminated'],
      ];
      for (const [line, platform, name] of names) assert.strictEqual(commandLineDefinition(line, platform, {}).name, name, line);
    });

    it('typed command lines (Windows): the line for cmd /d /s /c, %ComSpec% when set', () => {
      const line = '"C:\\Program Files\\tool.exe" --say "a b"';
      assert.deepStrictEqual(commandLineDefinition(line, 'win32', { ComSpec: 'C:\\Windows\\system32\\cmd.exe' }), {
        name: 'tool.exe',
        command: 'C:\\Windows\\system32\\cmd.exe',
        args: ['/d', '/s', '/c', line],
      });
      assert.strictEqual(commandLineDefinition(line, 'win32', {}).command, 'cmd.exe');
    });
  });

  describe('Kill Process outside our trees (TreeOwner.killForeignProcess)', () => {
    it('a process whose start key is not the row\'s (its pid reused) gets no signal', async () => {
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

    // Run by a disposable "host" in a session of its own: if the guard failed, only the probe's own shell died.
    const probeScript = (dir: string) => {
      const script = path.join(dir, 'probe.js');
      fs.writeFileSync(
        script,
        `const { TreeOwner, processCore } = require(${JSON.stringify(path.join(REPO, 'out', 'src', 'proc'))});
const { LinuxProcessTable } = require(${JSON.stringify(path.join(REPO, 'out', 'src', 'proc', 'platform', 'linuxProcessTable'))});
const { spawn } = require('child_process');
(async () => {
  const table = new LinuxProcessTable();
  const owner = new TreeOwner({ core: processCore(), recordsDir: ${JSON.stringify(dir)}, cgroups: 'off' });
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
      fs.chmodSync(dir, 0o755);
      fs.chmodSync(script, 0o644);
      return script;
    };

    it('PID 1, its own parent, itself and its own group: refused, nothing signalled', () => {
      const dir = tmpDir();
      const script = probeScript(dir);
      const ran = spawnSync('setsid', ['-w', 'sh', '-c', `"${process.execPath}" "${script}"; echo " sh-survived"`], {
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

    it("another user's process: nothing signalled, no throw, the process lives", async function () {
      if (!isRoot || !hasTool('setpriv')) this.skip();
      const victim = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
      register(victim.pid!);
      try {
        await waitFor('the sleep', () => table.read(victim.pid!));
        const dir = tmpDir();
        const script = probeScript(dir);
        fs.chmodSync(dir, 0o777);
        const ran = spawnSync(
          'setpriv',
          ['--reuid=12345', '--regid=12345', '--clear-groups', 'setsid', '-w', process.execPath, script, String(victim.pid)],
          { encoding: 'utf8', timeout: 20_000 },
        );
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

  describe("an MCP wrapper's owner (ownerIsChildOf)", () => {
    it('our child at the recorded pid counts only if it started at the recorded tick', async function () {
      const clock = hostClock();
      if (!clock?.procIsOurs) this.skip();
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      const grandchild = spawn('sh', ['-c', 'sleep 60 & wait'], { stdio: 'ignore' });
      register(child.pid!);
      register(grandchild.pid!);
      let g: ProcessInfo | undefined;
      try {
        const p = await waitFor('the sleep', () => table.read(child.pid!));
        g = await waitFor("the shell's child", () => table.snapshot().children().get(grandchild.pid!)?.[0]);
        register(g.pid);
        const owner = (q: typeof p, ticks: number): OwnerInfo => ({
          pid: q.pid,
          startTime: q.startTime,
          startTicks: ticks,
          bootId: clock!.bootId,
          pidNs: clock!.pidNs,
          machineId: clock!.machineId,
        });
        assert.strictEqual(ownerIsChildOf(owner(p, p.startKey), process.pid, table), true, 'that very child');
        assert.strictEqual(ownerIsChildOf(owner(p, p.startKey - 3), process.pid, table), false, 'a later process at the pid');
        assert.strictEqual(ownerIsChildOf(owner(p, p.startKey + 3), process.pid, table), false, 'a process older than the record');
        assert.strictEqual(ownerIsChildOf({ pid: p.pid, startTime: p.startTime }, process.pid, table), false, 'no boot identity: cannot tell');
        assert.strictEqual(ownerIsChildOf(owner(g, g.startKey), process.pid, table), false, 'a grandchild');
        assert.strictEqual(ownerIsChildOf({ ...owner(p, p.startKey), bootId: 'another-boot' }, process.pid, table), false, 'another boot');
      } finally {
        child.kill('SIGKILL');
        const all = [child.pid!, grandchild.pid!, ...(g ? [g.pid] : [])];
        for (const pid of all) process.kill(pid, 'SIGKILL');
        await waitFor('all gone', () => aliveOf(all).length === 0);
      }
    });
  });

  describe("the API's members (RunMembers)", () => {
    const settings = () => ({ defaultTimeoutSeconds: 0, killGraceSeconds: 0.3, killDescendantsOnExit: true });

    it('no runs, or only ended ones: nothing read, however often asked', async () => {
      const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), settings);
      const core = createCore();
      const source = new TreeMembersSource(core);
      const members = new RunMembers(runs, source);
      try {
        for (let i = 0; i < 50; i++) assert.strictEqual(members.now().size, 0);
        const run = runs.launch({ name: 'true', command: 'true', terminal: 'pipe' });
        register(run.tree.child.pid!);
        await waitFor('the run to end', () => !run.live);
        const before = source.stats().processReads;
        for (let i = 0; i < 50; i++) assert.strictEqual(members.now().size, 0);
        assert.strictEqual(source.stats().refreshes, 0);
        assert.strictEqual(source.stats().processReads, before, 'no process read');
      } finally {
        await runs.owner.dispose(300);
        source.dispose();
      }
    });

    it('asked in a tight loop: one full scan, then reads that follow the members, not the machine', async function () {
      const core = createCore();
      if (!core.table.listsChildren?.()) this.skip();
      const runs = new AgentRuns(new TreeOwner({ core: processCore(), recordsDir: tmpDir(), cgroups: 'off' }), settings);
      const source = new TreeMembersSource(core);
      const members = new RunMembers(runs, source);
      const file = path.join(tmpDir(), 'pids');
      const run = runs.launch({ name: 'tree', command: FIXTURE, args: ['setsid', file], terminal: 'pipe' });
      register(run.tree.child.pid!);
      const pids = await fixturePids(file);
      try {
        members.now();
        const machine = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
        const before = source.stats();
        const calls = 200;
        for (let i = 0; i < calls; i++) assert.deepStrictEqual((members.now().get(run.id) ?? []).length, pids.all.length);
        const after = source.stats();
        assert.strictEqual(after.refreshes - before.refreshes, calls);
        assert.ok(after.fullScans - before.fullScans <= 1, `${after.fullScans - before.fullScans} full scans in ${calls} calls`);
        const perCall = (after.processReads - before.processReads) / calls;
        assert.ok(perCall < machine / 2, `${perCall} reads a call, ${machine} processes on the machine`);
      } finally {
        await runs.owner.dispose(300);
        source.dispose();
      }
      assert.deepStrictEqual(await waitAllDead(pids.all), []);
    });
  });
});
