import type { CheckpointRow, CheckpointStore } from "@durable/core";

/** The store, but the next save (a recovery's claim) waits for `hold` when one is set. */
export class ClaimBarrier implements CheckpointStore {
  hold: (() => Promise<void>) | undefined;
  readonly #store: CheckpointStore;

  constructor(store: CheckpointStore) {
    this.#store = store;
  }

  async save(id: string, step: number, row: CheckpointRow): Promise<void> {
    const hold = this.hold;
    this.hold = undefined;
    if (hold !== undefined) await hold();
    return this.#store.save(id, step, row);
  }

  latest: CheckpointStore["latest"] = (id) => this.#store.latest(id);
  listUnfinished: CheckpointStore["listUnfinished"] = (flow) => this.#store.listUnfinished(flow);
  delete: CheckpointStore["delete"] = (id) => this.#store.delete(id);
  recordCall: CheckpointStore["recordCall"] = (id, segment, seq, sealed) => this.#store.recordCall(id, segment, seq, sealed);
  calls: CheckpointStore["calls"] = (id) => this.#store.calls(id);
  close: CheckpointStore["close"] = () => this.#store.close();
}
