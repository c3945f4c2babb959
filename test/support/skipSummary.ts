/**
 * Root hook of the unit and system runs: at the end, which tests were skipped (or run without a part) and why
 * (test/support/environment.ts), and, where scripts/test-all.sh asks for it (AGENT_TREES_SKIP_LOG), the same as
 * `kind<TAB>tests<TAB>reason<TAB>test` lines.
 */
import * as fs from 'fs';
import { requireAll, skips } from './environment';

after(function () {
  if (skips.length === 0) return;
  const skipped = skips.filter((s) => s.kind !== 'environment, a part').reduce((n, s) => n + s.tests, 0);
  const partly = skips.filter((s) => s.kind === 'environment, a part').length;
  console.log(
    `\n  ${skipped} skipped${partly ? `, ${partly} run without a part` : ''}, and why` +
      `${requireAll ? '' : ' (in CI, a missing environment fails the run instead)'}:`,
  );
  const reasons = new Map<string, number>();
  for (const s of skips) {
    const reason = s.kind === 'environment, a part' ? `${s.reason} (a part omitted)` : s.reason;
    reasons.set(reason, (reasons.get(reason) ?? 0) + s.tests);
  }
  for (const [reason, n] of reasons) console.log(`    ${n} × ${reason}`);
  const log = process.env.AGENT_TREES_SKIP_LOG;
  if (log) fs.appendFileSync(log, skips.map((s) => `${s.kind}\t${s.tests}\t${s.reason}\t${s.test}\n`).join(''));
});
