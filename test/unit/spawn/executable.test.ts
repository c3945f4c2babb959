// Typed command lines on Windows (cmd.exe /d /s /c LINE): what reaches cmd.exe. No Windows machine here, so
// this checks the arguments spawn() gets and what cmd.exe's documented /s rule makes of them: with verbatim
// arguments Windows passes `file args...` joined by spaces; /s then drops the first and the last quote of the text
// after /c, and runs what is left.
import * as assert from 'assert';
import { cmdLine } from '../../../src/proc/spawn/executable';
import { commandLineDefinition } from '../../../src/agents/resolveDefinition';

/** What cmd.exe runs for `/d /s /c <rest>` (verbatim): the rest without its first and last quote. */
function cmdRuns(verbatimArgs: string[]): string {
  const rest = verbatimArgs.slice(3).join(' ');
  const first = rest.indexOf('"');
  const last = rest.lastIndexOf('"');
  return rest.slice(0, first) + rest.slice(first + 1, last) + rest.slice(last + 1);
}

describe('typed command lines through cmd.exe (Windows rules)', () => {
  const lines = [
    'claude --print "fix the tests"',
    '"C:\\Program Files\\x\\agent.exe" run --flag "a b"',
    'aider',
    'echo "quoted" & echo "two"',
  ];
  for (const line of lines) {
    it(`reaches cmd.exe as typed: ${line}`, () => {
      const def = commandLineDefinition(line, 'win32', { ComSpec: 'C:\\Windows\\system32\\cmd.exe' });
      const cmd = cmdLine(def.command, def.args ?? [], 'win32');
      assert.ok(cmd, 'spawned with verbatim arguments');
      assert.strictEqual(cmdRuns(cmd.args), line);
    });
  }

  it('leaves every other spawn to the usual quoting', () => {
    assert.strictEqual(cmdLine('C:\\Windows\\system32\\cmd.exe', ['/d', '/s', '/c', 'x'], 'linux'), undefined, 'not Windows');
    assert.strictEqual(cmdLine('C:\\tools\\node.exe', ['/d', '/s', '/c', 'x'], 'win32'), undefined, 'not cmd.exe');
    assert.strictEqual(cmdLine('C:\\tools\\mycmd.exe', ['/d', '/s', '/c', 'x'], 'win32'), undefined, 'a name ending in cmd');
    assert.strictEqual(cmdLine('cmd.exe', ['/c', 'echo a b'], 'win32'), undefined, 'cmd.exe without /d /s');
    assert.strictEqual(cmdLine('cmd.exe', ['/d', '/s', '/c', 'x', 'y'], 'win32'), undefined, 'more than one line');
    assert.deepStrictEqual(cmdLine('CMD', ['/D', '/S', '/C', 'x'], 'win32'), { args: ['/d', '/s', '/c', '"x"'] });
  });
});
