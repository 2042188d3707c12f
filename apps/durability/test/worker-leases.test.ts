import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStore, Executor, LeaseHeld, startWorker, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { storeWith } from "@durable/test-utils/stores";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

// Standing workers on a real SQLite file: two of them on two connections take dead runs over, each charge made
// once; and a live lease is judged by the store's clock, not by a worker's Date.now.

const KEY = "sqlite-worker-tests-key-0123456789abcdef";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const State = z.object({ note: z.string().default("") });
const flow = new Flow("orders", { state: State })
  .node("hold", new Call("hold", { args: () => ({}), into: "note" }))
  .node("charge", new Call("charge", { args: () => ({}), into: "note" }))
  .edge("hold", "charge")
  .end("charge");

const dirs: string[] = [];
const stores: SQLiteCheckpointStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(db: string): SQLiteCheckpointStore {
  const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
  stores.push(store);
  return store;
}

function file(): string {
  const dir = mkdtempSync(join(tmpdir(), "durable-worker-leases-"));
  dirs.push(dir);
  return join(dir, "runs.db");
}

function tools() {
  const ran = { hold: 0, charge: 0 };
  let hang = false;
  const registry = new ToolRegistry()
    .tool(
      "hold",
      async () => {
        ran.hold += 1;
        if (hang) await new Promise(() => {});
        return "held";
      },
      { idempotent: true },
    )
    .tool("charge", () => {
      ran.charge += 1;
      return "charged";
    });
  return { ran, registry, hangs: (on: boolean) => (hang = on) };
}

const runner = (store: CheckpointStore, registry: ToolRegistry, owner: string, ms: number) =>
  new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, lease: { owner, ms } });

/** A store through which a worker dies: renewals and releases never answer. */
const dying = (store: CheckpointStore) =>
  storeWith(store, { renew: () => new Promise(() => {}), release: () => new Promise(() => {}) });

describe("standing workers on one SQLite file", () => {
  it("two workers on two connections take 20 dead runs over: each run done, each charge made once", async () => {
    const db = file();
    const t = tools();
    t.hangs(true);
    const ids = Array.from({ length: 20 }, (_, i) => `r${i}`);
    for (const runId of ids) void runner(dying(open(db)), t.registry, "a", 100).run(flow, {}, { runId });
    // Every run's worker hangs inside its hold before the others start: on a busy machine some reach it late.
    while (t.ran.hold < ids.length) await sleep(5);
    t.hangs(false);
    const workers = ["b", "c"].map((owner) =>
      startWorker({
        serve: [runner(open(db), t.registry, owner, 200).served(flow)],
        concurrency: 2,
        pollMs: 10,
        maxPollMs: 20,
        stopOnSignals: false,
      }),
    );
    const store = open(db);
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(10)) {
      const statuses = await Promise.all(ids.map(async (runId) => (await store.latest(runId)).status));
      if (statuses.every((s) => s === "done")) break;
    }
    await Promise.all(workers.map((w) => w.stop()));
    expect(t.ran.charge).toBe(20);
    expect(workers.map((w) => w.status().finished).reduce((a, b) => a + b)).toBe(20);
  });

  it("a live lease is judged by SQLite's clock: another connection with Date.now an hour ahead cannot claim it", async () => {
    const db = file();
    const t = tools();
    t.hangs(true);
    void runner(open(db), t.registry, "a", 300).run(flow, {}, { runId: "r" });
    await sleep(50);
    const real = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => real() + 3_600_000);
    const b = runner(open(db), t.registry, "b", 300);
    await sleep(400);
    await expect(b.recover(flow, "r")).rejects.toThrow(LeaseHeld);
    expect(await b.recoverAll(flow)).toEqual(new Map());
  });
});
