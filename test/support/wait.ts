/**
 * Waiting, for the unit, system and integration tests and the benchmark: one poller. Tests wait on conditions,
 * never on sleeps that assume an idle machine.
 */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A probe's answer: the value waited for, or one of the values that mean "not yet". */
type NotYet<T> = T | undefined | null | false | 0 | '';

export interface WaitOptions {
  /** How long to wait at most (10 s unless given). */
  timeoutMs?: number;
  /** How often to look (every 50 ms unless given). */
  everyMs?: number;
}

/**
 * Looks at `probe` until it gives a value (anything but undefined, null, false, 0 or '') and resolves with that
 * value; at the deadline it throws "timed out after N ms waiting for <what>". `what` may be a function: it is read
 * only then, so it can say what was seen. The probe may be async. Past the deadline it looks once more, after the
 * events already due (output of a child, say) have been handled: on a loaded machine this process may get no CPU for
 * a while, and when it runs again its timer comes before the events that arrived meanwhile.
 */
export async function waitFor<T>(
  what: string | (() => string),
  probe: () => NotYet<T> | PromiseLike<NotYet<T>>,
  timeoutOrOptions: number | WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, everyMs = 50 } = typeof timeoutOrOptions === 'number' ? { timeoutMs: timeoutOrOptions } : timeoutOrOptions;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const late = Date.now() >= deadline;
    if (late) await new Promise((resolve) => setImmediate(resolve)); // after the I/O events already waiting
    const value = await probe();
    if (value) return value;
    if (late) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(Math.min(everyMs, Math.max(0, deadline - Date.now())));
  }
}
