/**
 * A worker of the fork tests, on the SQLite file `db`: `five` runs the
 * five-step run `orig` to its end on the first code and prints "done"; `kill`
 * runs run `killed` of two calls and prints "in b" once `b` runs (its
 * `started` record landed, and `a`'s `done` with it), then waits there until
 * the test kills it. The tools append to `effects`.
 */
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { fiveSteps, runner, START, twoCalls } from "./fork-flows.js";

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
  void runner(store, effects, inB).run(twoCalls, START, { runId: "killed" });
}
