import {
  type CheckpointStore,
  type DurableEvent,
  InvalidInput,
  LeaseHeld,
  MemoryCheckpointStore,
  startWorker,
  StoreUnavailable,
  ToolRegistry,
} from "@durable/core";
import { DurableRun, openHistory, Sealer } from "@durable/core/runner";
import { storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// Durable sleep: the wake time is recorded once, the run is saved asleep with its lease held for the sleep, and a
// claim after the wake time runs the superstep again with its finished calls replayed and the sleep passed.

const State = z.object({ n: z.number(), note: z.string().default("") });

/** A reminder: send, sleep `ms`, remind; each tool counts its runs. */
function reminder(ms: number) {
  const ran = { send: 0, remind: 0 };
  const registry = new ToolRegistry()
    .tool("send", () => `sent ${++ran.send}`)
    .tool("remind", () => `reminded ${++ran.remind}`);
  const flow = new Flow("reminder", { state: State })
    .node("remind", async (_state, ctx) => {
      await ctx.call("send", {});
      await ctx.sleep(ms);
      return { note: await ctx.call<string>("remind", {}) };
    })
    .end("remind");
  return { ran, registry, flow };
}

async function claimable(store: CheckpointStore, name: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(name, { claimable: true })) ids.push(id);
  return ids;
}

/**
 * Waits out a run's sleep: its wake time by this clock, then until the store lists it claimable (its lease for the
 * sleep was set when the asleep save landed, a little after the wake time was taken: on a busy machine, a while).
 */
async function due(store: CheckpointStore, name: string, runId: string, wake: number): Promise<void> {
  await sleep(Math.max(0, wake - Date.now()));
  await until(async () => (await claimable(store, name)).includes(runId), 5_000);
}

describe("durable sleep", () => {
  it("saves the run asleep, holding no worker: not claimable before its wake time, and woken by a recovery after it, each call made once", async () => {
    const { ran, registry, flow } = reminder(300);
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const runner = runnerOn(store, registry, events);
    const before = Date.now();
    const asleep = await runner.run(flow, { n: 1 }, { runId: "r" });
    expect(asleep).toMatchObject({ status: "asleep", runId: "r" });
    const { until: wake, step } = asleep as { until: number; step: number };
    expect(wake).toBeGreaterThanOrEqual(before + 300);
    expect(events.find((e) => e.type === "run.asleep")).toMatchObject({ runId: "r", step, until: wake });
    expect(await store.leaseOf("r")).toMatchObject({ owner: "(asleep)" });
    expect(await claimable(store, "reminder")).toEqual([]);
    // Before its wake time a recovery claims nothing: the run is as it was saved.
    expect(await runnerOn(store, registry).recover(flow, "r")).toEqual(asleep);
    expect((await store.latest("r")).step).toBe(step);
    await due(store, "reminder", "r", wake);
    const done = await runnerOn(store, registry).recover(flow, "r");
    expect(done).toMatchObject({ status: "done", state: { note: "reminded 1" } });
    expect(ran).toEqual({ send: 1, remind: 1 });
    // The claim that woke it saved it awake: no checkpoint after the asleep one holds a wake time.
    const rows = openHistory(Sealer.withKeys(KEY), "r", (await store.history("r")) ?? []);
    expect(rows.filter((row) => row.step > step).map((row) => Object.hasOwn(row.data as object, "asleep"))).toEqual([
      false,
      false,
    ]);
  });

  it("a node that catches its sleep's stop goes on, but its calls after it wait for the wake", async () => {
    const ran: string[] = [];
    const registry = new ToolRegistry().tool("late", () => void ran.push("late"));
    const flow = new Flow("stubborn", { state: State })
      .node("n", async (_state, ctx) => {
        try {
          await ctx.sleep(200);
        } catch {
          // A node that ignores the stop.
        }
        await ctx.call("late", {}).catch(() => undefined);
        return { note: "went on" };
      })
      .end("n");
    const store = new MemoryCheckpointStore();
    const asleep = (await runnerOn(store, registry).run(flow, { n: 1 }, { runId: "s" })) as { until: number };
    expect(asleep).toMatchObject({ status: "asleep" });
    expect(ran).toEqual([]);
    await due(store, "stubborn", "s", asleep.until);
    expect(await runnerOn(store, registry).recover(flow, "s")).toMatchObject({ status: "done" });
    expect(ran).toEqual(["late"]);
  });

  it("a claim before the wake time is LeaseHeld: the store holds the lease for the sleep; a cancel ends the run asleep", async () => {
    const { ran, registry, flow } = reminder(60_000);
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(flow, { n: 1 }, { runId: "r" });
    const latest = await DurableRun.latest(store, Sealer.withKeys(KEY), "r");
    const claim = DurableRun.claim(store, Sealer.withKeys(KEY), latest, { lease: { owner: "w#12345678", ms: 1000 } });
    await expect(claim).rejects.toThrow(LeaseHeld);
    await runnerOn(store, registry).cancel(flow, "r", "the customer unsubscribed");
    const cancelled = await DurableRun.latest(store, Sealer.withKeys(KEY), "r");
    expect(cancelled.status).toBe("failed");
    expect(cancelled.data).not.toHaveProperty("asleep");
    expect(ran).toEqual({ send: 1, remind: 0 });
  });

  it("a worker wakes a sleeping run within a poll of its wake time", async () => {
    const { ran, registry, flow } = reminder(400);
    const store = new MemoryCheckpointStore();
    const asleep = (await runnerOn(store, registry).run(flow, { n: 1 }, { runId: "r" })) as { until: number };
    const worker = startWorker({
      serve: [runnerOn(store, registry).served(flow)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      await until(async () => (await store.latest("r")).status === "done", 5_000);
      const woke = Date.now();
      expect(woke).toBeGreaterThanOrEqual(asleep.until);
      expect(woke - asleep.until).toBeLessThan(2_000);
      expect(ran).toEqual({ send: 1, remind: 1 });
    } finally {
      await worker.stop();
    }
  });

  it("a worker whose listing gives a run before its wake time (its clock behind the store's) leaves it until then", async () => {
    const { registry, flow } = reminder(60_000);
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(flow, { n: 1 }, { runId: "early" });
    let reads = 0;
    // A listing that gives the run at every poll, as a store whose clock ran ahead of the worker's would.
    const early = storeWith(store, {
      async *listUnfinished() {
        yield "early";
      },
      latest: (runId) => {
        reads++;
        return store.latest(runId);
      },
    });
    const worker = startWorker({
      serve: [runnerOn(early, registry).served(flow)],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await sleep(400);
    await worker.stop();
    // One recovery read it and found it asleep: about twenty polls later, it was read again (has an operator woken
    // it?) once every three idle polls at most, not at every poll.
    expect(reads).toBeGreaterThan(1);
    expect(reads).toBeLessThanOrEqual(9);
    expect(worker.status().finished).toBe(1);
  });

  it("a worker wakes 40 runs due at once, each call made once, 32 driven at once with no listener-leak warning", async () => {
    const { ran, registry, flow } = reminder(300);
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await Promise.all(Array.from({ length: 40 }, (_, i) => runner.run(flow, { n: i }, { runId: `m-${i}` })));
    const warnings: string[] = [];
    const warned = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", warned);
    const worker = startWorker({
      serve: [runnerOn(store, registry).served(flow)],
      concurrency: 32,
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      await until(async () => ran.remind === 40, 10_000);
    } finally {
      await worker.stop();
      process.off("warning", warned);
    }
    expect(ran).toEqual({ send: 40, remind: 40 });
    expect(warnings).toEqual([]);
  });

  it("nodes of one superstep that sleep apart: the run wakes at the earliest, sleeps again until the latest, and goes on once both passed", async () => {
    const ran: string[] = [];
    const registry = new ToolRegistry().tool("mark", (a: { node: string }) => void ran.push(a.node));
    const node =
      (ms: number) =>
      async (
        _state: unknown,
        ctx: { sleep(ms: number): Promise<void>; call(t: string, a: { node: string }): Promise<unknown> },
      ) => {
        await ctx.call("mark", { node: `before ${ms}` });
        await ctx.sleep(ms);
        await ctx.call("mark", { node: `after ${ms}` });
      };
    const flow = new Flow("pair", { state: State })
      .node("go", () => ({}))
      .node("short", node(100))
      .node("long", node(300))
      .edge("go", ["short", "long"])
      .end("short", "long");
    const store = new MemoryCheckpointStore();
    const first = (await runnerOn(store, registry).run(flow, { n: 1 }, { runId: "p" })) as { until: number };
    await due(store, "pair", "p", first.until);
    const second = await runnerOn(store, registry).recover(flow, "p");
    expect(second).toMatchObject({ status: "asleep" });
    expect((second as { until: number }).until).toBeGreaterThan(first.until + 150);
    await due(store, "pair", "p", (second as { until: number }).until);
    expect(await runnerOn(store, registry).recover(flow, "p")).toMatchObject({ status: "done" });
    expect(ran.sort()).toEqual(["after 100", "after 300", "before 100", "before 300"]);
  });

  it("a worker cut off before its asleep save lands: the next claim sleeps until the wake time recorded first, not a new one", async () => {
    const { ran, registry, flow } = reminder(500);
    const store = new MemoryCheckpointStore();
    // The records before the save that would put the run to sleep land (the sleep's wake time among them); the
    // save does not: the store stopped answering.
    const cut = storeWith(store, {
      commit: async (runId, writes) => {
        const at = writes.findIndex((w) => w.kind === "save" && w.lease?.owner === "(asleep)");
        if (at === -1) return store.commit?.(runId, writes);
        if (at > 0) await store.commit?.(runId, writes.slice(0, at));
        throw new StoreUnavailable("cut off before the sleep");
      },
    });
    await expect(runnerOn(cut, registry).run(flow, { n: 1 }, { runId: "c" })).rejects.toThrow(StoreUnavailable);
    const recorded = (await store.calls("c")).filter((row) => row.sealed.includes('"durable:sleep"'));
    expect(recorded).toHaveLength(1);
    await sleep(100);
    const again = await runnerOn(store, registry).recover(flow, "c", { takeOver: true });
    expect(again).toMatchObject({ status: "asleep" });
    const { until: wake } = again as { until: number };
    const sealed = (recorded[0] as { sealed: string }).sealed;
    expect(wake).toBe((JSON.parse(sealed.slice(sealed.indexOf("{"))) as { result: number }).result);
    await due(store, "reminder", "c", wake);
    expect(await runnerOn(store, registry).recover(flow, "c")).toMatchObject({ status: "done" });
    expect(ran).toEqual({ send: 1, remind: 1 });
  });

  it("a wake time already passed does not sleep; bad lengths and times are InvalidInput and the run is saved failed with it", async () => {
    const registry = new ToolRegistry().tool("noop", () => "ok");
    const past = new Flow("past", { state: State })
      .node("n", async (_s, ctx) => {
        await ctx.sleepUntil(new Date(Date.now() - 1_000));
        await ctx.sleep(0);
        return { note: String(await ctx.call("noop", {})) };
      })
      .end("n");
    const store = new MemoryCheckpointStore();
    expect(await runnerOn(store, registry).run(past, { n: 1 }, { runId: "x" })).toMatchObject({ status: "done" });
    for (const [runId, wake] of [
      ["neg", (ctx: { sleep(ms: number): Promise<void> }) => ctx.sleep(-1)],
      ["frac", (ctx: { sleep(ms: number): Promise<void> }) => ctx.sleep(1.5)],
      ["text", (ctx: { sleepUntil(u: Date | number): Promise<void> }) => ctx.sleepUntil("tomorrow" as unknown as Date)],
      ["forever", (ctx: { sleepUntil(u: Date | number): Promise<void> }) => ctx.sleepUntil(Number.MAX_SAFE_INTEGER)],
      ["too-long", (ctx: { sleep(ms: number): Promise<void> }) => ctx.sleep(3e14 + 1)],
    ] as const) {
      const bad = new Flow(`bad-${runId}`, { state: State })
        .node("n", async (_s, ctx) => void (await wake(ctx)))
        .end("n");
      await expect(runnerOn(store, registry).run(bad, { n: 1 }, { runId })).rejects.toThrow(InvalidInput);
      expect((await store.latest(runId)).status).toBe("failed");
    }
  });

  it("tool names starting with durable: are the library's own", () => {
    expect(() => new ToolRegistry().tool("durable:sleep", () => 1)).toThrow(InvalidInput);
  });
});
