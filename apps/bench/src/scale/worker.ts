/**
 * One worker process of the scale measure:
 *   worker <config JSON>
 * opens the store the config names, prints "ready", and on a line "go <ms>"
 * runs the tickets flow, `concurrency` runs at once, until that many ms have
 * passed; then prints "ran <runs> <ms> <failed>" and exits. A run that fails
 * (a store that did not answer in time on a busy machine) is counted, not
 * fatal: the next one goes on.
 */
import { createInterface } from "node:readline";
import { createClient, createCluster } from "redis";
import { RedisCheckpointStore } from "@durable/store-redis";
import { ORDER, runner, tickets } from "../workload.js";

/** What a worker is told: where the store is, its prefix, and how it runs. */
export interface ScaleWorkerConfig {
  /** One node's URL, or a cluster's root nodes. */
  readonly redis: { readonly url: string } | { readonly rootNodes: ReadonlyArray<{ url: string }> };
  readonly prefix: string;
  /** The store's `replicas` option. */
  readonly replicas: number;
  readonly concurrency: number;
}

const config = JSON.parse(process.argv[2] ?? "{}") as ScaleWorkerConfig;
const { redis } = config;
const store = new RedisCheckpointStore(
  "url" in redis ? () => createClient({ url: redis.url }) : () => createCluster({ rootNodes: [...redis.rootNodes] }),
  { prefix: config.prefix, replicas: config.replicas },
);
const worker = runner(store);
// A first run connects (and loads the scripts) before the clock starts; a busy machine may need a few tries.
for (let attempt = 1; ; attempt++) {
  try {
    await worker.run(tickets, ORDER, { runId: `warm-${process.pid}-${attempt}` });
    break;
  } catch (error) {
    if (attempt === 5) throw error;
  }
}
console.log("ready");

const go = await new Promise<number>((resolve) =>
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line.startsWith("go ")) resolve(Number(line.slice(3)));
  }),
);
const started = performance.now();
let [runs, failed] = [0, 0];
await Promise.all(
  Array.from({ length: config.concurrency }, async (_, lane) => {
    for (let i = 0; performance.now() - started < go; i++) {
      try {
        await worker.run(tickets, ORDER, { runId: `${process.pid}-${lane}-${i}` });
        runs += 1;
      } catch {
        failed += 1;
      }
    }
  }),
);
console.log(`ran ${runs} ${Math.round(performance.now() - started)} ${failed}`);
await store.close();
process.exit(0);
