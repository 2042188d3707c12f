import type { CheckpointStore } from "@durable/core";
import { intercepted } from "./intercepted.js";

/** A store whose next save (a recovery's claim) waits for `hold` when one is set. */
export type ClaimBarrier = CheckpointStore & { hold: (() => Promise<void>) | undefined };

export function claimBarrier(store: CheckpointStore): ClaimBarrier {
  const barrier: ClaimBarrier = Object.assign(
    intercepted(store, {
      async save(id, step, row, lease) {
        const hold = barrier.hold;
        barrier.hold = undefined;
        if (hold !== undefined) await hold();
        return store.save(id, step, row, lease);
      },
    }),
    { hold: undefined },
  );
  return barrier;
}
