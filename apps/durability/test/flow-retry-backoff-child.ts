/**
 * A worker for the retry crash test: takes the flow run `runId` on the SQLite
 * file `db` (starting it, or recovering it when it is stored) and prints its
 * result as JSON, with the time it began to drive the run. Its `charge` tool (not idempotent) appends a line to
 * `effects` for every attempt it really makes, and fails its first attempt;
 * DURABLE_FAULT_POINT may kill the worker, e.g. in the wait after it.
 */
import { appendFileSync } from "node:fs";
import { Executor, ToolRegistry, type ToolContext } from "@durable/core";
import { CheckpointNotFound } from "@durable/core/store";
import { DurableRun, Sealer } from "@durable/core/runner";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const [db, effects, runId, delayMs] = process.argv.slice(2) as [string, string, string, string];
const KEY = "retry-backoff-test-key-0123456789abcdef";

const registry = new ToolRegistry().tool(
  "charge",
  (_args: unknown, ctx: ToolContext) => {
    appendFileSync(effects, `${JSON.stringify({ attempt: ctx.attempt, key: ctx.idempotencyKey, at: Date.now() })}\n`);
    if (ctx.attempt === 1) throw new Error("ECONNRESET");
    return "charged";
  },
  { retry: { attempts: 3, initialDelayMs: Number(delayMs), jitter: 0 } },
);
const flow = new Flow("booking", { state: z.object({ note: z.string() }) })
  .node("pay", new Call("charge", { args: () => ({ cents: 4000 }), into: "note" }))
  .end("pay");
const store = new SQLiteCheckpointStore(db);
const runner = new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });
const stored = await DurableRun.latest(store, Sealer.withKeys(KEY), runId).catch((error: unknown) => {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
});
// When this process began to drive the run: a recovery that went on waits less than a whole backoff after it.
const began = Date.now();
const result =
  stored === undefined
    ? await runner.run(flow, { note: "" }, { runId })
    : // The first process was killed: this one takes its lease over, with no decision on calls in doubt.
      await runner.recover(flow, runId, { takeOver: true });
console.log(
  JSON.stringify({ status: result.status, state: result.status === "done" ? result.state : undefined, began }),
);
await store.close();
