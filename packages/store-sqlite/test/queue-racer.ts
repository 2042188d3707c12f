/**
 * One process of the queue race (queue-race.test.ts): opens the store twice on the file, prints "ready", and on
 * "go" (stdin) races WORKERS takes of the queue's runs, each held a moment then ended. Prints, for each run it
 * took, `took {runId, from, to}`: `from` read once its take resolved, `to` before its end was sent, both by
 * Date.now, so the store held the run over the whole of it; and "refused N" for its takes the queue refused.
 */
import { createInterface } from "node:readline";
import { CheckpointConflict, type CheckpointRow, LeaseHeld, type QueuePlace, QueueFull } from "@durable/core/store";
import { SQLiteCheckpointStore } from "../src/index.js";

const [path, queue, flow, name] = process.argv.slice(2) as [string, string, string, string];
const WORKERS = 4;
const place: QueuePlace = { queue, priority: 0, concurrency: 2 };
const stores = [new SQLiteCheckpointStore(path), new SQLiteCheckpointStore(path)];
const row = (step: number, segment: number, status: CheckpointRow["status"]): CheckpointRow => ({
  status,
  segment,
  name: flow,
  kind: "flow",
  sealed: `d${step}`,
  queue: place,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let refused = 0;

async function unfinished(store: SQLiteCheckpointStore): Promise<boolean> {
  for await (const _ of store.listUnfinished(flow)) return true;
  return false;
}

async function worker(i: number): Promise<void> {
  const store = stores[i % stores.length] as SQLiteCheckpointStore;
  const owner = `${name}-${i}#racer`;
  const giveUp = Date.now() + 60_000;
  while (Date.now() < giveUp) {
    let took = false;
    for await (const { runId } of store.listQueued(queue)) {
      const { step, segment } = await store.latest(runId);
      try {
        await store.save(runId, step + 1, row(step + 1, segment + 1, "running"), { owner, ms: 30_000 });
      } catch (error) {
        if (error instanceof QueueFull) {
          refused += 1;
          break;
        }
        if (error instanceof CheckpointConflict || error instanceof LeaseHeld) continue;
        throw error;
      }
      const from = Date.now();
      await sleep(5 + Math.random() * 20);
      const to = Date.now();
      console.log(`took ${JSON.stringify({ runId, from, to })}`);
      await store.save(runId, step + 2, row(step + 2, segment + 1, "done"));
      took = true;
      break;
    }
    if (!took && !(await unfinished(store))) return;
    if (!took) await sleep(2);
  }
  throw new Error(`${owner} gave up with runs left`);
}

console.log("ready");
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once("line", () => resolve()));
await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
console.log(`refused ${refused}`);
for (const store of stores) await store.close();
process.exit(0);
