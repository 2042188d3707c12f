import {
  CheckpointConflict,
  type CheckpointStore,
  MemoryCheckpointStore,
  NonRetryable,
  ResultTimedOut,
  RunFailed,
  runHandle,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import type { MemoryData } from "@durable/core/internal";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// Starting a run on the fleet: `runner.start` saves it queued and returns its handle at once; a worker serving the
// flow drives it. A handle reads the run with only the store and the key: its status, its result, its cancel.

const State = z.object({ name: z.string(), note: z.string().default("") });

/** A greeting flow whose `greet` tool counts its runs (and fails while `down` is set). */
function greeting() {
  const ran = { greet: 0 };
  const gate = { down: false };
  const registry = new ToolRegistry().tool("greet", (args: { name: string }) => {
    ran.greet++;
    if (gate.down) throw new NonRetryable("the mail server refused");
    return `hello ${args.name}`;
  });
  const flow = new Flow("greeting", { state: State })
    .node("greet", async (state, ctx) => ({ note: await ctx.call<string>("greet", { name: state.name }) }))
    .end("greet");
  return { ran, gate, registry, flow };
}

/** A worker serving the flow's runs, polling often. */
function serve<S>(store: CheckpointStore, registry: ToolRegistry, flow: Flow<S>) {
  return startWorker({
    serve: [runnerOn(store, registry).served(flow)],
    pollMs: 20,
    maxPollMs: 20,
    stopOnSignals: false,
  });
}

describe("start and handles", () => {
  it("start returns at once with a queued run's handle; a worker serving the flow drives it; result() gives the final state", async () => {
    const { ran, registry, flow } = greeting();
    const store = new MemoryCheckpointStore();
    const handle = await runnerOn(store, registry).start(flow, { name: "ada" }, { runId: "g" });
    expect(handle.runId).toBe("g");
    expect(await handle.status()).toEqual({ status: "queued", step: 0 });
    expect(ran.greet).toBe(0);
    const worker = serve(store, registry, flow);
    try {
      expect(await handle.result({ timeoutMs: 5_000 })).toEqual({ name: "ada", note: "hello ada" });
      expect(await handle.status()).toMatchObject({ status: "done" });
    } finally {
      await worker.stop();
    }
  });

  it("start validates the input with the flow's schema, writing nothing", async () => {
    const { registry, flow } = greeting();
    const store = new MemoryCheckpointStore();
    await expect(runnerOn(store, registry).start(flow, { name: 5 }, { runId: "bad" })).rejects.toThrow(/input/i);
    await expect(store.latest("bad")).rejects.toThrow();
  });

  it("a start again under the same id returns the same run's handle and starts nothing; ifExists: 'error' refuses", async () => {
    const { ran, registry, flow } = greeting();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.start(flow, { name: "ada" }, { runId: "once" });
    const again = await runner.start(flow, { name: "bob" }, { runId: "once" });
    expect(again.runId).toBe("once");
    await expect(runner.start(flow, { name: "ada" }, { runId: "once", ifExists: "error" })).rejects.toThrow(
      CheckpointConflict,
    );
    const worker = serve(store, registry, flow);
    try {
      expect(await again.result({ timeoutMs: 5_000 })).toMatchObject({ note: "hello ada" });
      // Done, a start again still gives its handle.
      expect(await (await runner.start(flow, { name: "ada" }, { runId: "once" })).status()).toMatchObject({
        status: "done",
      });
    } finally {
      await worker.stop();
    }
    expect(ran.greet).toBe(1);
  });

  it("an id taken by a run of another flow is CheckpointConflict; a bad ifExists is InvalidInput", async () => {
    const { registry, flow } = greeting();
    const other = new Flow("other", { state: State }).node("n", () => ({})).end("n");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.start(other, { name: "x" }, { runId: "taken" });
    await expect(runner.start(flow, { name: "x" }, { runId: "taken" })).rejects.toThrow(CheckpointConflict);
    await expect(runner.start(flow, { name: "x" }, { ifExists: "maybe" as "error" })).rejects.toThrow(
      /ifExists must be/,
    );
  });

  it("a failed run's result() rejects with RunFailed and its error; result({ timeoutMs }) times out on a run nobody serves", async () => {
    const { gate, registry, flow } = greeting();
    gate.down = true;
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const lonely = await runner.start(flow, { name: "nobody" }, { runId: "lonely" });
    const started = Date.now();
    await expect(lonely.result({ timeoutMs: 300 })).rejects.toThrow(ResultTimedOut);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await lonely.status()).toMatchObject({ status: "queued" });

    const failing = await runner.start(flow, { name: "eve" }, { runId: "failing" });
    const worker = serve(store, registry, flow);
    try {
      const error = await failing.result({ timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunFailed);
      expect((error as RunFailed).error).toMatch(/the mail server refused/);
      expect(await failing.status()).toMatchObject({ status: "failed", error: expect.stringMatching(/refused/) });
    } finally {
      await worker.stop();
    }
  });

  it("result() reads the store with backoff, not in a hot loop", async () => {
    const { registry, flow } = greeting();
    const store = new MemoryCheckpointStore();
    let reads = 0;
    const counted = new Proxy(store, {
      get(target, key, receiver) {
        if (key === "latest")
          return (runId: string) => {
            reads++;
            return target.latest(runId);
          };
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const handle = await runnerOn(counted, registry).start(flow, { name: "slow" }, { runId: "slow" });
    reads = 0;
    await expect(handle.result({ timeoutMs: 1_500 })).rejects.toThrow(ResultTimedOut);
    // 50, 100, 200, 400, 800 (cut to what is left): about 6 reads in 1.5 s.
    expect(reads).toBeLessThanOrEqual(8);
  });

  it("status() reports asleep (with until), waiting for an event (waitsFor) and paused", async () => {
    const registry = new ToolRegistry().tool("refund", () => "refunded", { approval: true });
    const napping = new Flow("napping", { state: State })
      .node("nap", async (_state, ctx) => {
        await ctx.sleep(60_000);
        return {};
      })
      .end("nap");
    const waiting = new Flow("waiting", { state: State })
      .node("wait", async (_state, ctx) => {
        await ctx.waitForEvent("paid", { timeoutMs: 60_000 });
        return {};
      })
      .end("wait");
    const asking = new Flow("asking", { state: State })
      .node("ask", async (_state, ctx) => ({ note: await ctx.call<string>("refund", { amount: 5 }) }))
      .end("ask");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const before = Date.now();
    await runner.run(napping, { name: "n" }, { runId: "nap" });
    await runner.run(waiting, { name: "w" }, { runId: "wait" });
    await runner.run(asking, { name: "a" }, { runId: "ask" });

    const nap = await runner.handle(napping, "nap").status();
    expect(nap).toMatchObject({ status: "asleep" });
    expect(nap.until).toBeGreaterThanOrEqual(before + 60_000);
    expect(nap.waitsFor).toBeUndefined();
    expect(await runner.handle(waiting, "wait").status()).toMatchObject({ status: "asleep", waitsFor: ["paid"] });
    expect(await runner.handle(asking, "ask").status()).toMatchObject({ status: "paused" });
  });

  it("a running run's status is running; cancel() ends it, and its result() rejects with the cancel", async () => {
    const registry = new ToolRegistry();
    const napping = new Flow("napping", { state: State })
      .node("nap", async (_state, ctx) => {
        await ctx.sleep(60_000);
        return {};
      })
      .end("nap");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const handle = await runner.start(napping, { name: "n" }, { runId: "c" });
    const worker = serve(store, registry, napping);
    try {
      await until(async () => (await handle.status()).status === "asleep", 5_000);
    } finally {
      await worker.stop();
    }
    const step = await handle.cancel("the customer left");
    expect(await handle.status()).toMatchObject({ status: "failed", step, error: "Cancelled: the customer left" });
    await expect(handle.result()).rejects.toThrow(/Cancelled: the customer left/);
  });

  it("runHandle rebuilds a handle from the id with another store object on the same data", async () => {
    const { registry, flow } = greeting();
    const data: MemoryData = new Map();
    const store = new MemoryCheckpointStore({ data });
    const runner = runnerOn(store, registry);
    await runner.start(flow, { name: "ada" }, { runId: "far" });
    const elsewhere = new MemoryCheckpointStore({ data });
    const far = runHandle({ checkpoints: elsewhere, checkpointKey: KEY, by: "console" }, "far");
    expect(await far.status()).toEqual({ status: "queued", step: 0 });
    const worker = serve(store, registry, flow);
    try {
      expect(await far.result({ timeoutMs: 5_000 })).toMatchObject({ state: { name: "ada", note: "hello ada" } });
    } finally {
      await worker.stop();
    }
  });

  it("a workflow starts the same way: its handle's result is its final state, its output in it", async () => {
    const registry = new ToolRegistry().tool("double", (args: { n: number }) => args.n * 2);
    const doubling = workflow("doubling", { input: z.object({ n: z.number() }) }, async (ctx, input) =>
      ctx.call<number>("double", input),
    );
    const store = new MemoryCheckpointStore();
    const handle = await runnerOn(store, registry).start(doubling, { n: 21 }, { runId: "wf" });
    const worker = serve(store, registry, doubling);
    try {
      expect(await handle.result({ timeoutMs: 5_000 })).toMatchObject({ output: 42 });
    } finally {
      await worker.stop();
    }
  });
});
