import { MemoryCheckpointStore } from "../src/index.js";
import type { CheckpointStore, StoredCall, StoredCheckpoint } from "../src/store.js";
import { DurableRun, Sealer } from "../src/runner.js";

export const KEY = "k".repeat(32);
export const OLD_KEY = "o".repeat(32);
export const sealer: Sealer = Sealer.withKeys(KEY);

export { MemoryCheckpointStore };

/** Starts a flow run on a fresh memory store. */
export async function startRun(store: CheckpointStore = new MemoryCheckpointStore(), runId = "run-1") {
  const started = await DurableRun.start({
    store,
    sealer,
    runId,
    flow: "tickets",
    kind: "flow",
    identity: { user: "ada", thread: "t-1" },
    data: { state: { show: "Hamlet", seats: 2 } },
  });
  return { store, ...started };
}

/**
 * A store whose reads pass through `edit` functions: how the tests change,
 * drop or reorder stored rows as an attacker with write access to the
 * database would, without the key.
 */
export class TamperedStore extends MemoryCheckpointStore {
  editCheckpoint: (row: StoredCheckpoint) => StoredCheckpoint = (row) => row;
  editCalls: (rows: StoredCall[]) => StoredCall[] = (rows) => rows;

  override async latest(runId: string): Promise<StoredCheckpoint> {
    return this.editCheckpoint(await super.latest(runId));
  }

  override async calls(runId: string): Promise<StoredCall[]> {
    return this.editCalls(await super.calls(runId));
  }
}

/** Replaces the first occurrence of `from` inside a sealed envelope's body, leaving the signature as it was. */
export function editSealed(sealed: string, from: string, to: string): string {
  const at = sealed.indexOf(from, sealed.indexOf(".", 3) + 1);
  if (at < 0) throw new Error(`${from} is not in ${sealed}`);
  return sealed.slice(0, at) + to + sealed.slice(at + from.length);
}

/** Every item of an async iterable (Array.fromAsync needs Node 22). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
