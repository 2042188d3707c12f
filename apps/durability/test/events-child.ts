/**
 * The processes of the events crash test, on the SQLite file `db`:
 * - `start <db> <effects> <runId>` starts the order run (charge, wait for
 *   `approved`, ship; wait for `label`; wait at most 1.5 s for `delivered`,
 *   close), prints its result ("waiting <json>"), then serves the flow until
 *   killed;
 * - `serve <db> <effects> <runId>` serves the flow, printing "serving" once
 *   it polls, until the run is done, then prints "done";
 * - `send <db> <effects> <runId> <name> <payload> <key>` sends one event and
 *   prints "sent <json>" (what `sendEvent` gave), or "refused <error name>".
 * Each tool appends to `effects` when it really runs: the verdict reads that
 * file, not the store.
 */
import { appendFileSync } from "node:fs";
import { Executor, sendEvent, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

const [mode, db, effects, runId, ...rest] = process.argv.slice(2) as [
  "start" | "serve" | "send",
  string,
  string,
  string,
  ...string[],
];
const KEY = "events-crash-test-key-0123456789abcdef";
/** How long the run waits for `delivered`. */
const DELIVERY_TIMEOUT_MS = 1_500;
const POLL_MS = 100;

const effect = (tool: string) => (args: unknown) =>
  void appendFileSync(effects, `${JSON.stringify({ tool, args, pid: process.pid, at: Date.now() })}\n`);
const registry = new ToolRegistry()
  .tool("charge", effect("charge"))
  .tool("ship", effect("ship"))
  .tool("close", effect("close"));
const flow = new Flow("order", { state: z.object({ item: z.string() }) })
  .node("charge", async (state, ctx) => {
    await ctx.call("charge", { item: state.item });
    const approved = await ctx.waitForEvent("approved");
    await ctx.call("ship", { approved: approved.status === "received" ? approved.payload : null });
  })
  .node("label", async (_state, ctx) => {
    const label = await ctx.waitForEvent("label");
    const delivered = await ctx.waitForEvent("delivered", { timeoutMs: DELIVERY_TIMEOUT_MS });
    await ctx.call("close", { label: label.status === "received" ? label.payload : null, delivered: delivered.status });
  })
  .edge("charge", "label")
  .end("label");
const store = new SQLiteCheckpointStore(db);
const storage = { checkpoints: store, checkpointKey: KEY };

if (mode === "send") {
  const [name, payload, idempotencyKey] = rest as [string, string, string];
  try {
    const sent = await sendEvent({ ...storage, runId, name, payload: JSON.parse(payload), idempotencyKey });
    console.log(`sent ${JSON.stringify(sent)}`);
  } catch (error) {
    console.log(`refused ${(error as Error).name}`);
  }
  await store.close();
  process.exit(0);
}

const runner = new FlowRunner(new Executor(registry), { ...storage, lease: { ms: 1_000 } });
if (mode === "start") console.log(`waiting ${JSON.stringify(await runner.run(flow, { item: "lamp" }, { runId }))}`);
const worker = startWorker({ serve: [runner.served(flow)], pollMs: POLL_MS, maxPollMs: POLL_MS, stopOnSignals: false });
console.log(`serving ${Date.now()}`);
for (;;) {
  if ((await store.latest(runId)).status === "done") break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await worker.stop();
console.log("done");
await store.close();
