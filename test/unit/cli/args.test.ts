/** The command line's arguments (src/cli/args.ts): what each command takes, and what is wrong when it is not. */
import * as assert from 'assert';
import { parseArgs, UsageError } from '../../../src/cli/args';

describe('argument parsing', () => {
  it('takes the command after -- or at the first non-option word', () => {
    const a = parseArgs(['run', '--timeout', '2.5', '--label', 'x', '--', 'claude', '--print', 'hi']);
    assert.deepStrictEqual(a.command === 'run' && [a.cmd, a.timeoutMs, a.label], [['claude', '--print', 'hi'], 2500, 'x']);
    const b = parseArgs(['run', '--grace=0', 'sleep', '--timeout', '1']);
    assert.deepStrictEqual(b.command === 'run' && [b.cmd, b.graceMs, b.timeoutMs], [['sleep', '--timeout', '1'], 0, 0]);
  });
  it('says what is wrong', () => {
    assert.throws(() => parseArgs(['ps', '--timeout', '1']), /--timeout does not apply to 'ps'/);
    assert.throws(() => parseArgs(['run', '--grace', '-1', '--', 'x']), /--grace takes a number of seconds/);
    assert.throws(() => parseArgs(['sweep', 'extra']), /takes no argument "extra"/);
  });
});

describe("the watchdog's command line", () => {
  it('parses sweep --owner PID:START_KEY and run --no-watchdog; rejects a bad owner', () => {
    const sweep = parseArgs(['sweep', '--owner', '4242:123456', '--records', '/x']);
    assert.deepStrictEqual(sweep.command === 'sweep' && sweep.owner, { pid: 4242, startKey: 123456 });
    const run = parseArgs(['run', '--no-watchdog', '--', 'true']);
    assert.strictEqual(run.command === 'run' && run.watchdog, false);
    assert.strictEqual((parseArgs(['run', '--', 'true']) as { watchdog: boolean }).watchdog, true);
    for (const bad of ['4242', '0:1', 'x:1', '4242:', '4242:1:2', '-1:5']) {
      assert.throws(
        () => parseArgs(['sweep', '--owner', bad]),
        (e: Error) => e instanceof UsageError && /--owner takes PID:START_KEY/.test(e.message),
        bad,
      );
    }
    assert.throws(() => parseArgs(['ps', '--owner', '1:1']), /does not apply to 'ps'/);
  });
});
