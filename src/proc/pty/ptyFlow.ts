/**
 * Flow control towards a terminal that acknowledges nothing. A VS Code extension terminal (Pseudoterminal) has no
 * acknowledgement: whatever it is given is queued in the extension host and the workbench until the terminal
 * has parsed it, so an agent that writes faster than the terminal parses would grow both without bound.
 *
 * The terminal itself can say how far it got: after every `ackEvery` characters a status query (DSR 5,
 * `ESC [ 5 n`) goes into the output, at a point where no escape sequence of the agent's is open; the terminal
 * answers `ESC [ 0 n` through the input once it has parsed everything before it. While more than `highWater`
 * characters are unanswered the source is paused (a paused pseudo-terminal blocks the agent's writes, as in
 * any terminal), and resumed at `lowWater`. Answers to our queries are taken out of the input; the agent's own
 * status queries (rare) are counted in order, and their answers reach the agent.
 * A query unanswered after `ackTimeoutMs` counts as answered, so a terminal that does not answer slows the
 * agent down to `highWater` characters per timeout but never stops it.
 */

import { EscapeScanner } from './escapeScanner';

export const STATUS_QUERY = '\x1b[5n';
export const STATUS_OK = '\x1b[0n';

export interface FlowSink {
  /** Passes output on to the terminal. */
  write(text: string): void;
  /** Stops and restarts the source (the agent's output). */
  pause(): void;
  resume(): void;
}

export interface FlowOptions {
  ackEvery?: number;
  highWater?: number;
  lowWater?: number;
  ackTimeoutMs?: number;
}

interface Query {
  ours: boolean;
  /** Characters written before it (ours only). */
  upTo: number;
  sentAt: number;
}

/** How the flow went, for the log, tests and the benchmark. */
export interface FlowStats {
  written: number;
  acked: number;
  queries: number;
  answers: number;
  timeouts: number;
  pauses: number;
  /** Most characters ever unanswered at once. */
  maxInFlight: number;
  /** How long the terminal took to answer our queries: total and longest, ms. */
  answerMsTotal: number;
  answerMsMax: number;
}

export class TerminalFlow {
  private readonly ackEvery: number;
  private readonly highWater: number;
  private readonly lowWater: number;
  private readonly ackTimeoutMs: number;
  private readonly escapes = new EscapeScanner();
  private readonly queue: Query[] = [];
  private written = 0;
  private acked = 0;
  private lastQueryAt = 0;
  private paused = false;
  private tail = '';
  private timer: NodeJS.Timeout | undefined;
  private disposed = false;
  readonly stats: FlowStats = {
    written: 0,
    acked: 0,
    queries: 0,
    answers: 0,
    timeouts: 0,
    pauses: 0,
    maxInFlight: 0,
    answerMsTotal: 0,
    answerMsMax: 0,
  };

  constructor(
    private readonly sink: FlowSink,
    options: FlowOptions = {},
  ) {
    // A window of 4M characters (a few MB of strings): the workbench's answers take a second or more here while
    // it parses a backlog at ~10 MB/s, and a smaller window only idled the terminal (bench/terminal.ts).
    this.ackEvery = options.ackEvery ?? 256 * 1024;
    this.highWater = options.highWater ?? 4 * 1024 * 1024;
    this.lowWater = options.lowWater ?? 2 * 1024 * 1024;
    this.ackTimeoutMs = options.ackTimeoutMs ?? 5000;
  }

  /** Output from the source, on its way to the terminal. */
  write(text: string): void {
    if (this.disposed) return;
    this.countAgentQueries(text);
    this.escapes.feed(text);
    this.sink.write(text);
    this.written += text.length;
    this.stats.written = this.written;
    if (this.written - this.lastQueryAt >= this.ackEvery && this.escapes.atGround) this.query();
    const inFlight = this.written - this.acked;
    if (inFlight > this.stats.maxInFlight) this.stats.maxInFlight = inFlight;
    // Without a query of ours out, no answer would ever resume the source.
    if (!this.paused && inFlight > this.highWater && this.queue.some((q) => q.ours)) {
      this.paused = true;
      this.stats.pauses++;
      this.sink.pause();
    }
  }

  /** Input from the terminal, on its way to the agent: returns it without the answers to our queries. */
  input(data: string): string {
    if (this.queue.length === 0 || !data.includes(STATUS_OK)) return data;
    let out = '';
    let from = 0;
    for (let at = data.indexOf(STATUS_OK); at >= 0; at = data.indexOf(STATUS_OK, from)) {
      const q = this.queue.shift();
      if (q?.ours) {
        out += data.slice(from, at);
        this.stats.answers++;
        const took = Date.now() - q.sentAt;
        this.stats.answerMsTotal += took;
        if (took > this.stats.answerMsMax) this.stats.answerMsMax = took;
        if (q.upTo > this.acked) this.acked = q.upTo;
      } else {
        out += data.slice(from, at + STATUS_OK.length);
      }
      from = at + STATUS_OK.length;
      if (this.queue.length === 0) break;
    }
    out += data.slice(from);
    this.stats.acked = this.acked;
    this.rearm();
    this.maybeResume();
    return out;
  }

  /**
   * The source has ended: one last query, so the terminal acknowledges everything (`stats.acked` reaches
   * `stats.written`), and answers still on their way keep being taken out of the input.
   */
  end(): void {
    if (this.disposed) return;
    if (this.written > this.lastQueryAt) this.query();
    if (this.paused) {
      this.paused = false;
      this.sink.resume();
    }
  }

  /** Stops flow control, resuming the source if it was paused. */
  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.paused) {
      this.paused = false;
      this.sink.resume();
    }
  }

  private query(): void {
    this.sink.write(STATUS_QUERY);
    this.queue.push({ ours: true, upTo: this.written, sentAt: Date.now() });
    // A terminal that never answers must not make the queue grow without end.
    if (this.queue.length > 256)
      this.queue.splice(
        this.queue.findIndex((q) => q.ours),
        1,
      );
    this.lastQueryAt = this.written;
    this.stats.queries++;
    if (!this.timer) this.arm();
  }

  private arm(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.disposed) return;
      // Unanswered: count everything written so far as answered; late answers are still taken out of the input.
      this.stats.timeouts++;
      this.acked = this.written;
      this.stats.acked = this.acked;
      this.maybeResume();
    }, this.ackTimeoutMs);
    this.timer.unref?.();
  }

  private rearm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.acked < this.written && this.queue.some((q) => q.ours)) this.arm();
  }

  private maybeResume(): void {
    if (this.paused && this.written - this.acked <= this.lowWater) {
      this.paused = false;
      this.sink.resume();
    }
  }

  /** The agent's own status queries, in order with ours (a query split across two writes is found too). */
  private countAgentQueries(text: string): void {
    const joined = this.tail + text;
    for (let at = joined.indexOf(STATUS_QUERY); at >= 0; at = joined.indexOf(STATUS_QUERY, at + STATUS_QUERY.length)) {
      if (at + STATUS_QUERY.length > this.tail.length) this.queue.push({ ours: false, upTo: 0, sentAt: 0 });
    }
    this.tail = joined.slice(-(STATUS_QUERY.length - 1));
  }
}
