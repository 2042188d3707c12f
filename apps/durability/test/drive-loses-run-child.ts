/**
 * A worker that drives run "r" of the flow on the SQLite file `db` with a 600 ms lease; its hold tool hangs
 * until its `ctx.signal` aborts, writing to `effects` as "child":
 *   drive-loses-run-child.ts <db> <effects>
 * It prints "outcome done", or "outcome <error name>", when its drive ends.
 */
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { flow, runner, tools } from "./drive-loses-run.js";

const [db, effects] = process.argv.slice(2) as [string, string];
const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
const registry = tools(effects, "child", true);
// The process lives on as a worker's would (a server, a standing worker): the lease keeper's timer does not hold it.
const alive = setInterval(() => undefined, 1_000);
const driving = runner(store, registry, 600).run(flow, {}, { runId: "r" });
const outcome = await driving.then(
  () => "done",
  (error: unknown) => (error instanceof Error ? error.name : String(error)),
);
console.log(`outcome ${outcome}`);
clearInterval(alive);
await store.close();
