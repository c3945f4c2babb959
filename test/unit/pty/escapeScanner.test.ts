// The scanner of a terminal's output (src/proc/pty/escapeScanner.ts): bells and the notification sequences (OSC 9,
// OSC 777 notify, OSC 99) read from a stream, split at every position, as text and as bytes; what is not one
// (a BEL that ends a title, ConEmu's OSC 9;4 progress, kitty's questions) stays silent.
import * as assert from 'assert';
import { EscapeScanner, TerminalSignal } from '../../../src/proc';

const ESC = '\x1b';
const BEL = '\x07';
const ST = `${ESC}\\`;

/** What the scanner reports for `chunks`, fed one after another. */
function scan(chunks: string[], bytes = false): TerminalSignal[] {
  const got: TerminalSignal[] = [];
  const s = new EscapeScanner((x) => got.push(x), { bytes });
  for (const c of chunks) s.feed(c);
  return got;
}

/** Every way of cutting `text` in two (and in single characters): the same signals each time. */
function everySplit(text: string, bytes = false): TerminalSignal[] {
  const whole = scan([text], bytes);
  for (let i = 1; i < text.length; i++) {
    assert.deepStrictEqual(scan([text.slice(0, i), text.slice(i)], bytes), whole, `split at ${i}: ${JSON.stringify(text)}`);
  }
  assert.deepStrictEqual(scan([...text], bytes), whole, `one character at a time: ${JSON.stringify(text)}`);
  return whole;
}

/** The text as a relay reads it: UTF-8 bytes, one latin1 character each. */
const asBytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

describe('terminal notification sequences in agent output', () => {
  it('a bell outside any sequence is a bell; the BEL that ends a title is not', () => {
    assert.deepStrictEqual(everySplit(`working${BEL}`), [{ kind: 'bell' }]);
    assert.deepStrictEqual(everySplit(`${ESC}]0;✳ Claude Code${BEL}plain text`), []);
    assert.deepStrictEqual(everySplit(`${ESC}]2;title${BEL}${BEL}`), [{ kind: 'bell' }], 'a second BEL after the title is a bell');
    assert.deepStrictEqual(everySplit(`${ESC}]8;;http://x${ST}link${ESC}]8;;${ST}`), [], 'hyperlinks');
    assert.deepStrictEqual(everySplit(`${ESC}P1$r0m${BEL}${ST}`), [], 'a BEL inside a DCS is not a bell');
    assert.deepStrictEqual(everySplit(`${ESC}_Gi=1;OK${BEL}`), [], 'nor inside an APC');
    assert.deepStrictEqual(everySplit(`${ESC}[31${BEL}m`), [{ kind: 'bell' }], 'inside a CSI a VT parser rings it');
  });

  it('OSC 9, OSC 777 notify and OSC 99 are notifications, ended by BEL or ST', () => {
    assert.deepStrictEqual(everySplit(`${ESC}]9;Build done${BEL}`), [{ kind: 'osc9', title: '', body: 'Build done' }]);
    assert.deepStrictEqual(everySplit(`${ESC}]9;Build done${ST}`), [{ kind: 'osc9', title: '', body: 'Build done' }]);
    assert.deepStrictEqual(everySplit(`${ESC}]777;notify;Codex;Approve rm -rf?${BEL}`), [
      { kind: 'osc777', title: 'Codex', body: 'Approve rm -rf?' },
    ]);
    assert.deepStrictEqual(everySplit(`${ESC}]99;;Needs input${ST}`), [{ kind: 'osc99', title: 'Needs input', body: '' }]);
    assert.deepStrictEqual(
      everySplit(`${ESC}]9;a;b${ESC}[0m`),
      [{ kind: 'osc9', title: '', body: 'a;b' }],
      'as in xterm.js, any ESC ends an OSC',
    );
  });

  it("ConEmu's OSC 9 commands (9;4 progress), other OSC 777 commands and kitty's questions are not notifications", () => {
    assert.deepStrictEqual(everySplit(`${ESC}]9;4;1;50${BEL}${ESC}]9;4;0${ST}${ESC}]9;12${BEL}`), []);
    assert.deepStrictEqual(everySplit(`${ESC}]777;preexec${BEL}${ESC}]777;precmd;x${BEL}`), []);
    assert.deepStrictEqual(everySplit(`${ESC}]99;i=1:p=?;${ST}${ESC}]99;i=1:p=close;${ST}`), []);
    assert.deepStrictEqual(everySplit(`${ESC}]7501;state=blocked:app=codex:kind=permission${BEL}`), [], 'nor any other OSC');
  });

  it("kitty's notification in parts (d=0), and base64 (e=1)", () => {
    const title = `${ESC}]99;i=7:d=0:p=title;Claude${ST}`;
    const body = `${ESC}]99;i=7:p=body:e=1;${Buffer.from('needs you ✓').toString('base64')}${ST}`;
    assert.deepStrictEqual(everySplit(title + body), [{ kind: 'osc99', title: 'Claude', body: 'needs you ✓' }]);
  });

  it('reads bytes as a relay does (latin1), decoding the words as UTF-8', () => {
    assert.deepStrictEqual(everySplit(asBytes(`${ESC}]9;Prêt ✓ 日本${BEL}`), true), [{ kind: 'osc9', title: '', body: 'Prêt ✓ 日本' }]);
    assert.deepStrictEqual(everySplit(asBytes(`é${ESC}]0;ti✓tle${BEL}ü${BEL}`), true), [{ kind: 'bell' }]);
  });

  it('a bell storm is one signal per chunk, and a long OSC text is cut, not kept whole', () => {
    assert.deepStrictEqual(scan([BEL.repeat(100_000)]), [{ kind: 'bell' }]);
    assert.deepStrictEqual(scan([`a${BEL}b`, `${BEL}c`]), [{ kind: 'bell' }, { kind: 'bell' }]);
    const [long] = scan([`${ESC}]9;${'x'.repeat(100_000)}${BEL}`]);
    assert.strictEqual(long.kind === 'osc9' && long.body.length, 4096);
  });

  it('tracks whether a sequence is open exactly as without a listener', () => {
    const samples = [`a${ESC}[3`, `${ESC}]0;t`, `${ESC}]9;x`, `x${BEL}${ESC}(`, `${ESC}P1$r`, `${ESC}]99;;a${ESC}`, 'plain'];
    for (const text of samples) {
      const quiet = new EscapeScanner();
      const loud = new EscapeScanner(() => {});
      quiet.feed(text);
      loud.feed(text);
      assert.strictEqual(loud.atGround, quiet.atGround, JSON.stringify(text));
    }
  });
});
