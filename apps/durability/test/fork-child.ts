/**
 * A worker of the fork tests, on the SQLite file `db`: `five` runs the
 * five-step run `orig` to its end on the first code and prints "done"; `kill`
 * runs run `killed` of two calls (under a lease of `KILLED_LEASE_MS`) and
 * prints "in b" once `b` runs (its `started` record landed, and `a`'s `done`
 * with it), then waits there until the test kills it. The tools append to `effects`.
 */
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { fiveSteps, KILLED_LEASE_MS, runner, START, twoCalls } from "./fork-flows.js";

const [mode, db, effects] = process.argv.slice(2) as ["five" | "kill", string, string];
const store = new SQLiteCheckpointStore(db);
if (mode === "five") {
  await runner(store, effects).run(fiveSteps("v1"), START, { runId: "orig" });
  console.log("done");
  await store.close();
} else {
  const inB = () => {
    console.log("in b");
    return new Promise<void>(() => {});
  };
  // A short lease: the test forks the run once the killed worker's lease ran out.
  void runner(store, effects, inB, KILLED_LEASE_MS).run(twoCalls, START, { runId: "killed" });
}
