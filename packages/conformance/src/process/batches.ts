import type { CheckpointStore, RunWrite } from "@durable/core/store";
import { Sealer } from "@durable/core/runner";
import { KIT_KEY, kitCall, kitRow } from "../harness/harness.js";

/**
 * The batch group's killed worker: commits batches to a new run, one after
 * another until it is killed, each `size` records and then the checkpoint of
 * the next step counting them, and prints "committing <step>" before each
 * commit and "committed <step>" once it resolved. A kill between the two lines
 * landed inside a commit.
 */
export async function commitBatches(store: CheckpointStore, runId: string, size: number): Promise<void> {
  const commit = store.commit?.bind(store);
  if (commit === undefined) throw new Error("the store has no commit");
  const sealer = Sealer.withKeys(KIT_KEY);
  await store.save(runId, 0, kitRow(sealer, runId, 0));
  console.log("ready");
  for (let step = 1; ; step++) {
    const first = (step - 1) * size;
    const writes: RunWrite[] = Array.from({ length: size }, (_, i) => ({
      kind: "record",
      segment: 0,
      seq: first + i,
      sealed: kitCall(sealer, runId, 0, first + i),
    }));
    writes.push({ kind: "save", step, row: kitRow(sealer, runId, step, { calls: [first + size] }) });
    console.log(`committing ${step}`);
    await commit(runId, writes);
    console.log(`committed ${step}`);
  }
}
