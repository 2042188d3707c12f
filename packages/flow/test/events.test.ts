import {
  CheckpointNotFound,
  type CheckpointStore,
  type DurableEvent,
  InvalidInput,
  MemoryCheckpointStore,
  RunAlreadyEnded,
  sendEvent,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type EventWait, Flow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// Events: `ctx.waitForEvent(name, { timeoutMs })` takes the next event of that name sent to the run (`sendEvent`),
// each event once, replayed like a call; with none there the run is saved waiting and the next event wakes it.

const State = z.object({ got: z.array(z.string()).default([]), note: z.string().default("") });

/** A payment flow: wait for `paid` (at most `timeoutMs`), then ship with what came; `ship` counts its runs. */
function payment(timeoutMs?: number) {
  const shipped: string[] = [];
  const registry = new ToolRegistry().tool("ship", (args: { how: string }) => {
    shipped.push(args.how);
    return `shipped ${args.how}`;
  });
  const flow = new Flow("payment", { state: State })
    .node("ship", async (_state, ctx) => {
      const paid = await ctx.waitForEvent("paid", timeoutMs === undefined ? {} : { timeoutMs });
      const how = paid.status === "received" ? JSON.stringify(paid.payload) : "timeout";
      return { note: await ctx.call<string>("ship", { how }) };
    })
    .end("ship");
  return { shipped, registry, flow };
}

function send(store: CheckpointStore, runId: string, name: string, payload: unknown, idempotencyKey?: string) {
  return sendEvent({
    checkpoints: store,
    checkpointKey: KEY,
    runId,
    name,
    payload,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });
}

async function claimable(store: CheckpointStore, name: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(name, { claimable: true })) ids.push(id);
  return ids;
}

describe("events", () => {
  it("a run waiting for an event holds no worker; the event sent wakes it, and its payload is the wait's, taken once", async () => {
    const { shipped, registry, flow } = payment();
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const waiting = await runnerOn(store, registry, events).run(flow, {}, { runId: "r" });
    expect(waiting).toMatchObject({ status: "asleep", runId: "r", waitsFor: ["paid"] });
    expect(events.find((e) => e.type === "run.asleep")).toMatchObject({ waitsFor: ["paid"] });
    expect(await store.leaseOf("r")).toMatchObject({ owner: "(waiting)" });
    expect(await claimable(store, "payment")).toEqual([]);
    // Before an event a recovery claims nothing.
    expect(await runnerOn(store, registry).recover(flow, "r")).toEqual(waiting);

    expect(await send(store, "r", "paid", { amount: 5 }, "pay-1")).toEqual({
      status: "sent",
      runId: "r",
      key: "pay-1",
      seq: 0,
    });
    expect(await store.leaseOf("r")).toBeUndefined();
    expect(await claimable(store, "payment")).toEqual(["r"]);
    // A resend of the webhook is a no-op.
    expect(await send(store, "r", "paid", { amount: 5 }, "pay-1")).toMatchObject({ status: "duplicate" });
    const woke: DurableEvent[] = [];
    const done = await runnerOn(store, registry, woke).recover(flow, "r");
    expect(done).toMatchObject({ status: "done", state: { note: 'shipped {"amount":5}' } });
    // The claim woke the run: no worker died.
    expect(woke.find((e) => e.type === "run.recovered")).toMatchObject({ woke: true });
    expect(shipped).toEqual(['{"amount":5}']);
    await expect(send(store, "r", "paid", {}, "pay-2")).rejects.toBeInstanceOf(RunAlreadyEnded);
    expect(await send(store, "r", "paid", {}, "pay-1")).toMatchObject({ status: "duplicate" });
  });

  it("an event sent before the wait is kept until a wait takes it; each wait takes the next, in the order sent, across supersteps", async () => {
    const order: string[] = [];
    const registry = new ToolRegistry().tool("note", (args: { what: string }) => void order.push(args.what));
    const Ticks = z.object({ n: z.number().default(0) });
    const flow = new Flow("ticks", { state: Ticks })
      .node("gate", async (_state, ctx) => {
        await ctx.waitForEvent("go");
        return {};
      })
      .node("tick", async (state, ctx) => {
        const tick = (await ctx.waitForEvent("tick")) as Extract<EventWait, { status: "received" }>;
        await ctx.call("note", { what: String(tick.payload) });
        return { n: state.n + 1 };
      })
      .edge("gate", "tick")
      .edge("tick", (state) => (state.n < 3 ? "tick" : []));
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.run(flow, {}, { runId: "t" });
    for (const n of [1, 2, 3, 4]) await send(store, "t", "tick", `tick ${n}`);
    await send(store, "t", "go", null);
    const done = await runnerOn(store, registry).recover(flow, "t");
    expect(done).toMatchObject({ status: "done", state: { n: 3 } });
    expect(order).toEqual(["tick 1", "tick 2", "tick 3"]);
  });

  it("a wait that timed out gives { status: 'timeout' } once its timeout passed, and the run goes on", async () => {
    const { shipped, registry, flow } = payment(300);
    const store = new MemoryCheckpointStore();
    const waiting = (await runnerOn(store, registry).run(flow, {}, { runId: "late" })) as { until: number };
    await sleep(Math.max(0, waiting.until - Date.now()));
    await until(async () => (await claimable(store, "payment")).includes("late"), 5_000);
    const done = await runnerOn(store, registry).recover(flow, "late");
    expect(done).toMatchObject({ status: "done", state: { note: "shipped timeout" } });
    expect(shipped).toEqual(["timeout"]);
  });

  it("two waits of one superstep take two events, one each; replayed after the superstep slept, each keeps its own", async () => {
    const took: string[] = [];
    const registry = new ToolRegistry().tool("take", (args: { who: string; what: string }) => {
      took.push(`${args.who}:${args.what}`);
    });
    const Pair = z.object({ a: z.string().default(""), b: z.string().default("") });
    const flow = new Flow("pair", { state: Pair })
      .node("start", () => ({}))
      .node("a", async (_state, ctx) => {
        const got = (await ctx.waitForEvent("job")) as Extract<EventWait, { status: "received" }>;
        await ctx.call("take", { who: "a", what: String(got.payload) });
        return { a: String(got.payload) };
      })
      .node("b", async (_state, ctx) => {
        const got = (await ctx.waitForEvent("job")) as Extract<EventWait, { status: "received" }>;
        await ctx.sleep(200);
        await ctx.call("take", { who: "b", what: String(got.payload) });
        return { b: String(got.payload) };
      })
      .edge("start", ["a", "b"])
      .end("a")
      .end("b");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.run(flow, {}, { runId: "p" });
    await send(store, "p", "job", "one");
    await send(store, "p", "job", "two");
    const asleep = (await runnerOn(store, registry).recover(flow, "p")) as { status: string; until: number };
    expect(asleep.status).toBe("asleep");
    // A third event while b sleeps: no wait of the superstep takes it.
    await send(store, "p", "job", "three");
    await sleep(Math.max(0, asleep.until - Date.now()));
    await until(async () => (await claimable(store, "pair")).includes("p"), 5_000);
    const done = (await runnerOn(store, registry).recover(flow, "p")) as { state: { a: string; b: string } };
    expect([done.state.a, done.state.b].sort()).toEqual(["one", "two"]);
    expect(took.sort()).toEqual([`a:${done.state.a}`, `b:${done.state.b}`].sort());
  });

  it("a worker wakes a waiting run within a poll of the event, and an event of another name leaves it waiting", async () => {
    const { shipped, registry, flow } = payment();
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(flow, {}, { runId: "w" });
    const worker = startWorker({
      serve: [runnerOn(store, registry).served(flow)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      await send(store, "w", "refund", {});
      await sleep(300);
      expect((await store.latest("w")).status).toBe("running");
      expect(await store.leaseOf("w")).toMatchObject({ owner: "(waiting)" });
      const sent = Date.now();
      await send(store, "w", "paid", "card");
      await until(async () => (await store.latest("w")).status === "done", 5_000);
      expect(Date.now() - sent).toBeLessThan(2_000);
      expect(shipped).toEqual(['"card"']);
    } finally {
      await worker.stop();
    }
  });

  it("an event named __proto__ is an event like any other", async () => {
    const registry = new ToolRegistry();
    const Got = z.object({ got: z.string().default("") });
    const flow = new Flow("odd", { state: Got })
      .node("wait", async (_state, ctx) => {
        const first = (await ctx.waitForEvent("__proto__")) as Extract<EventWait, { status: "received" }>;
        return { got: String(first.payload) };
      })
      .edge("wait", (state) => (state.got === "x" ? "again" : []))
      .node("again", async (_state, ctx) => {
        const second = (await ctx.waitForEvent("__proto__")) as Extract<EventWait, { status: "received" }>;
        return { got: String(second.payload) };
      })
      .end("again");
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(flow, {}, { runId: "o" });
    await send(store, "o", "__proto__", "x");
    await send(store, "o", "__proto__", "y");
    expect(await runnerOn(store, registry).recover(flow, "o")).toMatchObject({ status: "done", state: { got: "y" } });
  });

  it("refuses clearly: an unknown run, a store without events, bad names, payloads, keys and timeouts", async () => {
    const store = new MemoryCheckpointStore();
    await expect(send(store, "nobody", "paid", {})).rejects.toBeInstanceOf(CheckpointNotFound);
    const { inbox: _inbox, sendEvent: _send, ...plain } = store as unknown as Record<string, unknown>;
    const without = Object.assign(Object.create(Object.getPrototypeOf(store)), plain) as CheckpointStore;
    Object.defineProperties(without, { sendEvent: { value: undefined }, inbox: { value: undefined } });
    await expect(send(without, "r", "paid", {})).rejects.toThrow(/no events capability/);
    for (const name of ["", "x".repeat(129), 7])
      await expect(send(store, "r", name as string, {})).rejects.toBeInstanceOf(InvalidInput);
    await expect(send(store, "r", "paid", { f: () => 1 })).rejects.toBeInstanceOf(InvalidInput);
    await expect(send(store, "r", "paid", {}, "")).rejects.toBeInstanceOf(InvalidInput);

    const registry = new ToolRegistry();
    const waits: Array<[string, unknown]> = [
      ["paid", { timeoutMs: -1 }],
      ["paid", { timeoutMs: 1.5 }],
      ["paid", { timeout: 5 }],
      // A child run's end is the library's to wait for: user code cannot take it.
      ["durable:child:abc", {}],
    ];
    for (const [name, options] of waits) {
      const flow = new Flow("bad", { state: State })
        .node("wait", async (_state, ctx) => {
          await ctx.waitForEvent(name, options as never);
        })
        .end("wait");
      const failed = runnerOn(new MemoryCheckpointStore(), registry).run(flow, {});
      await expect(failed).rejects.toBeInstanceOf(InvalidInput);
    }
  });
});
