/**
 * The queue soak's starter process: queue-starter.ts <config as JSON>
 * (`StarterConfig`). It starts every run of the soak on the soak's queue, in
 * eight at a time, each with its customer as its concurrency key, with
 * `runner.start` (no driving: the workers serving the queue take them), then
 * writes `startedFile`, prints "started <n>" and exits. A start it retries after a store failure
 * starts nothing new (the run id is the same).
 */
import { writeFileSync } from "node:fs";
import { customerOf, type QueueSoak, soakQueue } from "./queue.js";
import { openSoakStore, untilStored } from "./store.js";
import { order, runIdOf, soakFlow, startingRunner } from "./tickets.js";

export interface StarterConfig {
  /** Written once every run is started: the workers finish only after it exists. */
  readonly startedFile: string;
  readonly url: string;
  readonly prefix: string;
  readonly runs: number;
  readonly queue: QueueSoak;
}

const config = JSON.parse(process.argv[2] ?? "{}") as StarterConfig;
const store = await openSoakStore(config.url, config.prefix);
const runner = startingRunner(store);
const queue = soakQueue(config.queue);
const LANES = 8;
const next = Array.from({ length: config.runs }, (_, k) => k).values();
await Promise.all(
  Array.from({ length: LANES }, async () => {
    for (const k of next) {
      const concurrencyKey = customerOf(k, config.queue);
      await untilStored(() => runner.start(soakFlow(), order(k), { runId: runIdOf(k), queue, concurrencyKey }));
    }
  }),
);
writeFileSync(config.startedFile, `${config.runs}\n`);
console.log(`started ${config.runs}`);
await store.close();
