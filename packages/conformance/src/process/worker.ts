/**
 * The child process of the crash and race groups. It opens the store under
 * test with the initializer's opener module, then either
 *   worker <opener> <handle> <effects> run <scenario> <runId>
 *     takes a new run to its end and prints "finished" (unless a fault point,
 *     armed by DURABLE_FAULT_POINT, kills it first), or
 *   worker <opener> <handle> <effects> serve
 *     prints "ready", then answers stdin commands, one line each:
 *       recover <scenario> <runId>  takes a crashed run to its end: "recovered <runId> <its Recovery as JSON>"
 *       race <scenario> <runId>     reads the run's latest checkpoint, prints "at-claim <runId>", and claims it only
 *                                   on "go <runId>", so racing workers claim the same step at once:
 *                                   "won <runId> <status>", "conflict <runId>", or "unavailable <runId>" when
 *                                   the store did not answer the claim (a StoreUnavailable before the claim
 *                                   is tried again, up to 5 times)
 *     Anything else that goes wrong is "error <runId> <message>".
 *   worker <opener> <handle> <effects> batches <size> <runId>
 *     commits batches of `size` records and a checkpoint until it is killed (see batches.ts).
 * Every call record it writes is witnessed in `<effects>.acks` (see acknowledgments.ts).
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { isAbsolute } from "node:path";
import { CheckpointConflict, type CheckpointStore, StoreUnavailable } from "@durable/core";
import { acknowledging, acknowledgmentsFile, issuedRecords } from "./acknowledgments.js";
import { commitBatches } from "./batches.js";
import { claimBarrier } from "./claim-barrier.js";
import { ScenarioDriver, type ScenarioName } from "./scenarios.js";
import { ANCHOR_VARIABLE, type AnchorHandle, openAnchor } from "./anchors.js";

const [opener, handle, effects, mode, scenario, runId] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  ScenarioName,
  string,
];
const url = isAbsolute(opener) ? pathToFileURL(opener).href : opener;
const open = ((await import(url)) as { default: (handle: string) => CheckpointStore | Promise<CheckpointStore> })
  .default;
const opened = await open(handle);
const acks = acknowledgmentsFile(effects);
const store = claimBarrier(acknowledging(opened, acks));
const named = process.env[ANCHOR_VARIABLE];
const anchor = named === undefined ? undefined : await openAnchor(JSON.parse(named) as AnchorHandle);
const driver = new ScenarioDriver(store, effects, anchor, (runId) => issuedRecords(acks, runId));

if (mode === "batches") {
  await commitBatches(opened, runId, Number(scenario));
} else if (mode === "run") {
  await driver.run(scenario, runId);
  console.log("finished");
  await store.close();
} else {
  const go = new Map<string, () => void>();
  console.log("ready");
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, name, id] = line.split(" ") as [string, ScenarioName, string];
    if (command === "go") go.get(name)?.();
    else if (command === "recover") {
      driver.recoverToEnd(name, id).then(
        (recovery) => console.log(`recovered ${id} ${JSON.stringify(recovery)}`),
        (error: unknown) => console.log(`error ${id} ${oneLine(error)}`),
      );
    } else if (command === "race") {
      let atClaim = false;
      store.hold = () => {
        atClaim = true;
        console.log(`at-claim ${id}`);
        return new Promise((release) => go.set(id, release));
      };
      // A store that did not answer before the claim (a read on a starved machine) changed nothing: read again.
      // The race is at the claim.
      const race = async (tries = 5): Promise<string> => {
        try {
          return await driver.recoverOnce(name, id);
        } catch (error) {
          if (atClaim || tries === 1 || !(error instanceof StoreUnavailable)) throw error;
          return race(tries - 1);
        }
      };
      race().then(
        (status) => console.log(`won ${id} ${status}`),
        (error: unknown) => console.log(raceAnswer(id, error)),
      );
    }
  }
  await store.close();
}

/**
 * How a racing claim that threw ended: refused (`conflict`), unknown (`unavailable`: the store did not
 * answer the claim, which it may or may not have applied), or anything else (`error`).
 */
function raceAnswer(id: string, error: unknown): string {
  if (error instanceof CheckpointConflict) return `conflict ${id}`;
  if (error instanceof StoreUnavailable) return `unavailable ${id}`;
  return `error ${id} ${oneLine(error)}`;
}

/** An error on one line: the test reads one line per answer. */
function oneLine(error: unknown): string {
  return String(error).replace(/\s*\n\s*/g, " ");
}
