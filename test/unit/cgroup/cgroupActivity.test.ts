/** What a cgroup's files say at a glance (cgroup/cgroupActivity.ts), from their recorded text. */
import * as assert from 'assert';
import { parseCpuUsage, parseProcsList } from '../../../src/proc/cgroup/cgroupActivity';

describe("a cgroup's activity, parsed", () => {
  it('takes usage_usec from cpu.stat, with or without the cpu controller lines', () => {
    assert.strictEqual(parseCpuUsage('usage_usec 40751\nuser_usec 30000\nsystem_usec 10751\nnice_usec 0\n'), 40751);
    const withController = 'usage_usec 7\nuser_usec 4\nsystem_usec 3\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n';
    assert.strictEqual(parseCpuUsage(withController), 7);
    assert.strictEqual(parseCpuUsage('user_usec 4\nusage_usec 9\n'), 9, 'wherever the line is');
    assert.strictEqual(parseCpuUsage('user_usec 4\n'), undefined, 'no usage line: cannot tell');
    assert.strictEqual(parseCpuUsage('usage_usec x\n'), undefined);
    assert.strictEqual(parseCpuUsage(''), undefined);
  });

  it('lists cgroup.procs in order, empty when the cgroup is empty, and refuses anything but pids', () => {
    assert.deepStrictEqual(parseProcsList('1056\n1057\n1049\n'), [1056, 1057, 1049]);
    assert.deepStrictEqual(parseProcsList(''), []);
    assert.strictEqual(parseProcsList('1056\nx\n'), undefined);
    assert.strictEqual(parseProcsList('0\n'), undefined);
    assert.strictEqual(parseProcsList('-3\n'), undefined);
  });
});
