/**
 * A worker for the sleep crash test, on the SQLite file `db`. `start` starts
 * the reminder run `runId` (send, sleep `sleepMs`, remind), prints its result
 * ("asleep <json>"), then serves the flow until it is killed. `serve` serves
 * the flow, printing "serving <time>" once it polls, until the run is done, then
 * prints "done". Each tool appends to `effects` when it really runs: the
 * verdict reads that file, not the store.
 */
import { appendFileSync } from "node:fs";
import { Executor, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

const [mode, db, effects, runId, sleepMs, pollMs] = process.argv.slice(2) as [
  "start" | "serve",
  string,
  string,
  string,
  string,
  string,
];
const KEY = "sleep-crash-test-key-0123456789abcdef";

const effect = (tool: string) => () =>
  void appendFileSync(effects, `${JSON.stringify({ tool, pid: process.pid, at: Date.now() })}\n`);
const registry = new ToolRegistry().tool("send", effect("send")).tool("remind", effect("remind"));
const flow = new Flow("reminder", { state: z.object({ to: z.string() }) })
  .node("remind", async (_state, ctx) => {
    await ctx.call("send", {});
    await ctx.sleep(Number(sleepMs));
    await ctx.call("remind", {});
  })
  .end("remind");
const store = new SQLiteCheckpointStore(db);
const runner = new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, lease: { ms: 1_000 } });

if (mode === "start") console.log(`asleep ${JSON.stringify(await runner.run(flow, { to: "ada" }, { runId }))}`);
const worker = startWorker({
  serve: [runner.served(flow)],
  pollMs: Number(pollMs),
  maxPollMs: Number(pollMs),
  stopOnSignals: false,
});
// When it began to poll: a busy machine may take seconds to start a process.
console.log(`serving ${Date.now()}`);
for (;;) {
  const latest = await store.latest(runId);
  if (latest.status === "done") break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await worker.stop();
console.log("done");
await store.close();
