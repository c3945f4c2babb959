/**
 * A tree's limits as given (definitions, options), as recorded (the record schema) and as told (the ending line,
 * the use against each limit), and the memory gauge that reads PSS only where it can matter. Pure.
 */
import * as assert from 'assert';
import { validateDefinitions } from '../../../src/agents/definition';
import { parseArgs, UsageError } from '../../../src/cli/args';
import { breachText, limitProblem, limitsOf, nearestLimit, useOfMembers, usePart } from '../../../src/proc/budget/limits';
import { MemoryGauge } from '../../../src/proc/budget/memoryUse';
import { ProcessInfo } from '../../../src/proc/platform/processTable';
import { recordShapeProblem } from '../../../src/proc/records/schema';

const MB = 1024 * 1024;

function member(pid: number, rssMB: number): ProcessInfo {
  return {
    pid,
    ppid: 1,
    pgid: pid,
    sid: pid,
    state: 'S',
    startKey: pid * 10,
    startTime: 0,
    uid: 0,
    name: 'p',
    rssBytes: rssMB * MB,
    cpuMs: 0,
  };
}

describe('limits as given, recorded and told', () => {
  it('takes 0 (none) or a whole number above 0, and names the unit otherwise', () => {
    for (const ok of [0, 1, 512, 2 ** 40]) assert.strictEqual(limitProblem('maxMemoryMB', ok), undefined, String(ok));
    for (const bad of [-1, 1.5, NaN, Infinity, '512', null, true, 2 ** 60])
      assert.strictEqual(limitProblem('maxMemoryMB', bad), 'must be a whole number of MB, 0 or more (0 = no limit)', String(bad));
    assert.match(limitProblem('maxProcesses', -2)!, /whole number of processes/);
    assert.match(limitProblem('idleTimeoutSeconds', 'x')!, /whole number of seconds/);
  });

  it('gives a tree its own limits over the defaults, 0 being none, and nothing when it has none', () => {
    assert.strictEqual(limitsOf({}, {}), undefined);
    assert.strictEqual(limitsOf({ maxMemoryMB: 0 }, { maxMemoryMB: 0 }), undefined);
    assert.deepStrictEqual(limitsOf({ maxProcesses: 50 }, { maxMemoryMB: 1024, maxProcesses: 200 }), {
      maxMemoryMB: 1024,
      maxProcesses: 50,
    });
    // The definition's 0 turns a default off.
    assert.deepStrictEqual(limitsOf({ maxMemoryMB: 0 }, { maxMemoryMB: 1024, idleTimeoutSeconds: 900 }), { idleTimeoutSeconds: 900 });
  });

  it('names the definition and the field of a bad limit, and keeps the good entries', () => {
    const { agents, errors } = validateDefinitions([
      { name: 'a', command: 'claude', maxMemoryMB: 2048, maxProcesses: 200, idleTimeoutSeconds: 900 },
      { name: 'b', command: 'claude', maxMemoryMB: -1 },
      { name: 'c', command: 'claude', maxProcesses: 'lots' },
      { name: 'd', command: 'claude', idleTimeoutSeconds: 0.5 },
    ]);
    assert.deepStrictEqual(
      agents.map((a) => [a.name, a.maxMemoryMB, a.maxProcesses, a.idleTimeoutSeconds]),
      [['a', 2048, 200, 900]],
    );
    assert.deepStrictEqual(
      errors.map((e) => e.message),
      [
        'agentTrees.agents[1] ("b"): "maxMemoryMB" must be a whole number of MB, 0 or more (0 = no limit)',
        'agentTrees.agents[2] ("c"): "maxProcesses" must be a whole number of processes, 0 or more (0 = no limit)',
        'agentTrees.agents[3] ("d"): "idleTimeoutSeconds" must be a whole number of seconds, 0 or more (0 = no limit)',
      ],
    );
  });

  it("takes `run`'s limit options and rejects a bad one naming the option", () => {
    const args = parseArgs(['run', '--max-memory', '512', '--max-processes=50', '--idle-timeout', '900', '--', 'claude']);
    assert.ok(args.command === 'run');
    assert.deepStrictEqual(args.limits, { maxMemoryMB: 512, maxProcesses: 50, idleTimeoutSeconds: 900 });
    const run = parseArgs(['run', '--', 'claude']);
    assert.ok(run.command === 'run' && Object.keys(run.limits).length === 0);
    const bad: [string[], string][] = [
      [['--max-memory', '1.5G'], '--max-memory must be a whole number of MB, 0 or more (0 = no limit), not "1.5G"'],
      [['--max-processes', '-3'], '--max-processes must be a whole number of processes, 0 or more (0 = no limit), not "-3"'],
      [['--idle-timeout', ''], '--idle-timeout must be a whole number of seconds, 0 or more (0 = no limit), not ""'],
    ];
    for (const [options, message] of bad) {
      assert.throws(
        () => parseArgs(['run', ...options, '--', 'x']),
        (e: unknown) => e instanceof UsageError && e.message === message,
      );
    }
    assert.throws(() => parseArgs(['ps', '--max-memory', '5']), /--max-memory does not apply to 'ps'/);
  });

  it("records limits compatibly: optional, checked when present, a later version's fields left alone", () => {
    const record = (tree: Record<string, unknown>) => ({
      version: 1,
      owner: { pid: 10, startTime: 1 },
      trees: [
        {
          id: 't1',
          label: 'x',
          command: ['x'],
          rootPid: 11,
          pgid: 11,
          sid: 11,
          rootStartTime: 1,
          trackedAt: 2,
          envTag: 'AGENT_TREES_TREE_ID=t1',
          cgroup: null,
          ...tree,
        },
      ],
    });
    assert.strictEqual(recordShapeProblem(record({})), undefined);
    assert.strictEqual(
      recordShapeProblem(record({ limits: { maxMemoryMB: 512, maxProcesses: 50 }, pidsCgroup: '/sys/fs/cgroup/pids/x' })),
      undefined,
    );
    assert.strictEqual(recordShapeProblem(record({ limits: { maxCpuPercent: 50 } })), undefined);
    assert.strictEqual(
      recordShapeProblem(record({ limits: { maxMemoryMB: -1 } })),
      'trees[0].limits.maxMemoryMB: expected a whole number above 0',
    );
    assert.strictEqual(recordShapeProblem(record({ limits: [] })), 'trees[0].limits: expected an object');
    assert.strictEqual(recordShapeProblem(record({ pidsCgroup: 7 })), 'trees[0].pidsCgroup: expected a path, or no such field');
  });

  it('says which limit ended a tree in one line', () => {
    assert.strictEqual(breachText({ kind: 'memory', limitMB: 512, bytes: 611 * MB }), 'memory limit 512 MB exceeded (611 MB)');
    assert.strictEqual(
      breachText({ kind: 'memory', limitMB: 512, bytes: 512 * MB, kernelEnded: 7 }),
      'memory limit 512 MB exceeded (512 MB, out of memory in the kernel)',
    );
    assert.strictEqual(breachText({ kind: 'processes', limit: 50, count: 87 }), 'process limit 50 exceeded (87)');
    assert.strictEqual(breachText({ kind: 'idle', seconds: 900 }), 'idle for 900 s');
    const l10n = { t: (m: string, ...a: unknown[]) => `<${m}>${a.join(',')}` };
    assert.strictEqual(breachText({ kind: 'idle', seconds: 9 }, l10n), '<idle for {0} s>9');
  });

  it('tells use against each limit, and how near the nearest one is', () => {
    const limits = { maxMemoryMB: 1024, maxProcesses: 200, idleTimeoutSeconds: 900 };
    const use = { processes: 41, memory: { bytes: 612 * MB, measure: 'PSS' as const }, idleSeconds: 12.7 };
    assert.strictEqual(usePart('maxMemoryMB', use, limits), '612 MB of 1.0 GB');
    assert.strictEqual(usePart('maxProcesses', use, limits), '41 of 200 processes');
    assert.strictEqual(usePart('idleTimeoutSeconds', use, limits), 'idle 12 s of 900 s');
    assert.strictEqual(usePart('idleTimeoutSeconds', { ...use, idleSeconds: undefined }, limits), 'ends after 900 s idle');
    assert.strictEqual(usePart('maxProcesses', use, { maxMemoryMB: 5 }), undefined);
    assert.strictEqual(nearestLimit(use, limits), 612 / 1024);
    assert.strictEqual(nearestLimit({ ...use, processes: 190 }, limits), 0.95);
    assert.deepStrictEqual(useOfMembers([member(1, 3), member(2, 4)]), { processes: 2, memory: { bytes: 7 * MB, measure: 'RSS' } });
  });
});

describe('the memory gauge', () => {
  it('sums RSS below the threshold without reading PSS, and PSS (RSS where unreadable) from it on', () => {
    const reads: number[] = [];
    const pss = new Map([
      [1, 40 * MB],
      [2, 10 * MB],
    ]);
    const gauge = new MemoryGauge(
      (pid) => (reads.push(pid), pss.get(pid)),
      () => 0,
    );
    const members = [member(1, 100), member(2, 50), member(3, 30)];
    assert.deepStrictEqual(gauge.measure(members, 500 * MB), { bytes: 180 * MB, measure: 'RSS' });
    assert.deepStrictEqual(reads, [], 'no PSS read under the threshold');
    assert.deepStrictEqual(gauge.measure(members, 100 * MB), { bytes: 80 * MB, measure: 'PSS' });
    assert.deepStrictEqual(reads, [1, 2, 3]);
  });

  it('adds RSS moves to the last PSS reading until it is old, and reads afresh when asked', () => {
    let now = 0;
    let pss = 40 * MB;
    let reads = 0;
    const gauge = new MemoryGauge(
      () => (reads++, pss),
      () => now,
    );
    assert.strictEqual(gauge.measure([member(1, 100)], 0).bytes, 40 * MB);
    now = 1000;
    pss = 45 * MB;
    assert.strictEqual(gauge.measure([member(1, 120)], 0).bytes, 60 * MB, 'the reading plus the 20 MB the RSS grew');
    assert.strictEqual(reads, 1);
    assert.strictEqual(gauge.measure([member(1, 120)], 0, true).bytes, 45 * MB, 'fresh');
    now = 20_000;
    pss = 50 * MB;
    assert.strictEqual(gauge.measure([member(1, 120)], 0).bytes, 50 * MB, 'old readings are read again');
    assert.strictEqual(reads, 3);
  });
});
