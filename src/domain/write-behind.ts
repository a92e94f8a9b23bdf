// What the two write-behind recorders (analytics events, last-used times) share
// when they stop: flush, and while the database refuses, flush again until a deadline.

/**
 * Flushes once; with `until` (Unix ms), flushes again every `retryMs` while
 * `left()` says something is still waiting and the deadline allows another try.
 */
export async function flushUntil(flush: () => Promise<void>, left: () => number, until: number | undefined, retryMs: number): Promise<void> {
  await flush();
  while (until !== undefined && left() > 0 && Date.now() + retryMs < until) {
    await new Promise((r) => setTimeout(r, retryMs));
    await flush();
  }
}
