import { describe, expect, it } from "vitest";
import { z } from "zod";
import { IdentityMismatch, InvalidInput, ToolRegistry } from "@durable/core";
import { Flow } from "../src/index.js";
import { DyingStore, MemoryCheckpointStore, runnerOn, settle } from "./helpers.js";

/** Dollars in, cents stored: a transform that changes its own output when it parses it again. */
const Dollars = z.object({
  amount: z.number().transform((dollars) => Math.round(dollars * 100)),
  note: z.string().default(""),
});
/** Trimming parses its own output back to itself. */
const Trimmed = z.object({ name: z.string().trim(), cents: z.number(), note: z.string().default("") });

function chargeFlow<S extends { note: string }>(name: string, schema: z.ZodType<S, unknown>, cents: (s: S) => number) {
  return new Flow<S>(name, { state: schema as never })
    .node(
      "charge",
      async (s: S, ctx) => ({ note: String(await ctx.call("charge", { cents: cents(s) })) }) as Partial<S>,
    )
    .node(
      "mail",
      async (s: S, ctx) =>
        ({ note: `${s.note}; ${String(await ctx.call("mail", { cents: cents(s) }))}` }) as Partial<S>,
    )
    .edge("charge", "mail")
    .end("mail");
}

function registry(charged: number[]) {
  return new ToolRegistry()
    .tool("charge", (a: { cents: number }) => {
      charged.push(a.cents);
      return `charged ${a.cents}`;
    })
    .tool("mail", (a: { cents: number }) => `mailed ${a.cents}`);
}

describe("the state schema", () => {
  it("refuses a schema whose output does not parse back to itself, before anything is written", async () => {
    const store = new MemoryCheckpointStore();
    const charged: number[] = [];
    const flow = chargeFlow("dollars", Dollars, (s) => (s as { amount: number }).amount);
    await expect(runnerOn(store, registry(charged)).run(flow, { amount: 12.5 }, { runId: "r" })).rejects.toThrow(
      /changes its own output when it parses it again/,
    );
    await expect(store.latest("r")).rejects.toThrow(/No checkpoint/);
    expect(charged).toEqual([]);
  });

  it("parses the input once; the stored state is never transformed again, through supersteps and recovery", async () => {
    const store = new MemoryCheckpointStore();
    const charged: number[] = [];
    const flow = chargeFlow("trimmed", Trimmed, (s) => (s as { cents: number }).cents);
    // The worker dies after the charge's checkpoint, before the mail's.
    void runnerOn(new DyingStore(store, { op: "save", step: 2, when: "before" }), registry(charged)).run(
      flow,
      { name: "  Ada ", cents: 1250 },
      { runId: "r" },
    );
    await settle();
    const result = await runnerOn(store, registry(charged)).recover(flow, "r");
    expect(result).toMatchObject({
      status: "done",
      state: { name: "Ada", cents: 1250, note: "charged 1250; mailed 1250" },
    });
    expect(charged).toEqual([1250]);
  });
});

describe("recovery with someone else's ctx", () => {
  it("is refused before anything of the run is told: not its flow, nor whether it ended", async () => {
    const store = new MemoryCheckpointStore();
    const flow = chargeFlow("trimmed", Trimmed, (s) => (s as { cents: number }).cents);
    const runner = runnerOn(store, registry([]));
    await runner.run(flow, { name: "Ada", cents: 1 }, { runId: "r", ctx: { user: "ada" } });
    const other = new Flow("other", { state: Trimmed }).node("x", () => ({})).end("x");
    // The run is done and belongs to another flow; the intruder only learns that its ctx is wrong.
    await expect(runner.recover(other, "r", { ctx: { user: "eve" } })).rejects.toThrow(IdentityMismatch);
    await expect(runner.resume(other, "r", {}, { ctx: { user: "eve" } })).rejects.toThrow(IdentityMismatch);
  });
});

describe("flow names", () => {
  it("refuse half a character and control characters", () => {
    const state = z.object({});
    expect(() => new Flow("tickets 🎟".slice(0, -1), { state })).toThrow(InvalidInput);
    expect(() => new Flow("a\u0000b", { state })).toThrow(InvalidInput);
  });
});

describe("a node's update", () => {
  it("holding a __proto__ key (as JSON from a tool may) cannot set state fields no node wrote", async () => {
    const store = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool(
      "fetch_order",
      () => JSON.parse('{"__proto__":{"limit":1000000},"note":"fetched"}') as unknown,
    );
    const State = z.object({ note: z.string().default(""), limit: z.number().default(10) });
    const flow = new Flow("orders", { state: State })
      .node("fetch", async (_s, ctx) => (await ctx.call("fetch_order", {})) as { note: string })
      .end("fetch");
    const result = await runnerOn(store, registry)
      .run(flow, {}, { runId: "orders-1" })
      .catch((error: unknown) => error);
    expect(result).toMatchObject({ status: "done", state: { note: "fetched", limit: 10 } });
  });
});

describe("a state field named like an Object method", () => {
  it("is written as the node wrote it, not through a reducer inherited from Object.prototype", async () => {
    const store = new MemoryCheckpointStore();
    const State = z.object({ constructor: z.string().default(""), toString: z.string().default("") });
    const flow = new Flow("named", { state: State })
      .node("write", () => ({ constructor: "built", toString: "shown" }))
      .end("write");
    const result = await runnerOn(store, new ToolRegistry()).run(
      flow,
      { constructor: "", toString: "" },
      { runId: "named-1" },
    );
    expect(result).toMatchObject({ status: "done", state: { constructor: "built", toString: "shown" } });
  });
});
