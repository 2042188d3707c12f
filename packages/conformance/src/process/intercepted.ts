import type { CheckpointStore } from "@durable/core";

/**
 * The store with its writes passed through `save`, `recordCall` and `commit`
 * where given; every other operation goes straight to it, each argument
 * forwarded as given (a dropped lease or listing option would silently turn
 * leases off, a dropped `commit` batching). It batches when the store does.
 */
export function intercepted(
  store: CheckpointStore,
  writes: Partial<Pick<CheckpointStore, "save" | "recordCall" | "commit">>,
): CheckpointStore {
  const commit = store.commit?.bind(store);
  return {
    ...(commit === undefined ? {} : { commit: writes.commit ?? commit }),
    save: writes.save ?? ((id, step, row, lease) => store.save(id, step, row, lease)),
    renew: (id, segment, terms) => store.renew(id, segment, terms),
    release: (id, segment, owner) => store.release(id, segment, owner),
    leaseOf: (id) => store.leaseOf(id),
    latest: (id) => store.latest(id),
    listUnfinished: (flow, options) => store.listUnfinished(flow, options),
    delete: (id) => store.delete(id),
    recordCall: writes.recordCall ?? ((id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed)),
    calls: (id) => store.calls(id),
    close: () => store.close(),
  };
}
