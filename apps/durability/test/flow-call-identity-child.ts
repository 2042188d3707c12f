/**
 * One process of a call-identity case: `run <dir>` starts the case's flow on
 * the SQLite file in `dir` (DURABLE_FAULT_POINT may kill it), `recover <dir>`
 * goes on with it under the recovery latencies, rerunning calls in doubt, and
 * prints what it ended with as one JSON line.
 */
import { readFileSync } from "node:fs";
import { Executor, RecoveryNeedsDecision } from "@durable/core";
import { CheckpointNotFound } from "@durable/core/store";
import { DurableRun, readEnvelope, sealerFor } from "@durable/core/runner";
import { FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import {
  INPUT,
  KEY,
  RUN_ID,
  casePaths,
  flowOf,
  toolsFor,
  type CallCase,
  type Recovered,
} from "./flow-call-identity.js";

const [mode, dir] = process.argv.slice(2);
if ((mode !== "run" && mode !== "recover") || dir === undefined) {
  process.stderr.write("usage: flow-call-identity-child.ts run|recover <case dir>\n");
  process.exit(2);
}
const paths = casePaths(dir);
const c = JSON.parse(readFileSync(paths.case, "utf8")) as CallCase;
const flow = flowOf(c);
// "normal" loses nothing on a process crash, which is all these tests do.
const store = new SQLiteCheckpointStore(paths.db, { synchronous: "normal" });
const tools = toolsFor(c.latencies[mode === "run" ? 0 : 1], paths.effects);
const runner = new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });

if (mode === "run") {
  const result = await runner.run(flow, INPUT, { runId: RUN_ID });
  console.log(JSON.stringify(result));
} else {
  console.log(JSON.stringify(await recover()));
}
await store.close();

async function recover(): Promise<Recovered> {
  const latest = await DurableRun.latest(store, sealerFor(store, KEY), RUN_ID).catch((error: unknown) => {
    if (error instanceof CheckpointNotFound) return undefined;
    throw error;
  });
  if (latest === undefined) {
    // Killed before the first checkpoint: the run never started, so start it.
    const result = await runner.run(flow, INPUT, { runId: RUN_ID });
    return { status: result.status, state: result.status === "done" ? result.state : INPUT, inDoubt: [] };
  }
  // Killed after the last checkpoint: the run is done and there is nothing to recover.
  if (latest.status === "done")
    return {
      status: "done",
      state: readEnvelope(RUN_ID, latest.data).program["state"] as Recovered["state"],
      inDoubt: [],
    };
  let inDoubt: Recovered["inDoubt"] = [];
  // The first process was killed: this one takes its lease over.
  const result = await runner.recover(flow, RUN_ID, { takeOver: true }).catch((error: unknown) => {
    if (!(error instanceof RecoveryNeedsDecision)) throw error;
    inDoubt = error.calls.map(({ tool, why }) => [tool, why] as const);
    return runner.recover(flow, RUN_ID, { rerunInDoubt: true, takeOver: true });
  });
  return { status: result.status, state: result.status === "done" ? result.state : INPUT, inDoubt };
}
