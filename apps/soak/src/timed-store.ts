import type { CheckpointStore } from "@durable/core";

/** Operations slower than this are reported to the soak, which keeps the longest per fault. */
const REPORT_ABOVE_MS = 50;

/**
 * The store with every operation timed: how long each one stayed pending,
 * whether it resolved or failed. `listUnfinished` is timed up to its first id.
 */
export function timedStore(store: CheckpointStore, report: (ms: number) => void): CheckpointStore {
  const time = async <T>(op: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await op();
    } finally {
      const ms = performance.now() - started;
      if (ms > REPORT_ABOVE_MS) report(ms);
    }
  };
  return {
    save: (runId, step, checkpoint, lease) => time(() => store.save(runId, step, checkpoint, lease)),
    latest: (runId) => time(() => store.latest(runId)),
    renew: (runId, segment, terms) => time(() => store.renew(runId, segment, terms)),
    release: (runId, segment, owner) => time(() => store.release(runId, segment, owner)),
    leaseOf: (runId) => time(() => store.leaseOf(runId)),
    async *listUnfinished(flow, options) {
      const ids = store.listUnfinished(flow, options)[Symbol.asyncIterator]();
      for (;;) {
        const next = await time(() => ids.next());
        if (next.done === true) return;
        yield next.value;
      }
    },
    delete: (runId) => time(() => store.delete(runId)),
    recordCall: (runId, segment, seq, sealed) => time(() => store.recordCall(runId, segment, seq, sealed)),
    calls: (runId) => time(() => store.calls(runId)),
    close: () => store.close(),
  };
}
