/**
 * One soak worker: worker.ts <store url> <prefix> <slot> <workers> <runs> <ledger> <in-doubt log> <replay log>
 * On start it recovers its slot's unfinished runs, then takes its share of the
 * runs (every run k with k % workers = slot) until each exists. It prints "ran"
 * after each run it took to the end, and "finished".
 */
import { appendFileSync } from "node:fs";
import { CheckpointNotFound, Executor, RecoveryNeedsDecision, type EventSink } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { KEY, openSoakStore } from "./store.js";
import { order, runIdOf, soakFlow, soakTools } from "./tickets.js";

const [url, prefix, slotArg, workersArg, runsArg, ledger, inDoubtLog, replayLog] = process.argv.slice(2) as [string, string, string, string, string, string, string, string];
const [slot, workers, runs] = [Number(slotArg), Number(workersArg), Number(runsArg)];
const store = await openSoakStore(url, prefix);
// Every call recovery says it replayed from the log; the soak checks each against the ledger.
const events: EventSink = (event) => {
  if (event.type === "run.recovered" && event.replayed.length > 0) appendFileSync(replayLog, event.replayed.map((call) => `${event.runId} ${call.callId}\n`).join(""));
};
const runner = new FlowRunner(new Executor(soakTools(ledger)), { checkpoints: store, checkpointKey: KEY, events });
const flow = soakFlow(slot);

// A restart: finish what this slot left. Calls in doubt run again: the card and the
// mail provider take the idempotency key, so a second execution has no second effect.
for (const [runId, result] of await runner.recoverAll(flow)) {
  if (result instanceof RecoveryNeedsDecision) {
    appendFileSync(inDoubtLog, `${runId} ${result.calls.map(([tool]) => tool).join(",")}\n`);
    await runner.recover(flow, runId, { rerunInDoubt: true });
  } else if (result instanceof Error) {
    throw result;
  }
}

const mine = Array.from({ length: runs }, (_, k) => k).filter((k) => k % workers === slot);
let next = 0;
const lane = async () => {
  while (next < mine.length) {
    const k = mine[next++]!;
    const exists = await store.latest(runIdOf(k)).then(
      () => true,
      (error: unknown) => (error instanceof CheckpointNotFound ? false : Promise.reject(error)),
    );
    if (!exists) {
      await runner.run(flow, order(k), { runId: runIdOf(k) });
      console.log("ran");
    }
  }
};
await Promise.all([lane(), lane(), lane(), lane()]);
console.log("finished");
await store.close();
