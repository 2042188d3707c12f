/**
 * One process with two standing workers (owners "w1" and "w2") on the SQLite file `db`, both stopping on SIGTERM:
 *   worker-sigterm-child.ts <db> [single]
 * w1 serves a flow with no runs; w2 takes over run "r" of a dead worker, whose tool then takes 800 ms: it prints
 * "inside" when the tool starts. With "single", w2 runs alone (the control).
 */
import { Executor, startWorker, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { storeWith } from "@durable/test-utils/stores";
import { z } from "zod";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const KEY = "sigterm-test-key-0123456789abcdef-xyz";
const db = process.argv[2];
if (db === undefined) {
  process.stderr.write("usage: worker-sigterm-child.ts <db> [single]\n");
  process.exit(2);
}
const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
let calls = 0;
const registry = new ToolRegistry().tool(
  "work",
  async () => {
    calls += 1;
    // The dead worker's call hangs; the standing worker's takes 800 ms.
    if (calls === 1) await new Promise(() => {});
    console.log("inside");
    await new Promise((resolve) => setTimeout(resolve, 800));
    return "worked";
  },
  { idempotent: true },
);
const State = z.object({ note: z.string().default("") });
const long = new Flow("long", { state: State })
  .node("work", new Call("work", { args: () => ({}), into: "note" }))
  .end("work");
const idle = new Flow("idle", { state: State })
  .node("work", new Call("work", { args: () => ({}), into: "note" }))
  .end("work");
const runner = (checkpoints: typeof store | ReturnType<typeof storeWith>, owner: string, ms: number) =>
  new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY, lease: { owner, ms } });

// A worker that dies inside the tool: it never renews nor releases its 150 ms lease.
const dead = storeWith(store, { renew: () => new Promise(() => {}), release: () => new Promise(() => {}) });
void runner(dead, "dead", 150).run(long, {}, { runId: "r" });

if (process.argv[3] !== "single")
  startWorker({ serve: [runner(store, "w1", 5_000).served(idle)], pollMs: 20, stopDeadlineMs: 3_000 });
startWorker({ serve: [runner(store, "w2", 5_000).served(long)], pollMs: 20, stopDeadlineMs: 3_000 });
