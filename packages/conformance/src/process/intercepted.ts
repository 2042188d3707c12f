import type { CheckpointStore } from "@durable/core";

/** The store with its writes passed through `save` and `recordCall` where given; reads go straight to it. */
export function intercepted(
  store: CheckpointStore,
  writes: Partial<Pick<CheckpointStore, "save" | "recordCall">>,
): CheckpointStore {
  return {
    save: writes.save ?? ((id, step, row) => store.save(id, step, row)),
    latest: (id) => store.latest(id),
    listUnfinished: (flow) => store.listUnfinished(flow),
    delete: (id) => store.delete(id),
    recordCall: writes.recordCall ?? ((id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed)),
    calls: (id) => store.calls(id),
    close: () => store.close(),
  };
}
