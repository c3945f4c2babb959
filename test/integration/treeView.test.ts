// The Process Trees view as a user sees it: its rows read from the workbench's DOM (renderedView.ts), never through
// the extension's API, with the view opened late (in a window that never showed it, after an agent was launched),
// opened first, and hidden and shown again while trees start, are killed and exit; and a process row shows the
// program the process runs now, although an exec kept its pid and start time (an MCP server's row: node, not the
// cgroup launcher it started as).
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import type { AgentTreesApi } from '../../src/extension/api';
import { api, pidFile } from './fixtures';
import { REPO } from '../support/repo';
import { hideView, openView, RenderedRow, renderedRows, renderedView, until } from './renderedView';
import { hasPage } from './workbenchPage';
import { sleep, waitFor } from '../support/wait';

/** The top row named `name` and the process rows beneath it, as on the screen (undefined while not shown). */
function treeRows(rows: RenderedRow[], name: string): { top: RenderedRow; processes: RenderedRow[] } | undefined {
  const at = rows.findIndex((r) => r.level === 1 && r.label === name);
  if (at < 0) return undefined;
  const end = rows.findIndex((r, i) => i > at && r.level === 1);
  return { top: rows[at], processes: rows.slice(at + 1, end < 0 ? undefined : end) };
}

/** Waits until the screen shows `name` with a description matching `state` and `processes` process rows. */
async function shownAs(name: string, state: RegExp, processes?: number): Promise<RenderedRow[]> {
  return until(`${name} shown as ${state}${processes === undefined ? '' : ` with ${processes} process row(s)`}`, async () => {
    const rows = await renderedRows();
    const tree = treeRows(rows, name);
    return tree && state.test(tree.top.description) && (processes === undefined || tree.processes.length === processes) && rows;
  });
}

describe('Agent Trees: the Process Trees view as the workbench renders it', function () {
  this.timeout(120_000);
  let trees: AgentTreesApi;
  const launched: string[] = [];
  /** A tree of `sleep 120` processes (`count` of them), without a terminal. */
  const launch = async (name: string, count = 1) => {
    const id = await trees.launch({
      name,
      command: 'sh',
      args: ['-c', `${'sleep 120 & '.repeat(count - 1)}exec sleep 120`],
      kind: 'mcp',
      timeoutSeconds: 0,
    });
    launched.push(id);
    return id;
  };

  before(async function () {
    if (!hasPage()) this.skip(); // the DOM is read through the host runner's page
    trees = await api();
  });

  after(async () => {
    for (const id of launched) assert.strictEqual((await trees.kill(id)).survivors, 0);
    if (hasPage()) await hideView();
  });

  it('opened late, in a window that never showed it: shows the agent launched before', async () => {
    const view = await renderedView();
    assert.ok(!view.shown && !view.everRendered, 'premise: no test before this one showed the view in this window');
    await launch('opened-late', 2);
    await sleep(3000);
    await openView();
    await shownAs('opened-late', /running · 2 processes/, 2);
  });

  it('opened first: shows an agent as it starts, runs and is killed', async () => {
    await openView();
    const id = await launch('opened-first');
    await shownAs('opened-first', /^running · 1 process · /, 1);
    assert.strictEqual((await trees.kill(id)).survivors, 0);
    await shownAs('opened-first', /^killed/, 0);
  });

  it('hidden and shown again while trees start and end: each showing shows what runs then', async () => {
    await openView();
    const first = await launch('shown-again-1');
    await shownAs('shown-again-1', /running/, 1);
    await hideView();
    await launch('shown-again-2', 3);
    assert.strictEqual((await trees.kill(first)).survivors, 0);
    await sleep(2000);
    await openView();
    await shownAs('shown-again-2', /running · 3 processes/, 3);
    await shownAs('shown-again-1', /^killed/, 0);
    await hideView();
    const third = await launch('shown-again-3');
    const ends = await trees.launch({ name: 'shown-again-ends', command: 'sh', args: ['-c', 'sleep 1'], kind: 'mcp', timeoutSeconds: 0 });
    await waitFor('it to exit', () => trees.list().find((t) => t.id === ends)?.state === 'exited', 10_000);
    await sleep(1000);
    await openView();
    await shownAs('shown-again-3', /^running/, 1);
    await shownAs('shown-again-ends', /^exited \(0\)/, 0);
    await hideView();
    assert.strictEqual((await trees.kill(third)).survivors, 0);
    await openView();
    await shownAs('shown-again-3', /^killed/, 0);
    await shownAs('shown-again-2', /running · 3 processes/, 3);
  });

  it("shows an MCP server's row as the program it runs (node ...), never the cgroup launcher it started as", async () => {
    await openView();
    // demo-mcp of the demo's settings (demo/workspace/.vscode/settings.json).
    const server = path.join(REPO, 'demo', 'fake-mcp-server.js');
    launched.push(await trees.launch({ name: 'demo-mcp', command: 'node', args: [server], kind: 'mcp', timeoutSeconds: 0 }));
    const label = async () => treeRows(await renderedRows(), 'demo-mcp')?.processes[0]?.label;
    await until("the server's row", async () => (await label())?.startsWith('node '));
    await sleep(2500); // past the age at which a command line is no longer read again (linuxProcessTable.ts)
    const settled = await label();
    assert.ok(settled?.startsWith('node ') && settled.includes('fake-mcp-server'), `the settled row: ${settled}`);
    assert.ok(!(await renderedRows()).some((r) => r.label.includes('cgroup.procs')), 'no row shows the cgroup launcher');
  });

  it('shows the program a process runs now: an exec keeps its pid and start time, the row follows it', async () => {
    await openView();
    const file = pidFile();
    const go = `${file}.go`;
    // The root waits, then execs another program; the row must not keep the command line it first read.
    await trees
      .launch({
        name: 'execs',
        command: 'sh',
        args: ['-c', 'while [ ! -e "$0" ]; do sleep 0.1; done; exec sleep 121', go],
        kind: 'mcp',
        timeoutSeconds: 0,
      })
      .then((id) => launched.push(id));
    const label = async () => treeRows(await renderedRows(), 'execs')?.processes[0]?.label;
    await until('the root shown waiting', async () => (await label())?.startsWith('sh -c while'));
    await sleep(2500); // longer than a young process's command line is read again (linuxProcessTable.ts)
    fs.writeFileSync(go, '');
    await until("the root shown as the program it exec'd", async () => (await label()) === 'sleep 121');
    // Nor does any row show the cgroup launcher (`sh -c echo $$ > "$0/cgroup.procs" ...; exec "$@"`) it exec'd from.
    assert.ok(!(await renderedRows()).some((r) => r.label.includes('cgroup.procs')), 'no row shows the cgroup launcher');
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
