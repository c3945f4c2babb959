// The scanner of a terminal's output (src/proc/pty/escapeScanner.ts): bells and the notification sequences (OSC 9,
// OSC 777 notify, OSC 99) read from a stream, split at every position; what is not one (a BEL that ends a title,
// ConEmu's OSC 9;4 progress, kitty's questions) stays silent; where a BEL rings is what VS Code's terminal says.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { EscapeScanner, TerminalSignal } from '../../../src/proc';
import { REPO } from '../../support/repo';
import { requireEnvironment } from '../../support/environment';

const ESC = '\x1b';
const BEL = '\x07';
const ST = `${ESC}\\`;

/** What the scanner reports for `chunks`, fed one after another. */
function scan(chunks: string[]): TerminalSignal[] {
  const got: TerminalSignal[] = [];
  const s = new EscapeScanner((x) => got.push(x));
  for (const c of chunks) s.feed(c);
  return got;
}

/** Every way of cutting `text` in two (and in single characters): the same signals each time. */
function everySplit(text: string): TerminalSignal[] {
  const whole = scan([text]);
  for (let i = 1; i < text.length; i++) {
    assert.deepStrictEqual(scan([text.slice(0, i), text.slice(i)]), whole, `split at ${i}: ${JSON.stringify(text)}`);
  }
  assert.deepStrictEqual(scan([...text]), whole, `one character at a time: ${JSON.stringify(text)}`);
  return whole;
}

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

  it('a BEL inside a DCS, SOS, PM or APC does not end it, and the BEL that ends an OSC without text is not a bell', () => {
    // What xterm.js (VS Code's terminal) does: these strings end only with ST (or ESC, CAN, SUB, a C1 control).
    assert.deepStrictEqual(everySplit(`${ESC}_Gi=1;${BEL}more${BEL}${ST}`), [], 'APC');
    assert.deepStrictEqual(everySplit(`${ESC}Pq#0${BEL}x${BEL}${ST}`), [], 'DCS');
    assert.deepStrictEqual(everySplit(`${ESC}^pm${BEL}${BEL}${ST}${ESC}Xsos${BEL}${BEL}${ST}`), [], 'PM, SOS');
    assert.deepStrictEqual(everySplit(`${ESC}_x${BEL}${ST}${BEL}`), [{ kind: 'bell' }], 'after its ST a BEL rings');
    assert.deepStrictEqual(everySplit(`${ESC}]104${BEL}${ESC}]112${BEL}${ESC}]${BEL}`), [], "colour resets (tput oc, an editor's exit)");
  });

  it('CAN and SUB abort a sequence; 8-bit C1 controls, and characters beyond ASCII inside a sequence, as in xterm.js', () => {
    assert.deepStrictEqual(everySplit(`${ESC}]0;title\x18${BEL}`), [{ kind: 'bell' }], 'CAN aborts the title: the BEL after it rings');
    assert.deepStrictEqual(everySplit(`${ESC}]9;half\x1a${ESC}]0;t${BEL}`), [], 'an OSC 9 SUB aborted is no notification');
    assert.deepStrictEqual(everySplit(`\x9d0;title${BEL}`), [], 'an OSC begun by the C1 control, ended by BEL');
    assert.deepStrictEqual(everySplit(`\x9d9;Build done\x9c`), [{ kind: 'osc9', title: '', body: 'Build done' }]);
    assert.deepStrictEqual(everySplit(`${ESC}]0;title\x9cafter${BEL}`), [{ kind: 'bell' }], 'the C1 ST ends a title');
    assert.deepStrictEqual(everySplit(`\x9fapc${BEL}\x9c\x90qdcs${BEL}\x9c\x98${BEL}\x9c\x9e${BEL}\x9c`), [], 'C1 APC, DCS, SOS, PM');
    assert.deepStrictEqual(
      everySplit(`${ESC}]9;one\x9d9;two${BEL}`),
      [{ kind: 'osc9', title: '', body: 'two' }],
      'another C1 aborts an OSC',
    );
    assert.deepStrictEqual(everySplit(`${ESC}_ü${BEL}`), [{ kind: 'bell' }], 'a character beyond ASCII ends an APC (a parse error)');
    assert.deepStrictEqual(everySplit(`${ESC}Pqü${BEL}${ST}`), [], "but is a DCS's data once its header is done");
    assert.deepStrictEqual(everySplit(`${ESC}ü]9;x${BEL}`), [{ kind: 'bell' }], 'and ends an escape sequence');
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

  it('reads words beyond ASCII whole, and drops the C0 controls the terminal drops from an OSC', () => {
    assert.deepStrictEqual(everySplit(`${ESC}]9;Prêt ✓ 日本\x01!${BEL}`), [{ kind: 'osc9', title: '', body: 'Prêt ✓ 日本!' }]);
    assert.deepStrictEqual(everySplit(`é${ESC}]0;✳ Claude Code${BEL}ü${BEL}`), [{ kind: 'bell' }]);
  });

  it('a bell storm is one signal per chunk, and a long OSC text is cut, not kept whole', () => {
    assert.deepStrictEqual(scan([BEL.repeat(100_000)]), [{ kind: 'bell' }]);
    assert.deepStrictEqual(scan([`a${BEL}b`, `${BEL}c`]), [{ kind: 'bell' }, { kind: 'bell' }]);
    const [long] = scan([`${ESC}]9;${'x'.repeat(100_000)}${BEL}`]);
    assert.strictEqual(long.kind === 'osc9' && long.body.length, 4096);
    const part = (n: number) => `${ESC}]99;i=1:d=0;${String(n % 10).repeat(4000)}${ST}`;
    const [kitty] = scan([...Array.from({ length: 100 }, (_, n) => part(n)), `${ESC}]99;i=1:p=body;done${ST}`]);
    assert.ok(kitty.kind === 'osc99' && kitty.title.length <= 4096, "kitty's parts are kept up to the same bound");
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

/** The terminal of a VS Code host: its own xterm.js, headless (the same parser as the one on the screen). */
interface HeadlessTerminal {
  onBell(listener: () => void): void;
  parser: { registerOscHandler(id: number, handler: (data: string) => boolean): void };
  write(data: string, done: () => void): void;
  dispose(): void;
}
type HeadlessModule = { Terminal: new (options: { allowProposedApi: boolean; logLevel: 'off' }) => HeadlessTerminal };

/** A terminal of a VS Code host, and what it showed of the text last written to it. */
function hostTerminal(Terminal: HeadlessModule['Terminal']): (text: string) => Promise<string> {
  const t = new Terminal({ allowProposedApi: true, logLevel: 'off' });
  let bell = false;
  let notes: string[] = [];
  t.onBell(() => (bell = true));
  t.parser.registerOscHandler(9, (d) => (!/^\d+(;|$)/.test(d) && notes.push(`osc9:|${d}`), true));
  t.parser.registerOscHandler(777, (d) => {
    const [what, title = '', ...body] = d.split(';');
    if (what === 'notify') notes.push(`osc777:${title}|${body.join(';')}`);
    return true;
  });
  // Each text from a terminal just reset (CAN aborts what the last left open, ESC c resets): whether it rang, and
  // the notifications with words.
  return (text) => {
    bell = false;
    notes = [];
    return new Promise((resolve) =>
      t.write(`\x18${ESC}c${text}`, () => resolve(JSON.stringify({ bell, notes: notes.filter((n) => !n.endsWith('|')) }))),
    );
  };
}

/** What the scanner says of `chunks`, in the same words. */
function scannedAs(chunks: string[]): string {
  const got = scan(chunks);
  const notes = got.flatMap((x) => (x.kind === 'bell' ? [] : [`${x.kind}:${x.title}|${x.body}`])).filter((n) => !n.endsWith('|'));
  return JSON.stringify({ bell: got.some((x) => x.kind === 'bell'), notes });
}

describe("terminal notification sequences as VS Code's own terminal reads them", function () {
  this.timeout(60_000);
  // Pieces of sequences an agent's output (or a file it prints) may hold, put together at random.
  const PIECES = [ESC, `${ESC}]`, `${ESC}]9;`, `${ESC}]777;notify;T;`, `${ESC}]0;`, `${ESC}]104`, ST, BEL, `${ESC}P`, `${ESC}Pq`];
  PIECES.push(`${ESC}_`, `${ESC}^`, `${ESC}X`, `${ESC}[`, `${ESC}(`, '31', ';', ':', 'm', 'a', 'b ', '\x18', '\x1a', '\x9c', '\x9d');
  PIECES.push('\x9d9;', '\x90', '\x9f', '\x9b', '\x85', '✳', 'ü', '😀', '4;', '9', '\r\n', '\x01', '\x7f');

  for (const host of agentHosts()) {
    it(`says where a bell rings and which notifications show as ${host.label} does, on random streams cut anywhere`, async function () {
      requireEnvironment(
        this,
        fs.existsSync(host.headless),
        `${host.label}'s terminal (@xterm/headless), installed by scripts/host/install.sh`,
      );
      /* eslint-disable-next-line @typescript-eslint/no-require-imports -- the host's own module, found at run time */
      const shownBy = hostTerminal((require(host.headless) as HeadlessModule).Terminal);
      let seed = 24;
      const random = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
      const differ: string[] = [];
      for (let k = 0; k < 1500; k++) {
        const text = Array.from({ length: 1 + random(16) }, () => PIECES[random(PIECES.length)]).join('');
        const cut = random(text.length + 1);
        const ours = scannedAs([text.slice(0, cut), text.slice(cut)]);
        const theirs = await shownBy(text);
        if (ours !== theirs && differ.length < 5) differ.push(`${JSON.stringify(text)} cut at ${cut}: ${ours}, the terminal: ${theirs}`);
      }
      assert.deepStrictEqual(differ, []);
    });
  }
});

/** The VS Code hosts installed here (scripts/host/install.sh installs them; CI always has them), and their xterm.js. */
/** Every VS Code of scripts/host/hosts.json, and where its terminal's module is once installed. */
function agentHosts(): { label: string; headless: string }[] {
  /* eslint-disable-next-line @typescript-eslint/no-require-imports -- shared with the host scripts */
  const hosts = require(path.join(REPO, 'scripts', 'host', 'hosts.js')).allHosts() as { label: string; dir: string }[];
  return hosts.map((h) => ({ label: h.label, headless: path.join(h.dir, 'lib', 'vscode', 'node_modules', '@xterm', 'headless') }));
}
