/**
 * A worker for the schedule test, on the SQLite file `db`: it serves the
 * schedule "beat" (a run every `everyMs`, catchUp skip), printing
 * "serving <time>" once it polls, until it is killed. Each run's one tool
 * call appends `{ tick, pid, at }` to `effects` when it really runs: the
 * verdict reads that file, not the store.
 */
import { appendFileSync } from "node:fs";
import { Executor, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

const [db, effects, everyMs, pollMs, leaseMs] = process.argv.slice(2) as [string, string, string, string, string];
const KEY = "schedule-crash-test-key-0123456789abcdef";

// Idempotent: a run whose worker was killed inside the call runs it again on recovery (the verdict allows that one).
const registry = new ToolRegistry().tool(
  "beat",
  (args: { tick: string }) =>
    void appendFileSync(effects, `${JSON.stringify({ tick: args.tick, pid: process.pid, at: Date.now() })}\n`),
  { idempotent: true },
);
const flow = new Flow("beat", { state: z.object({ tick: z.string() }) })
  .node("beat", async (state, ctx) => {
    await ctx.call("beat", { tick: state.tick });
  })
  .end("beat");
const store = new SQLiteCheckpointStore(db);
const runner = new FlowRunner(new Executor(registry), {
  checkpoints: store,
  checkpointKey: KEY,
  lease: { ms: Number(leaseMs) },
});
const beat = runner.schedule(flow, {
  name: "beat",
  every: Number(everyMs),
  start: (tick) => ({ tick: tick.toISOString() }),
});
startWorker({ schedules: [beat], pollMs: Number(pollMs), maxPollMs: Number(pollMs), stopOnSignals: false });
console.log(`serving ${Date.now()}`);
