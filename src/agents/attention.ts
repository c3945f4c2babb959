/**
 * An agent's attention state: *working*, *waiting for you* (with its own words where it gives them), or *idle*
 * (its turn is over; the ended states are the run's). Only what the agent says moves it, never a guess:
 *   - the agent's own hook, where its CLI has one and Agent Trees wired it at launch (attentionHooks.ts): a
 *     permission prompt or a question makes it waiting, the end of its turn idle;
 *   - the terminal's own notification sequences (OSC 9, OSC 777 notify, OSC 99, a bell outside any sequence:
 *     EscapeScanner), which make it waiting;
 *   - a key typed into its terminal, which ends a wait or an idle spell: the person answered.
 * New output does not end a wait: the agents redraw while they wait (claude 2.1.332 blinks a dot every 0.6 s at
 * its permission prompt, codex 0.171 its title every second), so output cannot tell an answered prompt from a
 * waiting one. A bell or a notification while it already waits changes nothing (a bell storm is one wait); a hook
 * that confirms a wait the terminal announced gives it the agent's words.
 * Pure logic: the clock and the listener are given.
 */
import { inputEffect, TerminalSignal } from '../proc';

export type AttentionState = 'working' | 'waiting' | 'idle';
export type AttentionSource = 'hook' | 'terminal';

export interface Attention {
  state: AttentionState;
  /** The agent's own words ("Claude needs your permission"), when it gave some. */
  message?: string;
  /** What it asks about, when its hook says (a tool and its command). */
  detail?: string;
  /** When this state began, ms since the epoch. */
  since: number;
  /** What set the state (none for the first *working*, or after a key). */
  source?: AttentionSource;
  /** Waits so far: one more with each new wait, so whoever shows a notification shows one per wait. */
  waits: number;
}

/** What a hook or the terminal says. */
export interface AttentionSignal {
  state: 'waiting' | 'idle';
  source: AttentionSource;
  message?: string;
  detail?: string;
  /** Words for a wait already on, never a wait of its own: after a key ended that wait, they come too late. */
  wordsOnly?: boolean;
}

/** Longest message or detail kept: a notification is a line. */
const MAX_TEXT = 300;

function boundedText(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  // eslint-disable-next-line no-control-regex -- control characters never reach a notification or the view
  const clean = text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  if (!clean) return undefined;
  return clean.length > MAX_TEXT ? `${clean.slice(0, MAX_TEXT - 1)}…` : clean;
}

/** A terminal notification as a signal: waiting, with its text (a bell has none). */
export function terminalSignal(signal: TerminalSignal): AttentionSignal {
  if (signal.kind === 'bell') return { state: 'waiting', source: 'terminal' };
  const [first, second] = signal.body ? [signal.body, signal.title] : [signal.title, undefined];
  return { state: 'waiting', source: 'terminal', message: boundedText(first), detail: boundedText(second) };
}

export class AttentionTracker {
  private now: Attention;
  /** Whether the agent's terminal has the keyboard focus, as its focus reports last said (undefined: unknown). */
  focused: boolean | undefined;

  constructor(
    private readonly onChange: (attention: Attention) => void = () => {},
    private readonly clock: () => number = Date.now,
  ) {
    this.now = { state: 'working', since: clock(), waits: 0 };
  }

  get current(): Attention {
    return this.now;
  }

  /** A hook or the terminal said something. Returns whether the state changed. */
  signal(s: AttentionSignal): boolean {
    const now = this.now;
    if (s.state === 'idle') {
      if (now.state === 'idle') return false;
      return this.set({ state: 'idle', message: boundedText(s.message), since: this.clock(), source: s.source, waits: now.waits });
    }
    if (s.wordsOnly && now.state !== 'waiting') return false;
    if (now.state === 'waiting') {
      // The same wait: only a hook's words where the terminal gave none (a bell, then claude's Notification).
      if (s.source !== 'hook' || now.source === 'hook') return false;
      return this.set({
        ...now,
        source: 'hook',
        message: boundedText(s.message) ?? now.message,
        detail: boundedText(s.detail) ?? now.detail,
      });
    }
    return this.set({
      state: 'waiting',
      message: boundedText(s.message),
      detail: boundedText(s.detail),
      since: this.clock(),
      source: s.source,
      waits: now.waits + 1,
    });
  }

  /**
   * Input on its way to the agent's terminal: a key ends a wait or an idle spell; the terminal's own reports
   * (answers to the agent's questions, mouse moves) do not, and its focus reports say whether it has the focus.
   */
  input(data: string): void {
    const effect = inputEffect(data);
    if (effect.focus !== undefined) this.focused = effect.focus;
    if (effect.typed) this.typed();
  }

  /** A key was typed into the agent's terminal: it is working on the answer. Returns whether the state changed. */
  typed(): boolean {
    if (this.now.state === 'working') return false;
    return this.set({ state: 'working', since: this.clock(), waits: this.now.waits });
  }

  private set(next: Attention): boolean {
    this.now = next;
    this.onChange(next);
    return true;
  }
}
