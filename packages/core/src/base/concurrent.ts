/** What `eachConcurrently` yields for one item: its value, or the error it threw. */
export type Settled<T, V> =
  | { readonly item: T; readonly ok: true; readonly value: V }
  | { readonly item: T; readonly ok: false; readonly error: unknown };

/**
 * Runs `work` on each item of `source`, at most `limit` at once, and yields
 * each outcome as it settles (not in source order). Reads the source only as
 * slots free up, so memory holds at most `limit` items however long the
 * source is; one slow item never holds up the others.
 */
export async function* eachConcurrently<T, V>(
  source: AsyncIterable<T>,
  limit: number,
  work: (item: T) => Promise<V>,
): AsyncGenerator<Settled<T, V>> {
  const iterator = source[Symbol.asyncIterator]();
  const running = new Map<number, Promise<{ id: number; settled: Settled<T, V> }>>();
  let next = 0;
  let exhausted = false;
  try {
    for (;;) {
      while (!exhausted && running.size < limit) {
        const read = await iterator.next();
        if (read.done === true) {
          exhausted = true;
          break;
        }
        const id = next++;
        const item = read.value;
        running.set(
          id,
          work(item).then(
            (value) => ({ id, settled: { item, ok: true, value } }),
            (error: unknown) => ({ id, settled: { item, ok: false, error } }),
          ),
        );
      }
      if (running.size === 0) return;
      const { id, settled } = await Promise.race(running.values());
      running.delete(id);
      yield settled;
    }
  } finally {
    if (!exhausted) await iterator.return?.();
  }
}
