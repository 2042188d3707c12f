import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Executor, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { readLatest, Sealer } from "@durable/core/runner";
import { DyingStore, settle } from "@durable/test-utils/stores";
import { Flow, FlowRunner } from "../src/index.js";

const KEY = "in-place-tests-key-0123456789abcdef";
/** A field large enough that checkpoints after the first are changes, not snapshots. */
const PAD = "x".repeat(2000);
const runnerOn = (store: ConstructorParameters<typeof DyingStore>[0], registry: ToolRegistry) =>
  new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });

/*
 * A checkpoint holds what changed since the one before, found by reference:
 * code that changes the stored state in place (a reducer adding to its
 * `current`, a router writing to the state it is given) must not leave a
 * change the store never saw.
 */
describe("state changed in place", () => {
  it("a reducer that appends to its current in place: a recovery charges each order once", async () => {
    const State = z.object({ orders: z.array(z.string()), paid: z.array(z.string()), pad: z.string() });
    type S = z.infer<typeof State>;
    const flow = new Flow<S>("pay-all", {
      state: State,
      reducers: {
        paid: (current, update) => {
          current.push(...update);
          return current;
        },
      },
    })
      .node("pay", async (s, ctx) => {
        const next = s.orders.find((order) => !s.paid.includes(order)) as string;
        await ctx.call("charge_card", { order: next });
        return { paid: [next] };
      })
      .node("ship", () => ({}))
      .edge("pay", (s) => (s.paid.length < s.orders.length ? "pay" : "ship"), { targets: ["pay", "ship"] })
      .end("ship");
    const charges: string[] = [];
    const registry = new ToolRegistry().tool("charge_card", (a: { order: string }) => {
      charges.push(a.order);
      return "ok";
    });
    const store = new MemoryCheckpointStore();
    const input = { orders: ["o1", "o2", "o3"], paid: [], pad: PAD };
    // The first worker dies just before superstep 2's checkpoint is stored.
    void runnerOn(new DyingStore(store, { op: "save", step: 2, when: "before" }), registry).run(flow, input, {
      runId: "r",
    });
    await settle(100);
    const stored = await readLatest(store, Sealer.withKeys(KEY), "r");
    expect((stored.data as { program: { state: S } }).program.state.paid).toEqual(["o1"]);
    const result = await runnerOn(store, registry).recover(flow, "r");
    expect(result).toMatchObject({ status: "done", state: { paid: ["o1", "o2", "o3"] } });
    expect(charges).toEqual(["o1", "o2", "o3"]);
  });

  it("a router that writes to the state it is given fails the run with a TypeError, instead of a change the store never sees", async () => {
    const State = z.object({ trail: z.array(z.string()), n: z.number(), pad: z.string() });
    type S = z.infer<typeof State>;
    const flow = new Flow<S>("route", { state: State })
      .node("a", (s) => ({ n: s.n + 1 }))
      .node("b", (s) => ({ n: s.n + 1 }))
      .edge(
        "a",
        (s) => {
          s.trail.push("a->b");
          return "b";
        },
        { targets: ["b"] },
      )
      .end("b");
    const store = new MemoryCheckpointStore();
    await expect(
      runnerOn(store, new ToolRegistry()).run(flow, { trail: [], n: 0, pad: PAD }, { runId: "r" }),
    ).rejects.toThrow(TypeError);
    const latest = await readLatest(store, Sealer.withKeys(KEY), "r");
    expect(latest.status).toBe("failed");
  });
});
