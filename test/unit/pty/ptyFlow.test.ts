// Flow control towards a terminal that acknowledges nothing (src/proc/ptyFlow.ts): the logic alone, with a sink
// that records what the terminal would get. The real terminal's answers are tested in the real host
// (test/integration/ptyAgents.test.ts).
import * as assert from 'assert';
import { TerminalFlow } from '../../../src/proc';
import { EscapeScanner } from '../../../src/proc/pty/escapeScanner';
import { STATUS_OK, STATUS_QUERY } from '../../../src/proc/pty/ptyFlow';
import { sleep } from '../../support/wait';

class Sink {
  out = '';
  paused = false;
  pauses = 0;
  write(text: string): void {
    this.out += text;
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
  }
}

describe('escape sequences in terminal output', () => {
  const after = (...chunks: string[]) => {
    const t = new EscapeScanner();
    for (const c of chunks) t.feed(c);
    return t.atGround;
  };
  it('knows when no sequence is open, across chunk boundaries', () => {
    assert.strictEqual(after('plain text\r\n'), true);
    assert.strictEqual(after('\x1b[1;3'), false, 'CSI waiting for its final byte');
    assert.strictEqual(after('\x1b[1;3', '1m'), true);
    assert.strictEqual(after('a\x1b'), false);
    assert.strictEqual(after('a\x1b', '[', '?25', 'h'), true);
    assert.strictEqual(after('\x1b]0;title'), false, 'OSC');
    assert.strictEqual(after('\x1b]0;title', ' more', '\x07'), true, 'OSC ended by BEL');
    assert.strictEqual(after('\x1b]8;;http://x\x1b'), false);
    assert.strictEqual(after('\x1b]8;;http://x\x1b', '\\link'), true, 'OSC ended by ST');
    assert.strictEqual(after('\x1bP1$r\x1b\\'), true, 'DCS with ST');
    assert.strictEqual(after('\x1b('), false, 'ESC with an intermediate');
    assert.strictEqual(after('\x1b(', 'B'), true);
    assert.strictEqual(after('\x1b[31mred\x1b[0m plain'), true);
    assert.strictEqual(after('\x1b[3\x1b[0m'), true, 'an ESC aborts the open sequence');
  });
});

describe('flow control towards a terminal', () => {
  it('puts a status query into the output only between escape sequences, every ackEvery characters', () => {
    const sink = new Sink();
    const flow = new TerminalFlow(sink, { ackEvery: 10, highWater: 1000, lowWater: 100 });
    flow.write('0123456789\x1b[3');
    assert.strictEqual(sink.out.includes(STATUS_QUERY), false, 'not inside a CSI');
    flow.write('1m');
    assert.strictEqual(sink.out, `0123456789\x1b[31m${STATUS_QUERY}`);
    flow.write('abc');
    assert.strictEqual(sink.out.split(STATUS_QUERY).length, 2, 'not before another ackEvery characters');
    flow.dispose();
  });

  it('pauses the source above the high water mark and resumes at the low one, as the answers come', () => {
    const sink = new Sink();
    const flow = new TerminalFlow(sink, { ackEvery: 100, highWater: 300, lowWater: 100 });
    for (let i = 0; i < 4; i++) flow.write('x'.repeat(100));
    assert.strictEqual(sink.paused, true, '400 unanswered > 300');
    assert.strictEqual(flow.input(STATUS_OK), '', 'our answer is taken out of the input');
    assert.strictEqual(sink.paused, true, '300 unanswered');
    assert.strictEqual(flow.input(`${STATUS_OK}typed`), 'typed');
    assert.strictEqual(sink.paused, true, '200 unanswered: above the low water mark');
    flow.input(STATUS_OK);
    assert.strictEqual(sink.paused, false, '100 unanswered: resumed');
    assert.strictEqual(sink.pauses, 1);
    assert.strictEqual(flow.stats.maxInFlight, 400);
    flow.dispose();
  });

  it("keeps the agent's own status queries and their answers, in order with ours", () => {
    const sink = new Sink();
    const flow = new TerminalFlow(sink, { ackEvery: 5, highWater: 1000, lowWater: 10 });
    flow.write('hello'); // ours after it
    flow.write(`ab${STATUS_QUERY.slice(0, 2)}`);
    flow.write(`${STATUS_QUERY.slice(2)}cd`); // the agent's, split across two writes; ours after it
    // The terminal answers in order: ours, the agent's, ours.
    assert.strictEqual(flow.input(STATUS_OK + STATUS_OK + STATUS_OK), STATUS_OK);
    assert.strictEqual(flow.stats.acked, flow.stats.written);
    assert.strictEqual(flow.input(STATUS_OK), STATUS_OK, 'with nothing of ours out, input passes as typed');
    flow.dispose();
  });

  it('treats a query unanswered past the timeout as answered, so a silent terminal never stops the agent', async () => {
    const sink = new Sink();
    const flow = new TerminalFlow(sink, { ackEvery: 10, highWater: 20, lowWater: 5, ackTimeoutMs: 50 });
    flow.write('x'.repeat(30));
    assert.strictEqual(sink.paused, true);
    const until = Date.now() + 5000;
    while (sink.paused && Date.now() < until) await sleep(10);
    assert.strictEqual(sink.paused, false);
    assert.strictEqual(flow.stats.timeouts, 1);
    assert.strictEqual(flow.input(STATUS_OK), '', 'a late answer is still ours');
    flow.dispose();
  });

  it('asks once more at the end, so everything written gets acknowledged; dispose resumes a paused source', () => {
    const sink = new Sink();
    const flow = new TerminalFlow(sink, { ackEvery: 100, highWater: 150, lowWater: 10 });
    flow.write('x'.repeat(100));
    flow.write('y'.repeat(60));
    assert.strictEqual(sink.paused, true);
    flow.end();
    assert.strictEqual(sink.paused, false);
    assert.ok(sink.out.endsWith(`y${STATUS_QUERY}`));
    flow.input(STATUS_OK + STATUS_OK);
    assert.strictEqual(flow.stats.acked, 160);
    const again = new Sink();
    const f2 = new TerminalFlow(again, { ackEvery: 1, highWater: 2, lowWater: 1 });
    f2.write('abc');
    assert.strictEqual(again.paused, true);
    f2.dispose();
    assert.strictEqual(again.paused, false);
    f2.write('more');
    assert.strictEqual(again.out.includes('more'), false, 'nothing after dispose');
  });
});
