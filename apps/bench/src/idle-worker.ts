/**
 * `pnpm --filter @durable-apps/bench idle-worker`: the store reads an idle
 * worker makes per poll while runs wait for a decision, at 100 and 10,000 of
 * them, on the memory store and on a SQLite file. What it shows: the cost of
 * a poll does not grow with the runs that wait. Not a timed test: it counts.
 *
 * Each run is left the real way: its charge (not idempotent) outlasts its
 * timeout, so the call is in doubt and the drive stops; one recovery stops
 * for a decision and saves the run waiting for one. Then a worker serving the
 * flow polls with nothing to do, through a store that counts what it reads.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStore, Executor, MemoryCheckpointStore, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { countingReads } from "@durable/test-utils/stores";
import { alignColumns } from "@durable-apps/shared/table";
import { z } from "zod";
import { KEY } from "./workload.js";

const SIZES = [100, 10_000];
const POLLS = 20;
const POLL_MS = 10;
/** Runs started at once while the waiting runs are made. */
const AT_ONCE = 200;

/** One node charging a card that never answers within its timeout: every run leaves its charge in doubt. */
const checkout = new Flow("checkout", { state: z.object({ order: z.number() }) })
  .node("charge", async (s, ctx) => {
    await ctx.call("charge_card", { order: s.order });
    return s;
  })
  .end("charge");

const tools = new ToolRegistry().tool("charge_card", () => new Promise<never>(() => {}), { timeoutMs: 5 });

interface Figure {
  readonly store: string;
  readonly waiting: number;
  readonly polls: number;
  readonly listings: number;
  readonly runReads: number;
}

/** Leaves `count` runs waiting for a decision in `store`. */
async function leaveWaiting(store: CheckpointStore, count: number): Promise<void> {
  const runner = new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
  for (let i = 0; i < count; i += AT_ONCE) {
    const batch = Array.from({ length: Math.min(AT_ONCE, count - i) }, (_, j) => i + j);
    await Promise.all(
      batch.map((n) => runner.run(checkout, { order: n }, { runId: `run-${n}` }).catch(() => undefined)),
    );
  }
  let stopped = 0;
  for await (const settled of runner.recoverEach(checkout, { concurrency: 16 })) if (!settled.ok) stopped += 1;
  if (stopped !== count) throw new Error(`${stopped} of ${count} runs stopped for a decision`);
}

/** What an idle worker reads over POLLS polls, while `count` runs wait for a decision. */
async function measure(name: string, open: () => CheckpointStore, count: number): Promise<Figure> {
  const base = open();
  try {
    await leaveWaiting(base, count);
    const { store, reads } = countingReads(base);
    const runner = new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
    const worker = startWorker({
      serve: [runner.served(checkout)],
      pollMs: POLL_MS,
      maxPollMs: POLL_MS,
      stopOnSignals: false,
    });
    while (reads.listings < POLLS) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    await worker.stop();
    return { store: name, waiting: count, polls: reads.listings, listings: reads.listings, runReads: reads.runReads };
  } finally {
    await base.close();
  }
}

const dir = join(tmpdir(), `durable-idle-worker-${randomUUID()}`);
mkdirSync(dir, { recursive: true });
const stores: Array<[string, () => CheckpointStore]> = [
  ["memory", () => new MemoryCheckpointStore()],
  ["sqlite", () => new SQLiteCheckpointStore(join(dir, `${randomUUID()}.db`), { synchronous: "normal" })],
];
const figures: Figure[] = [];
try {
  for (const [name, open] of stores) for (const size of SIZES) figures.push(await measure(name, open, size));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log("store reads of an idle worker, per poll, while runs wait for a decision\n");
console.log(
  alignColumns([
    ["store", "waiting runs", "polls", "listings per poll", "run reads per poll"],
    ...figures.map((f) => [
      f.store,
      f.waiting.toLocaleString("en"),
      String(f.polls),
      (f.listings / f.polls).toFixed(1),
      (f.runReads / f.polls).toFixed(1),
    ]),
  ]).join("\n"),
);
