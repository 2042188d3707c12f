/**
 * A worker for the maxSteps crash test: takes the loop `runId` on the SQLite
 * file `db` (starting it, or recovering it when it is stored) and prints its
 * result as JSON. Its model appends a line to `effects` for every call it
 * really makes, then marks `model.inside`, where DURABLE_FAULT_POINT may kill it.
 */
import { appendFileSync } from "node:fs";
import { ToolRegistry } from "@durable/core";
import { CheckpointNotFound } from "@durable/core/store";
import { faultPoint } from "@durable/core/internal";
import { DurableRun, Sealer } from "@durable/core/runner";
import { recoverToolLoop, runToolLoop, type LoopModel } from "@durable/loop";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const [db, effects, runId, maxSteps] = process.argv.slice(2) as [string, string, string, string];
const KEY = "max-steps-test-key-0123456789abcdef";

/** Always asks for one more lookup: only maxSteps ends the loop. */
const model: LoopModel = {
  async reply(messages) {
    appendFileSync(effects, `model ${process.pid}\n`);
    faultPoint("model.inside");
    return {
      text: "looking",
      toolCalls: [{ id: `look-${messages.length}`, name: "lookup", args: { n: messages.length } }],
    };
  },
};
const registry = new ToolRegistry().tool("lookup", (a: { n: number }) => `found ${a.n}`, { idempotent: true });
const store = new SQLiteCheckpointStore(db);
const options = { checkpoints: store, checkpointKey: KEY };
const stored = await DurableRun.latest(store, Sealer.withKeys(KEY), runId).catch((error: unknown) => {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
});
const result =
  stored === undefined
    ? await runToolLoop(model, registry, [{ role: "user", content: "look it up" }], {
        ...options,
        runId,
        maxSteps: Number(maxSteps),
      })
    : // The first process was killed: this one takes its lease over (the run keeps its own maxSteps).
      await recoverToolLoop(model, registry, runId, { ...options, takeOver: true });
console.log(JSON.stringify({ status: result.status, stopped: result.status === "done" ? result.stopped : undefined }));
await store.close();
