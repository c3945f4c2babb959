/**
 * What a terminal's input holds besides keys: the terminal's own reports, which it writes into the input by
 * itself, and which say nothing about a person at the keyboard. Answers to a program's questions (cursor position
 * `CSI r;c R`, device attributes `CSI ? ... c`, status `CSI n`, modes `CSI ? ... $ y`, window size `CSI ... t`,
 * kitty's keyboard flags `CSI ? flags u`, colours and anything else as OSC, DCS or APC), focus in and out
 * (`CSI I`, `CSI O`, where the program asked for them) and mouse reports (a program asking for mouse tracking
 * gets one for every move over the terminal). Everything else is typed: characters, Ctrl and Alt keys, arrows and
 * function keys, a paste.
 *
 * Where a report and a key look alike (`CSI 1;2 R` is both "the cursor is at 1,2" and xterm's Shift+F3), it counts
 * as a report: a key missed leaves a wait shown until the next key, a report taken for a key would end a wait
 * nobody answered.
 */

export interface InputEffect {
  /** Something in it was typed (or pasted). */
  typed: boolean;
  /** The last focus report in it: the terminal got (true) or lost (false) the keyboard focus. */
  focus?: boolean;
}

const ESC = 0x1b;

/** What a chunk of terminal input is: typed, focus, or only reports. */
export function inputEffect(data: string): InputEffect {
  const effect: InputEffect = { typed: false };
  let i = 0;
  while (i < data.length) {
    if (data.charCodeAt(i) !== ESC) {
      effect.typed = true;
      return effect;
    }
    const report = reportAt(data, i);
    if (!report) {
      effect.typed = true;
      return effect;
    }
    if (report.focus !== undefined) effect.focus = report.focus;
    i = report.end;
  }
  return effect;
}

/** The report that starts at `i` (an ESC): where it ends, and what focus it tells. Undefined for a key. */
function reportAt(s: string, i: number): { end: number; focus?: boolean } | undefined {
  const next = s[i + 1];
  // OSC, DCS, APC, PM, SOS: no key is one. Up to BEL or ST (or the end of the chunk).
  if (next === ']' || next === 'P' || next === '_' || next === '^' || next === 'X') {
    for (let j = i + 2; j < s.length; j++) {
      const c = s.charCodeAt(j);
      if (c === 0x07) return { end: j + 1 };
      if (c === ESC) return { end: s[j + 1] === '\\' ? j + 2 : j };
    }
    return { end: s.length };
  }
  if (next !== '[') return undefined;
  return csiReport(s, i);
}

/** A CSI in the input: a report (where it ends) or a key (undefined). */
function csiReport(s: string, i: number): { end: number; focus?: boolean } | undefined {
  let j = i + 2;
  const prefix = '<=>?'.includes(s[j] ?? '') ? s[j++] : '';
  const paramsFrom = j;
  while (j < s.length && /[0-9;:]/.test(s[j])) j++;
  const params = s.slice(paramsFrom, j);
  let intermediates = '';
  while (j < s.length && s.charCodeAt(j) >= 0x20 && s.charCodeAt(j) <= 0x2f) intermediates += s[j++];
  if (j >= s.length) return undefined;
  const final = s[j];
  const end = j + 1;
  if ((final === 'I' || final === 'O') && !prefix && !params && !intermediates) return { end, focus: final === 'I' };
  if (final === 'M' && !prefix && !params && !intermediates) return { end: Math.min(end + 3, s.length) }; // X10 mouse: 3 bytes follow
  if (prefix === '<' && (final === 'M' || final === 'm')) return { end }; // SGR mouse
  if (final === 'M' && !prefix && /^\d+;\d+;\d+$/.test(params)) return { end }; // urxvt mouse
  if (final === 'R' || final === 'n' || final === 't') return { end };
  if (final === 'c' && prefix && prefix !== '<') return { end };
  if (final === 'u' && prefix === '?') return { end };
  if (final === 'y' && intermediates === '$') return { end };
  return undefined;
}
