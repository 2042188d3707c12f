/**
 * One soak worker: worker.ts <store url> <prefix> <slot> <workers> <runs> <ledger> <in-doubt log> <replay log>
 * On start it recovers its slot's unfinished runs, then takes its share of the
 * runs (every run k with k % workers = slot) until each exists. It prints
 * "started <run id>" and "ran <run id>" around each run it took to the end,
 * "recovered <run id>" after each run it recovered, "unavailable" each
 * time the store was (it then waits and starts over from recovery: never
 * exits on it), "op <ms>" for a slow store operation, and "finished".
 * SOAK_TOOL_MS: how long each tool takes (default 0–4 ms).
 */
import { appendFileSync } from "node:fs";
import { CheckpointNotFound, type EventSink, Executor, RecoveryNeedsDecision, StoreUnavailable } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { KEY, openSoakStore } from "./store.js";
import { order, runIdOf, soakFlow, soakTools } from "./tickets.js";
import { timedStore } from "./timed-store.js";

const [url, prefix, slotArg, workersArg, runsArg, ledger, inDoubtLog, replayLog] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const [slot, workers, runs] = [Number(slotArg), Number(workersArg), Number(runsArg)];
const toolMs = process.env["SOAK_TOOL_MS"] === undefined ? undefined : Number(process.env["SOAK_TOOL_MS"]);
const store = timedStore(await openSoakStore(url, prefix), (ms) => console.log(`op ${Math.round(ms)}`));
// Every call recovery says it replayed from the log; the soak checks each against the ledger.
const events: EventSink = (event) => {
  if (event.type === "run.recovered" && event.replayed.length > 0)
    appendFileSync(replayLog, event.replayed.map((call) => `${event.runId} ${call.callId}\n`).join(""));
};
const runner = new FlowRunner(new Executor(soakTools(ledger, toolMs)), {
  checkpoints: store,
  checkpointKey: KEY,
  events,
});
const flow = soakFlow(slot);

// A restart: finish what this slot left, taking over the leases of the slot's worker that was
// killed. Calls in doubt run again: the card and the mail provider take the idempotency key,
// so a second execution has no second effect.
async function recoverMine(): Promise<void> {
  for (const [runId, result] of await runner.recoverAll(flow, { takeOver: true })) {
    if (result instanceof RecoveryNeedsDecision) {
      appendFileSync(inDoubtLog, `${runId} ${result.calls.map(({ tool }) => tool).join(",")}\n`);
      await runner.recover(flow, runId, { rerunInDoubt: true, takeOver: true });
    } else if (result instanceof Error) {
      throw result;
    }
    console.log(`recovered ${runId}`);
  }
}

const mine = Array.from({ length: runs }, (_, k) => k).filter((k) => k % workers === slot);

/** Takes the runs not yet made; every lane stops taking new ones once one of them failed. */
async function takeMine(): Promise<void> {
  const queue = mine.values(); // one iterator: each lane takes the next run from it
  let failed = false;
  const lane = async () => {
    for (const k of queue) {
      if (failed) return;
      try {
        const exists = await store.latest(runIdOf(k)).then(
          () => true,
          (error: unknown) => (error instanceof CheckpointNotFound ? false : Promise.reject(error)),
        );
        if (!exists) {
          console.log(`started ${runIdOf(k)}`);
          await runner.run(flow, order(k), { runId: runIdOf(k) });
          console.log(`ran ${runIdOf(k)}`);
        }
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const lanes = await Promise.allSettled([lane(), lane(), lane(), lane()]);
  const failure = lanes.find((lane) => lane.status === "rejected");
  if (failure !== undefined) throw failure.reason;
}

// The store being away is "try again later": wait, then start over from recovery,
// which finishes the runs the failure cut short (no lane is left running meanwhile).
for (;;) {
  try {
    await recoverMine();
    await takeMine();
    break;
  } catch (error) {
    if (!(error instanceof StoreUnavailable)) throw error;
    console.log("unavailable");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
console.log("finished");
await store.close();
