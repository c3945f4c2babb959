/**
 * Work nobody waits for (a refresh after a kill, a look at a closed terminal): started with `inBackground`, so a
 * failure is logged with what was being done instead of becoming an unhandled rejection.
 */
import type { Logger } from '../proc';

export function inBackground(work: PromiseLike<unknown>, log: Pick<Logger, 'error'>, what: string): void {
  Promise.resolve(work).catch((e: unknown) => log.error(`${what} failed: ${e instanceof Error ? e.message : String(e)}`));
}
