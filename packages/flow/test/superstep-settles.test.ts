import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolRegistry } from "@durable/core";
import { DurableRun, Sealer } from "@durable/core/runner";
import { Flow } from "../src/index.js";
import { KEY, MemoryCheckpointStore, runnerOn } from "./helpers.js";

const State = z.object({ note: z.string() });
const slow = () => new Promise((resolve) => setTimeout(resolve, 30));

function registry() {
  return new ToolRegistry()
    .tool("charge", async () => {
      await slow();
      return "charged";
    })
    .tool("refund", () => "refunded", { approval: true })
    .tool("broken", () => {
      throw new Error("card declined");
    });
}

/** A node whose `Promise.all` rejects at once (a wait for approval, a failing tool) while a slow charge is still running. */
const flowWith = (first: string) =>
  new Flow(`settles-${first}`, { state: State })
    .node("order", async (_, ctx) => {
      const [a, b] = await Promise.all([ctx.call(first, {}), ctx.call("charge", {})]);
      return { note: `${String(a)} ${String(b)}` };
    })
    .end("order");

describe("a superstep ends only once every call it made has settled", () => {
  it("pauses after the slow sibling of the approval landed: the pause counts its records", async () => {
    const store = new MemoryCheckpointStore();
    const paused = await runnerOn(store, registry()).run(flowWith("refund"), { note: "" }, { runId: "r" });
    expect(paused.status).toBe("paused");
    const latest = await DurableRun.latest(store, Sealer.withKeys(KEY), "r");
    expect(latest.calls).toEqual([3]); // refund pending, charge started, charge done
    expect((await store.calls("r")).length).toBe(3);
  });

  it("saves a failure only after the slow sibling of the failing call landed", async () => {
    const store = new MemoryCheckpointStore();
    await expect(runnerOn(store, registry()).run(flowWith("broken"), { note: "" }, { runId: "r" })).rejects.toThrow(
      "card declined",
    );
    const latest = await DurableRun.latest(store, Sealer.withKeys(KEY), "r");
    expect(latest.status).toBe("failed");
    expect(latest.calls).toEqual([4]); // broken started, broken error, charge started, charge done
  });
});
