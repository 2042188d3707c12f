import type { CheckpointStore, MemoryCheckpointStore } from "@durable/core";
import { forever } from "@durable/test-utils/stores";

/** The store methods that write. */
const WRITES: ReadonlySet<PropertyKey> = new Set(["save", "recordCall", "commit", "sendEvent"]);

/**
 * `inner` as a worker that dies at its `crashAt`-th write sees it: that write
 * never returns (`after`: it landed first), and nor does anything after it;
 * a worker's listing still answers. `state.dead` says whether it died.
 */
export function mortal(inner: MemoryCheckpointStore, crashAt: number | undefined, after: boolean) {
  let writes = 0;
  const state = { dead: false };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop === "listUnfinished") return value.bind(target);
      return async (...args: unknown[]) => {
        if (state.dead) return forever();
        if (WRITES.has(prop) && crashAt !== undefined && ++writes >= crashAt) {
          if (after) await value.apply(target, args);
          state.dead = true;
          return forever();
        }
        return value.apply(target, args);
      };
    },
  }) as CheckpointStore;
  return { store, state };
}

/** The call ids of the run's `done` records, read past the seal (an unsigned or HMAC-signed d1 envelope). */
export async function doneCalls(store: MemoryCheckpointStore, runId: string): Promise<Set<string>> {
  const done = new Set<string>();
  for (const row of await store.calls(runId)) {
    const body = JSON.parse(row.sealed.slice(row.sealed.indexOf(".", 3) + 1)) as { kind: string; callId: string };
    if (body.kind === "done") done.add(body.callId);
  }
  return done;
}
