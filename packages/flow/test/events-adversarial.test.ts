import { type CheckpointStore, MemoryCheckpointStore, sendEvent, startWorker, ToolRegistry } from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { workflow } from "../src/index.js";
import { forever, KEY, runnerOn, storeWith } from "./helpers.js";

// Adversarial review of events: each verdict comes from what tools really did (counters) and what waits gave.

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

describe("events, adversarial", () => {
  it("a wait with timeoutMs 0 looks at the inbox as it is when it looks, not as an earlier wait of the step read it", async () => {
    const store = new MemoryCheckpointStore();
    const paid: string[] = [];
    // The payment provider calls the webhook before its API call returns (as real ones do).
    const registry = new ToolRegistry().tool("pay", async (args: { runId: string }) => {
      await send(store, args.runId, "paid", { ok: true }, "webhook-1");
      paid.push(args.runId);
      return "charged";
    });
    const checkout = workflow("checkout", { input: z.object({}) }, async (ctx) => {
      await ctx.waitForEvent("cart");
      await ctx.call("pay", { runId: ctx.runId });
      // "Has the webhook come already?": an event present when the wait looks wins over a passed deadline.
      const webhook = await ctx.waitForEvent("paid", { timeoutMs: 0 });
      return webhook.status;
    });
    const runner = runnerOn(store, registry);
    expect(await runner.run(checkout, {}, { runId: "c" })).toMatchObject({ status: "asleep" });
    await send(store, "c", "cart", ["book"]);
    const done = await runner.recover(checkout, "c");
    expect(paid).toEqual(["c"]);
    expect(done).toMatchObject({ status: "done", state: { output: "received" } });
  });

  it("a deadline is recorded once: a rerun before it neither times out nor moves it; after it, an event present wins", async () => {
    const store = new MemoryCheckpointStore();
    const shipped: string[] = [];
    const registry = new ToolRegistry().tool("ship", (args: { how: string }) => void shipped.push(args.how));
    const pay = workflow("pay", { input: z.object({}) }, async (ctx) => {
      const paid = await ctx.waitForEvent("paid", { timeoutMs: 400 });
      await ctx.call("ship", { how: paid.status });
      return paid.status;
    });
    const runner = runnerOn(store, registry);
    const first = (await runner.run(pay, {}, { runId: "d" })) as { status: string; until: number };
    expect(first.status).toBe("asleep");
    // An event of another name wakes it before the deadline: the round runs again, and waits until the same time.
    await send(store, "d", "noise", null);
    const again = (await runner.recover(pay, "d")) as { status: string; until: number };
    expect(again).toMatchObject({ status: "asleep", until: first.until });
    expect(shipped).toEqual([]);
    // Past the deadline, the event is there when the wait looks: it wins.
    await sleep(Math.max(0, first.until - Date.now()) + 20);
    await send(store, "d", "paid", "card");
    expect(await runner.recover(pay, "d")).toMatchObject({ status: "done", state: { output: "received" } });
    expect(shipped).toEqual(["received"]);
  });

  it("a worker dying between the deadline's record and the waiting save: the recovery keeps the first deadline", async () => {
    const inner = new MemoryCheckpointStore();
    const registry = new ToolRegistry();
    const pay = workflow(
      "pay2",
      { input: z.object({}) },
      async (ctx) => (await ctx.waitForEvent("paid", { timeoutMs: 300 })).status,
    );
    // The first worker dies as it saves the run waiting: its step 0 and the deadline's record landed before.
    let dead = false;
    let diedAt = 0;
    const dying = storeWith(inner, {
      save: async (runId, step, row, lease) => {
        if (dead || lease?.owner === "(waiting)") {
          if (!dead) diedAt = Date.now();
          dead = true;
          return forever();
        }
        await inner.save(runId, step, row, lease);
      },
      sendEvent: (runId, event) => inner.sendEvent(runId, event),
      inbox: (runId, from) => inner.inbox(runId, from),
    });
    const started = Date.now();
    void runnerOn(dying, registry).run(pay, {}, { runId: "x" });
    await until(() => dead, 2_000);
    await sleep(100);
    // The deadline's record landed before the crash: set as the first worker reached the wait, so at most 300 ms
    // after the crash (a busy machine may take a while from the run's start to the wait: no bound from the start).
    const records = await readCallLog(inner, Sealer.withKeys(KEY), "x", []);
    const first = records.find((record) => record.callId.endsWith(":deadline"))?.result;
    expect(first).toBeGreaterThanOrEqual(started + 300);
    expect(first).toBeLessThanOrEqual(diedAt + 300);
    // A later worker takes the run over (its drive's lease would run out) and reruns the round.
    const later = (await runnerOn(inner, registry).recover(pay, "x", { takeOver: true })) as {
      status: string;
      until?: number;
    };
    expect(later.status).toBe("asleep");
    // The first deadline, not one set afresh by the recovery: that would be 100 ms or more after the crash + 300 ms.
    expect(later.until).toBe(first);
  });

  it("a worker whose clock is 10 s behind the store's wakes a waiting run within a poll of its event", async () => {
    const store = new MemoryCheckpointStore();
    const shipped: string[] = [];
    const registry = new ToolRegistry().tool("ship", (args: { how: string }) => void shipped.push(args.how));
    const pay = workflow("pay3", { input: z.object({}) }, async (ctx) => {
      const paid = await ctx.waitForEvent("paid", { timeoutMs: 60_000 });
      await ctx.call("ship", { how: paid.status });
    });
    await runnerOn(store, registry).run(pay, {}, { runId: "w" });
    const real = Date.now.bind(Date);
    const behind = vi.spyOn(Date, "now").mockImplementation(() => real() - 10_000);
    const worker = startWorker({
      serve: [runnerOn(store, registry).served(pay)],
      pollMs: 30,
      maxPollMs: 30,
      stopOnSignals: false,
    });
    try {
      await sleep(100);
      await send(store, "w", "paid", "card");
      await until(async () => (await store.latest("w")).status === "done", 2_000);
      expect(shipped).toEqual(["received"]);
    } finally {
      await worker.stop();
      behind.mockRestore();
    }
  });

  it("resends under one key racing the first send (and other senders) add one event, which one wait takes", async () => {
    const store = new MemoryCheckpointStore();
    const handled: string[] = [];
    const registry = new ToolRegistry().tool(
      "handle",
      (args: { what: unknown }) => void handled.push(String(args.what)),
    );
    const hook = workflow("hook", { input: z.object({}) }, async (ctx) => {
      for (let i = 0; i < 3; i++) {
        const got = await ctx.waitForEvent("paid", { timeoutMs: 300 });
        await ctx.call("handle", { what: got.status === "received" ? got.payload : "timeout" });
      }
    });
    await runnerOn(store, registry).run(hook, {}, { runId: "h" });
    const sends = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => send(store, "h", "paid", `webhook try ${i}`, "pay-1")),
      send(store, "h", "paid", "other", "pay-2"),
    ]);
    expect(sends.filter((sent) => sent.status === "sent")).toHaveLength(2);
    const done = await runnerOn(store, registry).recover(hook, "h");
    expect(done.status === "asleep" || done.status === "done").toBe(true);
    // The third wait times out 300 ms after it began. Its lease runs out by the store's clock, which may be a few ms
    // after the wake time by this process's (the save that set the lease took that long to land): a claim before then
    // is LeaseHeld. So wait for the store to let the wait go, then one recovery ends the run.
    await until(async () => {
      const lease = await store.leaseOf("h");
      return lease === undefined || lease.expiresAt <= lease.now;
    });
    expect(await runnerOn(store, registry).recover(hook, "h")).toMatchObject({ status: "done" });
    expect(handled).toHaveLength(3);
    expect(handled.filter((what) => what.startsWith("webhook try"))).toHaveLength(1);
    expect(handled.filter((what) => what === "other")).toHaveLength(1);
    expect(handled[2]).toBe("timeout");
  });
});
