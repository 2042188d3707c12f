import { CheckpointConflict, MemoryCheckpointStore, startWorker, ToolRegistry, wakeRun } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// An operator's wake (`wakeRun`): the sleeps and wait deadlines recorded before it are over; later ones are not.

const HOUR = 3_600_000;
const State = z.object({ note: z.string().default("") });

function counting() {
  const ran: string[] = [];
  const registry = new ToolRegistry().tool("step", (args: { n: number }) => void ran.push(`step ${args.n}`));
  return { ran, registry };
}

const operator = (store: MemoryCheckpointStore) => ({ checkpoints: store, checkpointKey: KEY, by: "ops@example.com" });

describe("wakeRun", () => {
  it("ends a sleep now: the run goes on past it, a later sleep of the node sleeps as long as it says", async () => {
    const { ran, registry } = counting();
    const flow = new Flow("naps", { state: State })
      .node("nap", async (_state, ctx) => {
        await ctx.call("step", { n: 1 });
        await ctx.sleep(HOUR);
        await ctx.call("step", { n: 2 });
        await ctx.sleep(HOUR);
        await ctx.call("step", { n: 3 });
      })
      .end("nap");
    const store = new MemoryCheckpointStore();
    const asleep = await runnerOn(store, registry).run(flow, {}, { runId: "n" });
    expect(asleep).toMatchObject({ status: "asleep" });
    const step = await wakeRun("n", operator(store));
    expect(await store.leaseOf("n")).toBeUndefined();
    const again = await runnerOn(store, registry).recover(flow, "n");
    // The second sleep was recorded after the wake: it sleeps its hour.
    expect(again).toMatchObject({ status: "asleep" });
    expect((again as { until: number }).until).toBeGreaterThan(Date.now() + HOUR - 60_000);
    expect(ran).toEqual(["step 1", "step 2"]);
    expect((await store.latest("n")).step).toBeGreaterThan(step);
    await wakeRun("n", operator(store));
    expect(await runnerOn(store, registry).recover(flow, "n")).toMatchObject({ status: "done" });
    expect(ran).toEqual(["step 1", "step 2", "step 3"]);
  });

  it("times a wait for an event out now; refuses a run that is not asleep, and one a worker woke since the operator looked", async () => {
    const { ran, registry } = counting();
    const flow = new Flow("waits", { state: State })
      .node("wait", async (_state, ctx) => {
        const paid = await ctx.waitForEvent("paid", { timeoutMs: HOUR });
        await ctx.call("step", { n: paid.status === "timeout" ? 0 : 1 });
        return { note: paid.status };
      })
      .end("wait");
    const store = new MemoryCheckpointStore();
    const waiting = (await runnerOn(store, registry).run(flow, {}, { runId: "w" })) as { step: number };
    await expect(wakeRun("w", { ...operator(store), expectStep: waiting.step - 1 })).rejects.toBeInstanceOf(
      CheckpointConflict,
    );
    await wakeRun("w", { ...operator(store), expectStep: waiting.step });
    expect(await runnerOn(store, registry).recover(flow, "w")).toMatchObject({
      status: "done",
      state: { note: "timeout" },
    });
    expect(ran).toEqual(["step 0"]);
    await expect(wakeRun("w", operator(store))).rejects.toBeInstanceOf(CheckpointConflict);

    const busy = new Flow("busy", { state: State }).node("idle", () => ({})).end("idle");
    await runnerOn(store, registry).run(busy, {}, { runId: "b" });
    await expect(wakeRun("b", operator(store))).rejects.toThrow(/ended|not asleep/);
  });

  it("is acted on by the worker that drove the run to sleep, at its next look, not at the sleep's end", async () => {
    const { ran, registry } = counting();
    const flow = new Flow("worker-naps", { state: State })
      .node("nap", async (_state, ctx) => {
        await ctx.sleep(HOUR);
        await ctx.call("step", { n: 1 });
      })
      .end("nap");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.start(flow, {}, { runId: "n" });
    const worker = startWorker({ serve: [runner.served(flow)], pollMs: 20, maxPollMs: 40, stopOnSignals: false });
    try {
      await until(async () => (await runner.handle(flow, "n").status()).status === "asleep");
      await wakeRun("n", operator(store));
      await until(async () => (await store.latest("n")).status === "done", 5_000);
    } finally {
      await worker.stop();
    }
    expect(ran).toEqual(["step 1"]);
  });
});
