/**
 * A terminal's output read as a stream of escape sequences, one chunk after another, split anywhere: whether a
 * sequence is open now (flow control puts its queries only between sequences, ptyFlow.ts), and, when a listener
 * asks for them, the notifications a program asks its terminal to show:
 *   - OSC 9 (`ESC ] 9 ; text ST`, iTerm2's), except ConEmu's `OSC 9 ; <number> ; ...` commands (9;4 is a
 *     progress bar, which agents write while they work);
 *   - OSC 777 `notify` (`ESC ] 777 ; notify ; title ; body ST`, urxvt's);
 *   - OSC 99 (kitty's: `ESC ] 99 ; metadata ; payload ST`, a title and a body, possibly in several parts, possibly
 *     base64), titles and bodies only (`p=?` is a question about the terminal, not a notification);
 *   - a bell (BEL) that the terminal rings.
 * Where a BEL rings is what xterm.js (VS Code's terminal) says: a BEL ends an OSC (a window title:
 * `ESC ] 0 ; title BEL`) and is no bell; inside a DCS, SOS, PM or APC it is part of the string, which only ST
 * (`ESC \`), another ESC, CAN, SUB or a C1 control ends (and a character beyond ASCII, outside a DCS's data);
 * inside a CSI or after a lone ESC it rings. CAN and SUB abort any sequence (an OSC aborted is not shown); the 8-bit
 * C1 controls (U+0080-U+009F: OSC, DCS, SOS, PM, APC, CSI, ST) act as their ESC forms.
 * Without a listener (the flow control) only sequences begun by ESC are tracked.
 *
 * Text between string sequences (most of the output, its CSIs included) is searched with `indexOf` and one regular
 * expression, never walked character by character, and each string's end is found with one search: the work is
 * linear in the output, however many strings a chunk holds.
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
  /** The rest of any other OSC, skipped up to its end. */
  OscSkip,
  /** A DCS's header (parameters, intermediates), up to its final byte. */
  DcsHeader,
  /** A DCS's data, after its header. */
  DcsData,
  /** An SOS, PM or APC, or a DCS whose header is malformed: skipped up to its end. */
  StringSkip,
}

const ESC = 0x1b;
const BEL = 0x07;
const CAN = 0x18;
const SUB = 0x1a;
/** ST as a C1 control. */
const C1_ST = 0x9c;
/** An OSC's text is kept up to this many characters: a notification is a line, not a document. */
const MAX_PAYLOAD = 4096;
/* eslint-disable no-control-regex -- control characters are what these look for */
/** What starts a string sequence with ESC: OSC, DCS, SOS, PM, APC. */
const STRING_START = /\x1b[\]PX^_]/g;
/** What ends an OSC: BEL, ESC, CAN, SUB, a C1 control (ST, or one that aborts it). */
const OSC_END = /[\x07\x18\x1a\x1b\x80-\x9f]/g;
/** What ends a DCS's data: as an OSC, but a BEL is data. */
const DCS_DATA_END = /[\x18\x1a\x1b\x80-\x9f]/g;
/** What ends an SOS, PM or APC: as a DCS's data, and a character beyond ASCII (a parse error: back to ground). */
const STRING_END = /[\x18\x1a\x1b\x80-\uffff]/g;
/** The C0 controls the terminal drops from an OSC's text (those that end it are not in it). */
const C0_IN_TEXT = /[\x00-\x1f]/g;
/* eslint-enable no-control-regex */
/** The C1 controls that start a string: DCS, SOS, OSC, PM, APC. */
const C1_STRING_STARTS = ['\x90', '\x98', '\x9d', '\x9e', '\x9f'];
/** kitty notifications still waiting for their last part (`d=0`), at most. */
const MAX_PENDING = 8;

/** Where the next C1 control that starts a string is, at or after `i`, or -1 (plain text has none: one search each). */
function nextC1StringStart(text: string, i: number): number {
  let at = -1;
  for (const c of C1_STRING_STARTS) {
    const p = text.indexOf(c, i);
    if (p >= 0 && (at < 0 || p < at)) at = p;
  }
  return at;
}

/** Where the next string sequence begun by ESC (`]` `P` `X` `^` `_`) starts, at or after `i`, or -1. */
function nextEscStringStart(text: string, i: number): number {
  // indexOf finds an ESC much faster than the expression: plain text has none, and is done with at once.
  const esc = text.indexOf('\x1b', i);
  if (esc < 0) return -1;
  STRING_START.lastIndex = esc;
  return STRING_START.exec(text)?.index ?? -1;
}

export class EscapeScanner {
  private state = State.Ground;
  private oscNumber = 0;
  private oscDigits = 0;
  /** In a DCS's header: whether parameters (1) or intermediates (2) began. */
  private dcsPart = 0;
  private payload = '';
  private readonly pending = new Map<string, { title: string; body: string }>();

  /** Without a listener, only whether a sequence is open is tracked (only the text after the last ESC matters then). */
  constructor(private readonly listener?: (signal: TerminalSignal) => void) {}

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
    while (i < text.length) {
      if (this.state === State.Ground) {
        const last = text.lastIndexOf('\x1b');
        if (last < i) return;
        i = last;
      }
      i = this.inString() ? this.skipString(text, i) : this.step(text, i);
    }
  }

  /**
   * The bells and notifications in `text`. Only string sequences and BELs can be one, and `ESC ]` (or `ESC P`,
   * `ESC X`, `ESC ^`, `ESC _`, or their C1 forms) starts a string whatever came before it, so the text between
   * strings is searched for the next string or BEL, never walked; CSIs there (a third to a half of an agent's
   * screen) are skipped whole. A BEL between strings, even one inside a CSI, rings, as in a VT parser.
   */
  private scan(text: string): void {
    let i = 0;
    let rang = false;
    // The next string begun by ESC, begun by a C1 control, and BEL at or after i (-1: none left; -2: not looked for).
    let escStart = -2;
    let c1Start = -2;
    let bel = -2;
    while (i < text.length) {
      if (this.inString()) {
        i = this.skipString(text, i);
        continue;
      }
      if (this.state === State.Escape || this.state === State.OscNumber || this.state === State.DcsHeader) {
        if (this.state === State.Escape && text.charCodeAt(i) === BEL) rang = true;
        i = this.step(text, i); // right after an ESC, an OSC's number, a DCS's header: a few characters
        continue;
      }
      if (escStart !== -1 && escStart < i) escStart = nextEscStringStart(text, i);
      if (c1Start !== -1 && c1Start < i) c1Start = nextC1StringStart(text, i);
      if (bel !== -1 && bel < i) bel = text.indexOf('\x07', i);
      const start = escStart < 0 || (c1Start >= 0 && c1Start < escStart) ? c1Start : escStart;
      if (bel >= 0 && (start < 0 || bel < start)) rang = true; // one signal per chunk at most
      if (start < 0) {
        // No string starts in the rest: only the state it leaves matters, which the text after its last ESC sets.
        this.track(text.slice(i));
        break;
      }
      const c = text.charCodeAt(start);
      if (c === ESC) this.state = State.Escape;
      else this.c1(c);
      i = start + 1;
    }
    if (rang) this.listener!({ kind: 'bell' });
  }

  private inString(): boolean {
    const s = this.state;
    return s === State.OscPayload || s === State.OscSkip || s === State.DcsData || s === State.StringSkip;
  }

  /** One character of an escape sequence (not in a string's text); returns the next index. */
  private step(text: string, i: number): number {
    const c = text.charCodeAt(i);
    if (c === CAN || c === SUB) this.state = State.Ground;
    else if (c >= 0x80 && c <= 0x9f) this.c1(c);
    else if (c >= 0xa0 && this.state !== State.OscNumber)
      this.state = State.Ground; // a parse error in xterm.js
    else if (c === ESC) this.state = State.Escape;
    else {
      switch (this.state) {
        case State.Escape:
          this.afterEscape(c);
          break;
        case State.Intermediate:
          if (c >= 0x30 && c <= 0x7e) this.state = State.Ground;
          break;
        case State.Csi:
          if (c >= 0x40 && c <= 0x7e) this.state = State.Ground;
          break;
        case State.OscNumber:
          this.oscNumberChar(c);
          break;
        case State.DcsHeader:
          this.dcsHeaderChar(c);
          break;
      }
    }
    return i + 1;
  }

  /** A C1 control, as its ESC form (or, for the others, back to ground), from any state. */
  private c1(c: number): void {
    if (c === 0x9d) this.startOsc();
    else if (c === 0x90) this.startDcs();
    else if (c === 0x98 || c === 0x9e || c === 0x9f) this.state = State.StringSkip;
    else if (c === 0x9b) this.state = State.Csi;
    else this.state = State.Ground;
  }

  private startOsc(): void {
    this.state = State.OscNumber;
    this.oscNumber = 0;
    this.oscDigits = 0;
  }

  private startDcs(): void {
    this.state = State.DcsHeader;
    this.dcsPart = 0;
  }

  private afterEscape(c: number): void {
    if (c === 0x5b)
      this.state = State.Csi; // [
    else if (c === 0x5d)
      this.startOsc(); // ]
    else if (c === 0x50)
      this.startDcs(); // P
    else if (c === 0x58 || c === 0x5e || c === 0x5f)
      this.state = State.StringSkip; // X ^ _
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
    else if (c >= 0x20) this.state = State.OscSkip; // C0 controls are dropped from an OSC
  }

  /** A DCS's header, as xterm.js reads it: parameters, then intermediates, then the final byte that starts its data. */
  private dcsHeaderChar(c: number): void {
    if (c >= 0x40 && c <= 0x7e) this.state = State.DcsData;
    else if (c >= 0x20 && c <= 0x2f) this.dcsPart = 2;
    else if (c === 0x3a || (c >= 0x30 && c <= 0x3f && (this.dcsPart === 2 || (this.dcsPart === 1 && c >= 0x3c))))
      this.state = State.StringSkip; // a malformed header: the DCS is ignored up to its end
    else if (c >= 0x30 && c <= 0x3f) this.dcsPart = 1;
  }

  /** A string's text from `i`, up to its end (the payload kept, for a notification's OSC). Returns the next index. */
  private skipString(text: string, i: number): number {
    const osc = this.state === State.OscPayload || this.state === State.OscSkip;
    const ends = osc ? OSC_END : this.state === State.DcsData ? DCS_DATA_END : STRING_END;
    ends.lastIndex = i;
    const end = ends.exec(text)?.index ?? -1;
    if (this.state === State.OscPayload) this.keep(text, i, end < 0 ? text.length : end);
    if (end < 0) return text.length;
    const c = text.charCodeAt(end);
    if (this.state === State.OscPayload) this.oscEnded(c === BEL || c === ESC || c === C1_ST);
    if (c === ESC) this.state = State.Escape;
    else if (c >= 0x80 && c <= 0x9f) this.c1(c);
    else this.state = State.Ground; // BEL (an OSC), CAN, SUB, or beyond ASCII
    return end + 1;
  }

  private keep(text: string, from: number, to: number): void {
    const room = MAX_PAYLOAD - this.payload.length;
    if (room > 0) this.payload += text.slice(from, Math.min(to, from + room));
  }

  /** A notification's OSC ended (`shown`), or was aborted: tell the listener if it is shown and is one. */
  private oscEnded(shown: boolean): void {
    const text = this.payload.replace(C0_IN_TEXT, '');
    this.payload = '';
    if (!shown) return;
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
    // Its parts are kept up to the bound of one OSC's text: a stream of parts never finished is not memory's.
    note[part] = (note[part] + payload).slice(0, MAX_PAYLOAD);
    this.pending.delete(id);
    if (meta.get('d') === '0') {
      if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value as string);
      this.pending.set(id, note);
      return;
    }
    this.listener!({ kind: 'osc99', title: note.title, body: note.body });
  }
}
