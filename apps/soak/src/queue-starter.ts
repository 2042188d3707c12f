/**
 * The queue soak's starter process: queue-starter.ts <config as JSON>
 * (`StarterConfig`). It starts every run of the soak on the soak's queue, in
 * eight at a time, each with its customer as its concurrency key, with
 * `runner.start` (no driving: the workers serving the queue take them), then
 * writes `startedFile`, prints "started <n>" and exits. A start it retries after a store failure
 * starts nothing new (the run id is the same).
 */
import { writeFileSync } from "node:fs";
import { Executor, StoreUnavailable } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { customerOf, type QueueSoak, soakQueue } from "./queue.js";
import { KEY, openSoakStore } from "./store.js";
import { LedgerWriter } from "./ledger.js";
import { order, runIdOf, SOAK_FLOW, soakTools } from "./tickets.js";

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
// A runner checks its flows' tools are registered; the starter runs none (the workers do), so its ledger is nowhere.
const tools = soakTools(new LedgerWriter("/dev/null", "starter"));
const runner = new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
const queue = soakQueue(config.queue);
const LANES = 8;
const next = Array.from({ length: config.runs }, (_, k) => k).values();
await Promise.all(
  Array.from({ length: LANES }, async () => {
    for (const k of next)
      for (;;) {
        try {
          const concurrencyKey = customerOf(k, config.queue);
          await runner.start(SOAK_FLOW, order(k), { runId: runIdOf(k), queue, concurrencyKey });
          break;
        } catch (error) {
          if (!(error instanceof StoreUnavailable)) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
  }),
);
writeFileSync(config.startedFile, `${config.runs}\n`);
console.log(`started ${config.runs}`);
await store.close();
