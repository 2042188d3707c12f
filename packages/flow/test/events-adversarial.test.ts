import { type CheckpointStore, MemoryCheckpointStore, sendEvent, ToolRegistry } from "@durable/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

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
});
