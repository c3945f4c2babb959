// VS Code's own MCP client and Agent Trees: the wrapper command, the servers of `agentTrees.agents` provided to the
// client (VS Code 1.101+), and a server of an mcp.json wrapped by hand. The server is test/fixtures/mcp-server.js:
// it speaks enough MCP to be initialized and list its tools, holds a `setsid` grandchild, ignores SIGTERM and keeps
// running after its stdin closes; left to VS Code alone (stdin closed, SIGTERM to one pid after 10 s, a tree kill
// that code-server cannot run after 20 s) its tree would survive.
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/api';
import type { AgentTreesTestHooks, ApiRow } from '../../src/extension/testHooks';
import { pidsUnder } from '../support/rows';
import { EXTENSION_ID, log } from './harness';
import { processes } from '../support/repo';
import { sleep, waitFor } from '../support/wait';
import { api, pidFile, shortKillGrace, testHooks } from './fixtures';
import { REPO } from '../support/repo';

const MCP_FIXTURE = path.join(REPO, 'test', 'fixtures', 'mcp-server.js');
const config = () => vscode.workspace.getConfiguration('agentTrees');
const [major, minor] = vscode.version.split('.').map(Number);
/** VS Code 1.101+ lets extensions provide MCP servers. */
const providerApi = major > 1 || minor >= 101;
/** VS Code's id of a server this extension provides. */
const providedId = (name: string) => `${EXTENSION_ID}/${name}`;
/**
 * VS Code stops a stdio server by closing its stdin, then SIGTERM to that one pid 10 s later. The tree must be gone
 * before that: whatever ends it sooner is the wrapper's doing. (The kill's grace is set to 1 s below.)
 */
const BEFORE_VSCODE_WOULD_MS = 8000;

/** The "ROLE VALUE" lines of a fixture's pid file, in order. */
function lines(file: string): { role: string; value: string }[] {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ role: l.split(' ')[0], value: l.slice(l.indexOf(' ') + 1) }));
}

/**
 * The processes of the `generation`-th start of the fixture server (1 = the first): the server, its helper
 * shell and that shell's setsid grandchild, once all of them wrote their lines.
 */
async function serverTree(file: string, generation: number): Promise<{ server: number; helper: number; setsid: number; all: number[] }> {
  const nth = (role: string) => lines(file).filter((l) => l.role === role)[generation - 1]?.value;
  await waitFor(
    () => `start ${generation} of the server in ${file}: ${JSON.stringify(lines(file))}`,
    () => !!nth('server') && !!nth('ready'),
    20_000,
  );
  const [server, helper, setsid] = ['server', 'root', 'setsid'].map((r) => Number(nth(r)));
  for (const pid of [server, helper, setsid]) startTicks.set(pid, processes.readStat(pid)?.startTicks ?? -1);
  return { server, helper, setsid, all: [server, helper, setsid] };
}

/** Start times of the processes the tests saw, so that a pid used again later never counts as alive. */
const startTicks = new Map<number, number>();

/**
 * The view's row of an MCP server (by name, or by tree id), after a fresh look, once it shows `state`: its
 * description names the state, and while it runs its processes are beneath it.
 */
async function serverRow(
  hooks: AgentTreesTestHooks,
  match: { name?: string; treeId?: string },
  state: 'running' | 'stopped' | 'killed',
): Promise<ApiRow> {
  let row: ApiRow | undefined;
  return waitFor(
    () => `the view to show the MCP server ${JSON.stringify(match)} ${state}: it shows ${JSON.stringify(row)}`,
    async () => {
      row = (await hooks.view()).find(
        (r) =>
          r.target.kind === 'windowTree' &&
          (match.name === undefined || r.label === match.name) &&
          (match.treeId === undefined || r.target.treeId === match.treeId),
      );
      return row?.description?.startsWith(`MCP server of VS Code · ${state}`) ? row : undefined;
    },
    { timeoutMs: 10_000, everyMs: 100 },
  );
}

const methods = (file: string) =>
  lines(file)
    .filter((l) => l.role === 'method')
    .map((l) => l.value);
const alive = (pids: number[]) => pids.filter((p) => processes.isAlive(p, startTicks.get(p)));
/** The processes of `pids` still alive, each with its state and command line, for a failure message. */
const described = (pids: number[]) =>
  alive(pids)
    .map((p) => `${p} (state ${processes.readStat(p)?.state}) ${processes.commandLine(p)}`)
    .join('; ');

/** Starts a server through VS Code's own command (not in the palette), waiting for its tools. */
async function startServer(id: string): Promise<void> {
  await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
}

/**
 * Starts a server for the `generation`-th time. VS Code learns of a server (or of its end) through events it handles
 * in its own time (the provider's change event, a file watcher, the process's exit), and until then starting it does
 * nothing: so start it again until the fixture writes the generation's first line.
 */
async function startUntilRunning(id: string, file: string, generation = 1, timeoutMs = 30_000): Promise<void> {
  const started = () => lines(file).filter((l) => l.role === 'server').length >= generation;
  await waitFor(
    `VS Code to start ${id} (start ${generation})`,
    async () => {
      if (started()) return true;
      await Promise.race([startServer(id), sleep(3000)]);
      return started();
    },
    { timeoutMs, everyMs: 500 },
  );
}

/**
 * Asks VS Code to stop a server, and waits for its whole tree to end, counted from the request: VS Code's
 * stop command itself returns only once VS Code is done with the process (up to 20 s later).
 */
async function stopAndWaitForTheEnd(id: string, pids: number[]): Promise<void> {
  const stopping = vscode.commands.executeCommand('workbench.mcp.stopServer', id);
  await waitFor(
    () => `still alive after ${BEFORE_VSCODE_WOULD_MS} ms: ${described(pids)}`,
    () => alive(pids).length === 0,
    BEFORE_VSCODE_WOULD_MS,
  );
  await stopping;
}

/** The `agent-trees run --mcp` wrapper a server process runs under, checked to be a child of this extension host. */
function wrapperOf(pid: number): number {
  const wrapper = processes.readStat(pid)!.ppid;
  const cmd = processes.commandLine(wrapper);
  assert.match(cmd, /dist\/cli\.js run --mcp /, `the server's parent ${wrapper} is the wrapper: ${cmd}`);
  assert.strictEqual(processes.readStat(wrapper)!.ppid, process.pid, 'VS Code started the wrapper from this extension host');
  startTicks.set(wrapper, processes.readStat(wrapper)!.startTicks);
  return wrapper;
}

describe('MCP: the wrapper command', function () {
  this.timeout(60_000);
  let trees: AgentTreesApi;
  before(async () => {
    trees = await api();
  });
  shortKillGrace();

  it(`provides the MCP servers of agentTrees.agents only where VS Code can take them (${vscode.version}: ${providerApi ? 'yes' : 'no'})`, () => {
    assert.strictEqual(trees.mcp().providing, providerApi);
  });

  it("Copy MCP Wrapper Command puts the exact command and args on the clipboard: this host's Node, the bundled CLI, this window's records", async () => {
    await vscode.env.clipboard.writeText('');
    const wrapper = await vscode.commands.executeCommand<{ command: string; args: string[]; env: Record<string, string> }>(
      'agentTrees.copyMcpWrapper',
    );
    assert.ok(wrapper, 'the command returns what it copied');
    const copied = JSON.parse(`{${await vscode.env.clipboard.readText()}}`);
    assert.deepStrictEqual({ command: copied.command, args: copied.args, env: copied.env ?? {} }, wrapper);
    assert.strictEqual(wrapper.command, process.execPath);
    const [cli, run, ...rest] = wrapper.args;
    assert.ok(path.isAbsolute(cli) && fs.existsSync(cli) && cli.endsWith(path.join('dist', 'cli.js')), cli);
    assert.strictEqual(run, 'run');
    assert.ok(rest.includes('--mcp'));
    assert.strictEqual(rest[rest.indexOf('--records') + 1], trees.recordsDir);
    assert.strictEqual(rest[rest.length - 1], '--', 'the server command goes last');
  });

  it('the copied command runs a server as an owned tree, and closing its stdin ends the whole tree at once', async () => {
    const wrapper = await vscode.commands.executeCommand<{ command: string; args: string[]; env: Record<string, string> }>(
      'agentTrees.copyMcpWrapper',
    );
    const file = pidFile();
    const child = spawn(wrapper.command, [...wrapper.args, process.execPath, MCP_FIXTURE, file], {
      env: { ...process.env, ...wrapper.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    child.stdin!.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '0' } },
      }) + '\n',
    );
    const tree = await serverTree(file, 1);
    await waitFor(
      () => `initialize answered: ${out}`,
      () => out.includes('"serverInfo"'),
    );
    assert.ok(processes.envOf(tree.setsid, 'AGENT_TREES_TREE_ID'), 'the setsid grandchild carries the tree tag');
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.stdin!.end();
    assert.strictEqual(await exited, 0, err);
    await waitFor(
      () => `alive: ${described(tree.all)}; the wrapper said: ${err}`,
      () => alive(tree.all).length === 0,
      BEFORE_VSCODE_WOULD_MS,
    );
  });
});

describe("MCP: servers of agentTrees.agents in VS Code's MCP client (1.101+)", function () {
  this.timeout(120_000);
  let trees: AgentTreesApi;
  let hooks: AgentTreesTestHooks;
  const files = { stop: pidFile(), kill: pidFile(), added: pidFile() };
  const server = (name: string, file: string) => ({
    name,
    command: process.execPath,
    args: [MCP_FIXTURE, file],
    kind: 'mcp',
    timeoutSeconds: 0,
  });

  before(async function () {
    if (!providerApi) this.skip(); // VS Code 1.100: no provider API (the wrapper tests above still run)
    trees = await api();
    hooks = await testHooks();
    await config().update('killGraceSeconds', 1, vscode.ConfigurationTarget.Global);
    await config().update(
      'agents',
      [server('it-mcp-stop', files.stop), server('it-mcp-kill', files.kill)],
      vscode.ConfigurationTarget.Global,
    );
  });

  after(async () => {
    if (!providerApi) return;
    for (const name of ['it-mcp-stop', 'it-mcp-kill', 'it-mcp-added'])
      await vscode.commands.executeCommand('workbench.mcp.stopServer', providedId(name));
    await config().update('agents', undefined, vscode.ConfigurationTarget.Global);
    await config().update('killGraceSeconds', undefined, vscode.ConfigurationTarget.Global);
  });

  it('VS Code starts a provided server through agent-trees run: it initializes and lists its tools, and shows as an owned tree', async () => {
    await startUntilRunning(providedId('it-mcp-stop'), files.stop);
    const tree = await serverTree(files.stop, 1);
    await waitFor(
      () => `the client initialized the server and listed its tools: ${methods(files.stop)}`,
      () => ['initialize', 'notifications/initialized', 'tools/list'].every((m) => methods(files.stop).includes(m)),
    );
    wrapperOf(tree.server);
    assert.ok(processes.envOf(tree.server, 'AGENT_TREES_TREE_ID'), 'the server carries its tree tag');
    const row = await serverRow(hooks, { name: 'it-mcp-stop' }, 'running');
    assert.strictEqual(row.contextValue, 'windowTree.live', 'Kill Agent Tree applies');
    assert.deepStrictEqual(
      tree.all.filter((p) => !pidsUnder(row).includes(p)),
      [],
      'the server, its helper and the setsid grandchild are shown beneath it',
    );
    const listed = trees.mcp().servers.find((s) => s.name === 'it-mcp-stop');
    assert.strictEqual(listed?.rootPid, tree.server);
    assert.strictEqual(listed?.state, 'running');
  });

  it('VS Code stops it: the whole tree ends at once, setsid grandchild too, and the view says stopped', async () => {
    const tree = await serverTree(files.stop, 1);
    const wrapper = wrapperOf(tree.server);
    await stopAndWaitForTheEnd(providedId('it-mcp-stop'), [...tree.all, wrapper]);
    const row = await serverRow(hooks, { name: 'it-mcp-stop' }, 'stopped');
    assert.strictEqual(row.contextValue, 'mcpServer.ended');
    assert.deepStrictEqual(row.children, []);
  });

  it('Kill from the view ends the tree, and VS Code sees the server stop: starting it again starts a new one', async () => {
    await startUntilRunning(providedId('it-mcp-kill'), files.kill);
    const first = await serverTree(files.kill, 1);
    const wrapper = wrapperOf(first.server);
    const row = await serverRow(hooks, { name: 'it-mcp-kill' }, 'running');
    // What the view's Kill action passes: the server's row.
    const report = await vscode.commands.executeCommand<{ signalled: number; survivors: number }>('agentTrees.killTree', row);
    assert.strictEqual(report?.survivors, 0);
    await waitFor(
      () => `alive: ${described([...first.all, wrapper])}`,
      () => alive([...first.all, wrapper]).length === 0,
    );
    await serverRow(hooks, { name: 'it-mcp-kill' }, 'killed');
    // Were the server still running in VS Code's eyes, starting it would do nothing.
    await startUntilRunning(providedId('it-mcp-kill'), files.kill, 2);
    const second = await serverTree(files.kill, 2);
    assert.notStrictEqual(second.server, first.server);
    await stopAndWaitForTheEnd(providedId('it-mcp-kill'), second.all);
  });

  it('follows the setting: a server added to agentTrees.agents starts, and one removed from it stops, tree and all', async () => {
    await config().update(
      'agents',
      [server('it-mcp-stop', files.stop), server('it-mcp-kill', files.kill), server('it-mcp-added', files.added)],
      vscode.ConfigurationTarget.Global,
    );
    // VS Code learns of the new server from the provider's change event.
    await startUntilRunning(providedId('it-mcp-added'), files.added);
    const tree = await serverTree(files.added, 1);
    const removing = config().update(
      'agents',
      [server('it-mcp-stop', files.stop), server('it-mcp-kill', files.kill)],
      vscode.ConfigurationTarget.Global,
    );
    await waitFor(
      () => `the removed server's tree: alive ${described(tree.all)}`,
      () => alive(tree.all).length === 0,
      BEFORE_VSCODE_WOULD_MS,
    );
    await removing;
  });
});

describe("MCP: a server of .vscode/mcp.json wrapped by the copied command, in VS Code's MCP client (1.101+)", function () {
  this.timeout(120_000);
  const file = pidFile();
  let mcpJson: string;
  // VS Code's id for a server of the first workspace folder's .vscode/mcp.json.
  const id = 'mcp.config.ws0.wrapped';

  before(async function () {
    if (!providerApi) this.skip(); // the commands that start and stop a server by id, with these options, are 1.101+
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'the test host opens a workspace folder');
    await config().update('killGraceSeconds', 1, vscode.ConfigurationTarget.Global);
    const wrapper = await vscode.commands.executeCommand<{ command: string; args: string[]; env: Record<string, string> }>(
      'agentTrees.copyMcpWrapper',
    );
    mcpJson = path.join(folder, '.vscode', 'mcp.json');
    fs.mkdirSync(path.dirname(mcpJson), { recursive: true });
    const entry = {
      type: 'stdio',
      command: wrapper.command,
      args: [...wrapper.args, process.execPath, MCP_FIXTURE, file],
      env: wrapper.env,
    };
    fs.writeFileSync(mcpJson, JSON.stringify({ servers: { wrapped: entry } }, null, 2));
    log(`[mcp] ${mcpJson}: ${JSON.stringify(entry)}`);
  });

  after(async () => {
    if (!providerApi) return;
    await vscode.commands.executeCommand('workbench.mcp.stopServer', id);
    fs.rmSync(mcpJson, { force: true });
    await config().update('killGraceSeconds', undefined, vscode.ConfigurationTarget.Global);
  });

  it('VS Code starts it: it initializes and lists its tools as an owned tree; VS Code stops it and nothing of its tree survives', async () => {
    // VS Code picks the file up through its watcher.
    await startUntilRunning(id, file);
    const tree = await serverTree(file, 1);
    await waitFor(
      () => `initialized and listed: ${methods(file)}`,
      () => methods(file).includes('tools/list'),
    );
    const wrapper = wrapperOf(tree.server);
    assert.ok(processes.envOf(tree.setsid, 'AGENT_TREES_TREE_ID'), 'the setsid grandchild carries the tree tag');
    let listed: ReturnType<AgentTreesApi['mcp']>['servers'][number] | undefined;
    await waitFor(
      'listed as a running MCP server',
      () =>
        !!(listed = trees()
          .mcp()
          .servers.find((s) => s.rootPid === tree.server && s.state === 'running')),
    );
    const row = await serverRow(await testHooks(), { treeId: listed!.id }, 'running');
    assert.deepStrictEqual(
      tree.all.filter((p) => !pidsUnder(row).includes(p)),
      [],
      'its whole tree is shown beneath it',
    );
    await stopAndWaitForTheEnd(id, [...tree.all, wrapper]);
  });

  const trees = () => vscode.extensions.getExtension<AgentTreesApi>(EXTENSION_ID)!.exports;
});
