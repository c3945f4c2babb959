/** Queries on the view's rows as the test hooks give them (the integration suite and the benchmark). */
import type { ApiRow } from '../../src/extension/testHooks';

/** Every row beneath `row`, depth first. */
export function rowsUnder(row: ApiRow): ApiRow[] {
  return row.children.flatMap((c) => [c, ...rowsUnder(c)]);
}

/** The pids of the process rows beneath `row`. */
export function pidsUnder(row: ApiRow): number[] {
  return rowsUnder(row).flatMap((r) => (r.target.kind === 'process' ? [r.target.pid] : []));
}
