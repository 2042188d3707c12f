import { InvalidInput, MemoryCheckpointStore, RecoveryNeedsDecision, ToolRegistry } from "@durable/core";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type Flow, FlowError, workflow } from "../src/index.js";
import { DyingStore, runnerOn, settle } from "./helpers.js";

// A workflow is a flow of one node whose body is the function: its calls and waits replay by identity each time
// the function runs again from the top (a recovery, a wake).

const Order = z.object({ orderId: z.string() });

/** Tools that count their runs. */
function counting() {
  const ran = new Map<string, number>();
  const count = (tool: string) => () => {
    ran.set(tool, (ran.get(tool) ?? 0) + 1);
    return `${tool} ${ran.get(tool)}`;
  };
  const registry = new ToolRegistry().tool("reserve", count("reserve")).tool("ship", count("ship"));
  return { ran, registry };
}

describe("workflow", () => {
  it("runs its function from the input alone, and a done run's state.output is what it returned", async () => {
    const { registry } = counting();
    const wf = workflow("ship", { input: Order }, async (ctx, { orderId }) => ({
      orderId,
      reserved: await ctx.call<string>("reserve", { orderId }),
    }));
    const done = await runnerOn(new MemoryCheckpointStore(), registry).run(wf, { orderId: "o-1" });
    expect(done).toMatchObject({
      status: "done",
      state: { input: { orderId: "o-1" }, output: { orderId: "o-1", reserved: "reserve 1" } },
    });
    // A function that returns nothing leaves no output.
    const quiet = workflow("quiet", { input: Order }, async () => {});
    expect(await runnerOn(new MemoryCheckpointStore(), registry).run(quiet, { orderId: "o" })).toMatchObject({
      state: { input: { orderId: "o" } },
    });
  });

  it("a worker that dies after a call: the recovery runs the function again, the finished call replayed", async () => {
    const { ran, registry } = counting();
    const wf = workflow("ship", { input: Order }, async (ctx, { orderId }) => {
      const reserved = await ctx.call<string>("reserve", { orderId });
      return { reserved, shipped: await ctx.call<string>("ship", { orderId }) };
    });
    const store = new MemoryCheckpointStore();
    const dying = new DyingStore(store, { op: "recordCall", kind: "done", tool: "reserve", when: "after" });
    void runnerOn(dying, registry).run(wf, { orderId: "o-2" }, { runId: "w" });
    await settle();
    const done = await runnerOn(store, registry).recover(wf, "w");
    expect(done).toMatchObject({ status: "done", state: { output: { reserved: "reserve 1", shipped: "ship 1" } } });
    expect(Object.fromEntries(ran)).toEqual({ reserve: 1, ship: 1 });
  });

  it("a call left in doubt fails closed, as in a flow", async () => {
    const { registry } = counting();
    const wf = workflow("ship", { input: Order }, async (ctx, { orderId }) => {
      await ctx.call("ship", { orderId });
    });
    const store = new MemoryCheckpointStore();
    void runnerOn(
      new DyingStore(store, { op: "recordCall", kind: "started", tool: "ship", when: "after" }),
      registry,
    ).run(wf, { orderId: "o-3" }, { runId: "d" });
    await settle();
    await expect(runnerOn(store, registry).recover(wf, "d")).rejects.toBeInstanceOf(RecoveryNeedsDecision);
  });

  it("sleeps in the middle of ordinary code: the function runs again on waking, its calls before the sleep once", async () => {
    const { ran, registry } = counting();
    const wf = workflow("nap", { input: Order }, async (ctx, { orderId }) => {
      await ctx.call("reserve", { orderId });
      await ctx.sleep(200);
      return ctx.call<string>("ship", { orderId });
    });
    const store = new MemoryCheckpointStore();
    const asleep = (await runnerOn(store, registry).run(wf, { orderId: "o-4" }, { runId: "n" })) as { until: number };
    expect(asleep).toMatchObject({ status: "asleep" });
    // Its wake time by this clock, then until the store lists it claimable: the store holds the sleep's lease by its
    // own clock from when the asleep save landed, a little after the wake time was taken (a claim before is LeaseHeld).
    await sleep(Math.max(0, asleep.until - Date.now()));
    await until(async () => {
      for await (const id of store.listUnfinished("nap", { claimable: true })) if (id === "n") return true;
      return false;
    });
    expect(await runnerOn(store, registry).recover(wf, "n")).toMatchObject({
      status: "done",
      state: { output: "ship 1" },
    });
    expect(Object.fromEntries(ran)).toEqual({ reserve: 1, ship: 1 });
  });

  it("refuses clearly: an input the schema refuses, a schema that is not one, no function, nodes or edges added", async () => {
    const wf = workflow("ship", { input: Order }, async () => {});
    await expect(runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(wf, { orderId: 7 })).rejects.toThrow(
      InvalidInput,
    );
    await expect(runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(wf, { orderId: 7 })).rejects.toThrow(
      /input\.orderId/,
    );
    expect(() => workflow("x", { input: {} as never }, async () => {})).toThrow(FlowError);
    expect(() => workflow("x", { input: Order }, undefined as never)).toThrow(FlowError);
    expect(() => workflow("x", { input: Order, state: Order } as never, async () => {})).toThrow(InvalidInput);
    // Its type takes no nodes; code that goes past the type is refused too.
    const asFlow = wf as unknown as Flow<{ input: unknown }>;
    expect(() => asFlow.node("more", async () => {})).toThrow(/one function/);
    expect(() => asFlow.edge("body", "body")).toThrow(/one function/);
    expect(() => asFlow.end("body")).toThrow(/one function/);
  });
});
