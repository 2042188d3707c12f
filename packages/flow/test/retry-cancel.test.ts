import type { MemoryData } from "@durable/core/internal";
import { CheckpointConflict, type DurableEvent, MemoryCheckpointStore, ToolFailed, ToolRegistry } from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { KEY, runnerOn, Tools, ticketsFlow } from "./helpers.js";

/** One superstep that holds seats and charges at once; the charge fails while `down` is set. */
function fanOut() {
  const ran = { hold: 0, charge: 0 };
  const gateway = { down: true };
  const registry = new ToolRegistry()
    .tool("hold", () => `held ${++ran.hold}`)
    .tool("charge", () => {
      ran.charge++;
      if (gateway.down) throw new Error("gateway down");
      return "charged";
    });
  const flow = new Flow("order", { state: z.object({ held: z.string(), charged: z.string() }) })
    .node("both", async (_s, ctx) => {
      const [held, charged] = await Promise.all([ctx.call("hold", {}), ctx.call("charge", { cents: 4200 })]);
      return { held: String(held), charged: String(charged) };
    })
    .end("both");
  return { ran, gateway, registry, flow };
}

describe("retrying a failed run", () => {
  it("goes on from its last checkpoint with a new segment: the failed call runs again, its finished sibling replays", async () => {
    const { ran, gateway, registry, flow } = fanOut();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await expect(runner.run(flow, { held: "", charged: "" }, { runId: "r" })).rejects.toThrow(ToolFailed);
    const failed = await store.latest("r");
    expect(failed.status).toBe("failed");
    // Still down: the retry fails again, and the run can be retried once more.
    await expect(runner.retry(flow, "r")).rejects.toThrow(/charge failed: Error: gateway down/);
    gateway.down = false;
    expect(await runner.retry(flow, "r")).toMatchObject({
      status: "done",
      state: { held: "held 1", charged: "charged" },
    });
    expect(ran).toEqual({ hold: 1, charge: 3 });
    const latest = await store.latest("r");
    expect(latest.segment).toBe(failed.segment + 2);
    const counts = JSON.parse(latest.sealed.slice(latest.sealed.indexOf(".", 3) + 1)).calls as number[];
    const kinds = (await readCallLog(store, Sealer.withKeys(KEY), "r", counts))
      .filter((r) => r.tool === "charge")
      .map((r) => r.kind);
    expect(kinds).toEqual(["started", "error", "reopened", "started", "error", "reopened", "started", "done"]);
  });

  it("refuses a run that did not fail", async () => {
    const tools = new Tools();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, tools.registry());
    await runner.run(ticketsFlow(), { show: "Hamlet", seats: 2 }, { runId: "ok" });
    await expect(runner.retry(ticketsFlow(), "ok")).rejects.toThrow(
      /the run is done, not failed: there is nothing to retry/,
    );
  });
});

describe("cancelling a run", () => {
  it("saves it failed as cancelled, fences the worker that drives it, and no retry goes on from it", async () => {
    let release: () => void = () => undefined;
    const charged = new Promise<void>((resolve) => {
      release = resolve;
    });
    let charges = 0;
    const registry = new ToolRegistry()
      .tool("hold_seats", () => "held", { idempotent: true })
      .tool("charge_card", async () => {
        charges++;
        await charged;
        return "charged";
      })
      .tool("email_tickets", () => "mailed");
    const data: MemoryData = new Map();
    const flow = ticketsFlow();
    const driving = runnerOn(new MemoryCheckpointStore({ data }), registry).run(
      flow,
      { show: "Hamlet", seats: 2 },
      { runId: "c" },
    );
    void driving.catch(() => undefined);
    while (charges === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    // An operator's process, on its own connection.
    const store = new MemoryCheckpointStore({ data });
    const events: DurableEvent[] = [];
    const operator = runnerOn(store, registry, events);
    const step = await operator.cancel(flow, "c", "the customer called it off");
    expect(await store.latest("c")).toMatchObject({ status: "failed", step });
    expect(events.at(-1)).toMatchObject({ type: "run.cancelled", step, reason: "the customer called it off" });
    expect(await store.leaseOf("c")).toBeUndefined();

    // The worker that drove it finishes its charge: its record is refused, and it saves nothing more.
    release();
    await expect(driving).rejects.toThrow(CheckpointConflict);
    expect(await store.latest("c")).toMatchObject({ status: "failed", step });

    await expect(operator.retry(flow, "c")).rejects.toThrow(/cancelled/);
    await expect(operator.recover(flow, "c")).rejects.toThrow(CheckpointConflict);
    await expect(operator.cancel(flow, "c", "again")).rejects.toThrow(/ended/);
  });
});
