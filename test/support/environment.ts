/**
 * Skipping a test of the unit and system runs, always with its reason (lint allows no bare `this.skip()` there):
 *   - requireEnvironment: the machine lacks what the test needs (root, the cgroup tier, faketime, unshare, ...). In
 *     CI, whose machine has all of it (`CI`, or AGENT_TREES_TESTS_REQUIRE_ALL=1 as .ci/run sets), the test fails
 *     instead; elsewhere it is skipped and the run says why.
 *   - skipBecause: the test does not apply here, CI or not (another platform, an npm without the feature, a pid the
 *     machine kept taking).
 * The run's end lists how many were skipped and why (see skipSummary.ts), and test/support/leakCheck.ts's run
 * writes them where scripts/test-all.sh gathers them into its totals.
 */
import { processCore } from '../../src/proc';
import { hasTool } from './cli';

/** Whether this run must have every environment its tests need (CI). */
export const requireAll =
  process.env.AGENT_TREES_TESTS_REQUIRE_ALL === '1' || (!!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0');

export interface Skip {
  /** The test, or the suite whose `before` hook skipped all of it. */
  test: string;
  /** How many tests it skipped. */
  tests: number;
  reason: string;
  /**
   * 'environment': what the machine lacks ('environment, a part': the test ran without the part that needs it);
   * 'not here': the test does not apply on this machine.
   */
  kind: 'environment' | 'environment, a part' | 'not here';
}

/** Every skip of this run so far. */
export const skips: Skip[] = [];

/** What `ctx` runs: a test, or the hook of a suite (whose tests a skip there skips), and how many tests that is. */
function skipped(ctx: Mocha.Context): { test: string; tests: number } {
  const runnable = ctx.test;
  if (runnable && (runnable as Mocha.Hook).type === 'hook' && runnable.parent)
    return { test: runnable.parent.fullTitle(), tests: runnable.parent.total() };
  return { test: runnable?.fullTitle() ?? '?', tests: 1 };
}

/**
 * Unless `have`, the test (or, from a `before` hook, its suite) cannot run here for want of `what`: in CI it fails,
 * elsewhere it is skipped with that reason. With `part`, only a part of the test needs it: elsewhere the test goes
 * on without that part (the caller checks `have`), and the omission is listed with the skips.
 */
export function requireEnvironment(ctx: Mocha.Context, have: boolean, what: string, options: { part?: boolean } = {}): void {
  if (have) return;
  if (requireAll) throw new Error(`needs ${what}, which this CI machine should have (AGENT_TREES_TESTS_REQUIRE_ALL)`);
  const at = skipped(ctx);
  skips.push({ ...at, reason: what, kind: options.part ? 'environment, a part' : 'environment' });
  if (!options.part) ctx.skip();
}

/** Skips the test (or, from a `before` hook, its suite): it does not apply on this machine, CI or not. */
export function skipBecause(ctx: Mocha.Context, reason: string): never {
  skips.push({ ...skipped(ctx), reason, kind: 'not here' });
  ctx.skip();
  throw new Error('unreachable: ctx.skip() throws');
}

export const isRoot = process.getuid?.() === 0;

/** Root, for `why`. */
export function requireRoot(ctx: Mocha.Context, why: string): void {
  requireEnvironment(ctx, isRoot, `root, ${why}`);
}

/** Programs on PATH (the Debian test tools scripts/test-tools.sh installs: faketime; util-linux: unshare, setpriv). */
export function requireTools(ctx: Mocha.Context, ...names: string[]): void {
  const missing = names.filter((n) => !hasTool(n));
  requireEnvironment(ctx, missing.length === 0, `${missing.join(', ')} on PATH`);
}

/**
 * The cgroup tier of this process ('directory': root's own folder of cgroups, as in CI; any: a systemd user scope
 * will do), with what it is; the reason it is missing goes into the skip.
 */
export function requireCgroupTier(ctx: Mocha.Context, kind: 'directory' | 'any' = 'any') {
  const probe = processCore().cgroupTier('auto');
  const tier = probe.tier;
  const have = !!tier && (kind === 'any' || tier.kind === kind);
  const why = tier ? `here cgroups are ${tier.kind === 'directory' ? 'a folder of ours' : 'systemd scopes'}` : probe.unavailable;
  requireEnvironment(ctx, have, `the cgroup tier${kind === 'directory' ? ' in a folder of our own (root)' : ''} (${why})`);
  return tier!;
}
