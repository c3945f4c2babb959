/**
 * A terminal's output read as a stream of escape sequences, one chunk after another, split anywhere: whether a
 * sequence is open now (flow control puts its queries only between sequences, ptyFlow.ts), and, when a listener
 * asks for them, the notifications a program asks its terminal to show:
 *   - OSC 9 (`ESC ] 9 ; text ST`, iTerm2's), except ConEmu's `OSC 9 ; <number> ; ...` commands (9;4 is a
 *     progress bar, which agents write while they work);
 *   - OSC 777 `notify` (`ESC ] 777 ; notify ; title ; body ST`, urxvt's);
 *   - OSC 99 (kitty's: `ESC ] 99 ; metadata ; payload ST`, a title and a body, possibly in several parts, possibly
 *     base64), titles and bodies only (`p=?` is a question about the terminal, not a notification);
 *   - a bell (BEL) outside any string sequence. A BEL that ends an OSC (a window title: `ESC ] 0 ; title BEL`) or
 *     any other string (DCS, APC, ...) is a terminator, not a bell. Inside a CSI or after a lone ESC a VT parser
 *     executes it, so it rings there too.
 * ST is `ESC \`; as in xterm.js, any ESC ends an OSC (the OSC counts), and so does BEL.
 *
 * Text between string sequences (most of the output, its CSIs included) is searched with `indexOf` and one regular
 * expression, never walked character by character. A chunk may be a string of UTF-16 code units or, from a relay that reads bytes, a string of bytes
 * decoded as latin1 (`bytes: true`): escape sequences are ASCII either way, and payloads are decoded as UTF-8.
 */

export type TerminalSignal = { kind: 'bell' } | { kind: 'osc9' | 'osc777' | 'osc99'; title: string; body: string };

const enum State {
  Ground,
  Escape,
  Intermediate,
  Csi,
  /** After `ESC ]`: the OSC's number, digit by digit. */
  OscNumber,
  /** The text of an OSC that may be a notification (9, 777, 99), kept. */
  OscPayload,
  /** The rest of any other string sequence (OSC, DCS, SOS, PM, APC), skipped up to its end. */
  StringSkip,
}

const ESC = 0x1b;
const BEL = 0x07;
/** An OSC's text is kept up to this many characters: a notification is a line, not a document. */
const MAX_PAYLOAD = 4096;
/** What starts a string sequence: OSC, DCS, SOS, PM, APC. */
// eslint-disable-next-line no-control-regex -- ESC is what it looks for
const STRING_START = /\x1b[\]PX^_]/g;
/** kitty notifications still waiting for their last part (`d=0`), at most. */
const MAX_PENDING = 8;

export interface ScannerOptions {
  /** The chunks are bytes decoded as latin1: payloads are decoded again as UTF-8. */
  bytes?: boolean;
}

export class EscapeScanner {
  private state = State.Ground;
  private oscNumber = 0;
  private oscDigits = 0;
  private payload = '';
  private readonly pending = new Map<string, { title: string; body: string }>();

  /** Without a listener, only whether a sequence is open is tracked (only the text after the last ESC matters then). */
  constructor(
    private readonly listener?: (signal: TerminalSignal) => void,
    private readonly options: ScannerOptions = {},
  ) {}

  /** Whether no escape sequence is open. */
  get atGround(): boolean {
    return this.state === State.Ground;
  }

  feed(text: string): void {
    if (this.listener) this.scan(text);
    else this.track(text);
  }

  /** The state after `text`: any ESC starts a new sequence, aborting an open one, so the text before the last ESC is skipped. */
  private track(text: string): void {
    let i = 0;
    if (this.state === State.Ground) {
      const last = text.lastIndexOf('\x1b');
      if (last < 0) return;
      i = last;
    }
    while (i < text.length) {
      if (this.state === State.Ground) {
        const last = text.lastIndexOf('\x1b');
        if (last < i) return;
        i = last;
      }
      i = this.stringState() ? this.skipString(text, i, -2) : this.step(text, i);
    }
  }

  /**
   * The bells and notifications in `text`. Only string sequences and BELs can be one, and `ESC ]` (or `ESC P`,
   * `ESC X`, `ESC ^`, `ESC _`) starts a string whatever came before it (any ESC ends what was open), so the text
   * between strings is searched for the next string or BEL, never walked; CSIs there (a third to a half of an
   * agent's screen) are skipped whole. A BEL between strings, even one inside a CSI, rings, as in a VT parser.
   */
  private scan(text: string): void {
    let i = 0;
    let rang = false;
    // The next string start and the next BEL at or after i (-1: none left; -2: not looked for yet).
    let start = -2;
    let bel = -2;
    while (i < text.length) {
      if (this.stringState()) {
        i = this.skipString(text, i, -2);
        continue;
      }
      if (this.state !== State.Ground && this.state !== State.Csi && this.state !== State.Intermediate) {
        if (text.charCodeAt(i) === BEL) rang = true;
        i = this.step(text, i); // right after an ESC, or an OSC's number: a few characters
        continue;
      }
      if (start !== -1 && start < i) {
        // indexOf finds an ESC much faster than the expression: plain text has none, and is done with at once.
        const esc = text.indexOf('\x1b', i);
        STRING_START.lastIndex = esc;
        start = esc < 0 ? -1 : (STRING_START.exec(text)?.index ?? -1);
      }
      if (bel !== -1 && bel < i) bel = text.indexOf('\x07', i);
      if (bel >= 0 && (start < 0 || bel < start)) rang = true; // one signal per chunk at most
      if (start < 0) {
        // No string starts in the rest: only the state it leaves matters, which the text after its last ESC sets.
        this.track(text.slice(i));
        break;
      }
      this.state = State.Escape;
      i = start + 1;
    }
    if (rang) this.listener!({ kind: 'bell' });
  }

  private stringState(): boolean {
    return this.state === State.OscPayload || this.state === State.StringSkip;
  }

  /** One character of an escape sequence (not in a string's text); returns the next index. */
  private step(text: string, i: number): number {
    const c = text.charCodeAt(i);
    switch (this.state) {
      case State.Ground:
        if (c === ESC) this.state = State.Escape;
        break;
      case State.Escape:
        this.afterEscape(c);
        break;
      case State.Intermediate:
        if (c === ESC) this.state = State.Escape;
        else if (c >= 0x30 && c <= 0x7e) this.state = State.Ground;
        break;
      case State.Csi:
        if (c === ESC) this.state = State.Escape;
        else if (c >= 0x40 && c <= 0x7e) this.state = State.Ground;
        break;
      case State.OscNumber:
        this.oscNumberChar(c);
        break;
    }
    return i + 1;
  }

  private afterEscape(c: number): void {
    if (c === 0x5b)
      this.state = State.Csi; // [
    else if (c === 0x5d) {
      // ]
      this.state = State.OscNumber;
      this.oscNumber = 0;
      this.oscDigits = 0;
    } else if (c === 0x50 || c === 0x58 || c === 0x5e || c === 0x5f)
      this.state = State.StringSkip; // P X ^ _
    else if (c === ESC) this.state = State.Escape;
    else if (c >= 0x20 && c <= 0x2f) this.state = State.Intermediate;
    else if (c >= 0x30 && c <= 0x7e) this.state = State.Ground; // ESC \ (ST), ESC 7, ESC c, ...
  }

  private oscNumberChar(c: number): void {
    if (c >= 0x30 && c <= 0x39 && this.oscDigits < 6) {
      this.oscNumber = this.oscNumber * 10 + (c - 0x30);
      this.oscDigits++;
    } else if (
      c === 0x3b &&
      this.oscDigits > 0 &&
      this.listener &&
      (this.oscNumber === 9 || this.oscNumber === 777 || this.oscNumber === 99)
    ) {
      this.state = State.OscPayload; // ;
      this.payload = '';
    } else if (c === BEL) this.state = State.Ground;
    else if (c === ESC) this.state = State.Escape;
    else this.state = State.StringSkip;
  }

  /**
   * A string's text from `i`: up to its BEL or ESC (the payload kept, for a notification's OSC). `bel` is the next
   * BEL at or after `i` if known (-1: none in `text`), -2 when not looked for. Returns the next index.
   */
  private skipString(text: string, i: number, bel: number): number {
    const esc = text.indexOf('\x1b', i);
    if (bel === -2) bel = text.indexOf('\x07', i);
    const end = bel >= 0 && (esc < 0 || bel < esc) ? bel : esc;
    const keep = this.state === State.OscPayload;
    if (end < 0) {
      if (keep) this.keep(text, i, text.length);
      return text.length;
    }
    if (keep) {
      this.keep(text, i, end);
      this.oscEnded();
    }
    this.state = text.charCodeAt(end) === ESC ? State.Escape : State.Ground;
    return end + 1;
  }

  private keep(text: string, from: number, to: number): void {
    const room = MAX_PAYLOAD - this.payload.length;
    if (room > 0) this.payload += text.slice(from, Math.min(to, from + room));
  }

  /** A notification's OSC ended: tell the listener, if it is one. */
  private oscEnded(): void {
    const raw = this.payload;
    this.payload = '';
    const text = this.options.bytes ? Buffer.from(raw, 'latin1').toString('utf8') : raw;
    if (this.oscNumber === 9) {
      // ConEmu's commands (9;1 .. 9;12: progress, sleep, message boxes of its own) are not notifications.
      if (!/^\d+(;|$)/.test(text)) this.listener!({ kind: 'osc9', title: '', body: text });
    } else if (this.oscNumber === 777) {
      const [what, title = '', ...body] = text.split(';');
      if (what === 'notify') this.listener!({ kind: 'osc777', title, body: body.join(';') });
    } else this.kittyPart(text);
  }

  /** OSC 99: `metadata ; payload`, metadata `key=value` pairs joined by `:` (i id, d done, p part, e base64). */
  private kittyPart(text: string): void {
    const at = text.indexOf(';');
    if (at < 0) return;
    const meta = new Map<string, string>();
    for (const pair of text.slice(0, at).split(':')) {
      const eq = pair.indexOf('=');
      if (eq > 0) meta.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const part = meta.get('p') ?? 'title';
    if (part !== 'title' && part !== 'body') return;
    let payload = text.slice(at + 1);
    if (meta.get('e') === '1') payload = Buffer.from(payload, 'base64').toString('utf8');
    const id = meta.get('i') ?? '';
    const note = this.pending.get(id) ?? { title: '', body: '' };
    note[part] += payload;
    this.pending.delete(id);
    if (meta.get('d') === '0') {
      if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value as string);
      this.pending.set(id, note);
      return;
    }
    this.listener!({ kind: 'osc99', title: note.title, body: note.body });
  }
}
