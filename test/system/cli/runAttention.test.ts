// `agent-trees run` typed in a terminal of a window with Agent Trees (src/cli/runAttention.ts), in a real outer
// terminal: the relay reads the agent's bells and notification sequences, a key typed ends the wait, the tree's
// state is published in the records folder's attention folder for the window, and goes with the run. Outside a
// window's terminal nothing of it happens.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import type { PublishedState } from '../../../src/agents/attentionChannel';
import { CLI, tmpDir } from '../../support/repo';
import { OuterTerminal } from '../../support/tty';
import { waitFor } from '../../support/wait';

const WINDOW = '0123456789abcdef';

/** `agent-trees run -- sh -c SCRIPT` in an outer terminal, as typed in one of the window's terminals (or not). */
function typed(records: string, script: string, inWindow = true): OuterTerminal {
  const env: NodeJS.ProcessEnv = { ...process.env, AGENT_TREES_RECORDS: records };
  if (inWindow) env.AGENT_TREES_WINDOW = WINDOW;
  else delete env.AGENT_TREES_WINDOW;
  const line = `"${process.execPath}" "${CLI}" run -- /bin/sh -c '${script}'; echo "exit=$?"`;
  return new OuterTerminal('/bin/sh', ['-c', line], { cols: 100, rows: 30 }, env);
}

function published(records: string): PublishedState[] {
  const dir = path.join(records, 'attention');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('state-'))
    .map((n) => JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) as PublishedState);
}

describe('agent-trees run in a window terminal: the agent waiting', function () {
  this.timeout(30_000);

  it('a bell storm is one wait, told to the window; a key ends it; an OSC 777 is the next, with its words; all of it goes with the run', async () => {
    const records = tmpDir();
    const t = typed(
      records,
      'for i in 1 2 3 4 5 6 7 8 9; do printf "step %s\\a\\n" $i; done; read a; printf "\\033]777;notify;Build;needs you\\007"; read b',
    );
    const first = await waitFor('waiting, published', () => published(records).find((s) => s.attention.state === 'waiting'));
    assert.strictEqual(first.window, WINDOW);
    assert.strictEqual(first.attention.source, 'terminal');
    assert.strictEqual(first.attention.waits, 1, 'nine bells, one wait');
    t.pty.write('go\r');
    await waitFor('the next wait, with its words', () =>
      published(records).find((s) => s.attention.state === 'waiting' && s.attention.message === 'needs you'),
    );
    const [second] = published(records);
    assert.deepStrictEqual([second.attention.waits, second.attention.detail], [2, 'Build']);
    t.pty.write('done\r');
    await t.waitOutput(/exit=0/, 'run to end');
    assert.deepStrictEqual(fs.readdirSync(path.join(records, 'attention')), [], 'its state went with it');
  });

  it("reads the agent's output as the terminal does, as UTF-8 text: the byte 0x9C in claude's title (✳) is no ST", async () => {
    // Read byte by byte, 0x9C would be the C1 control ST: the title would end early and its BEL ring.
    const records = tmpDir();
    const t = typed(records, 'printf "\\033]0;\\342\\234\\263 Claude Code\\007"; printf "\\033]9;Prêt ✓\\007"; read a');
    const first = await waitFor('waiting, published', () => published(records).find((s) => s.attention.state === 'waiting'));
    assert.deepStrictEqual([first.attention.message, first.attention.waits], ['Prêt ✓', 1], 'the OSC 9 is the first wait');
    t.pty.write('x\r');
    await t.waitOutput(/exit=0/, 'run to end');
  });

  it('outside a window terminal: nothing is published, the run is as before', async () => {
    const records = tmpDir();
    const t = typed(records, 'printf "\\a"; sleep 0.5', false);
    await t.waitOutput(/exit=0/, 'run to end');
    assert.ok(!fs.existsSync(path.join(records, 'attention')));
  });
});
