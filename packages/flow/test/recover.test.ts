import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { MemoryData } from "@durable/core/internal";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type DurableEvent,
  Executor,
  IdentityMismatch,
  RecoveryNeedsDecision,
  ToolRegistry,
} from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { until } from "@durable/test-utils/waiting";
import { Call, Flow, FlowError, FlowRunner } from "../src/index.js";
import {
  DyingStore,
  KEY,
  MemoryCheckpointStore,
  Tools,
  forever,
  runnerOn,
  settle,
  storeWith,
  ticketsFlow,
} from "./helpers.js";
import { Cuttable, flow, worker } from "./workers.js";

const ORDER = { show: "Hamlet", seats: 2 };

/** A run whose worker died right after saving step `step`. */
async function crashedAfterStep(store: MemoryCheckpointStore, tools: Tools, runId: string, step: number) {
  void runnerOn(new DyingStore(store, { op: "save", step, when: "after" }), tools.registry()).run(
    ticketsFlow(),
    ORDER,
    { runId },
  );
  await settle();
}

describe("recovery", () => {
  it("of two runners recovering one run at once, one wins; the other gets CheckpointConflict before running any tool", async () => {
    // Two connections to one store, as two workers have: the store's compare-and-set decides.
    const data: MemoryData = new Map();
    const store = new MemoryCheckpointStore({ data });
    const tools = new Tools();
    await crashedAfterStep(store, tools, "r", 1);
    const before = tools.count("charge_card");
    const results = await Promise.allSettled([
      runnerOn(store, tools.registry()).recover(ticketsFlow(), "r"),
      runnerOn(new MemoryCheckpointStore({ data }), tools.registry()).recover(ticketsFlow(), "r"),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")?.reason).toBeInstanceOf(CheckpointConflict);
    expect(tools.count("charge_card") - before).toBe(1);
    expect(tools.count("email_tickets")).toBe(1);
  });

  it("fences a cut-off runner: its running call cannot record, and it starts no other call", async () => {
    const store = new MemoryCheckpointStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const tools = new Tools();
    const registry = new ToolRegistry()
      .tool("hold_seats", () => "held", { idempotent: true })
      .tool("charge_card", async () => {
        await gate;
        return "charged";
      })
      .tool(
        "email_tickets",
        tools.tool("email_tickets", () => "mailed"),
      );
    // The first worker on a connection of its own, as another process would be.
    const first = runnerOn(storeWith(store, {}), registry).run(ticketsFlow(), ORDER, { runId: "r" });
    await settle();
    // Another worker takes the run over: charge_card is in doubt, so it stops there, holding the claim.
    await expect(runnerOn(store, registry).recover(ticketsFlow(), "r", { takeOver: true })).rejects.toThrow(
      RecoveryNeedsDecision,
    );
    release();
    await expect(first).rejects.toThrow(CheckpointConflict);
    expect(tools.count("email_tickets")).toBe(0);
    const segments = (await store.calls("r")).map((c) => c.segment);
    expect(segments.every((s) => s === 0)).toBe(true);
    expect((await store.latest("r")).segment).toBe(1);
  });

  it("reruns only the third call of a fan-out whose worker died after two finished", async () => {
    const State = z.object({ a: z.string(), b: z.string(), c: z.string() });
    const tools = new Tools();
    const registry = new ToolRegistry()
      .tool(
        "ta",
        tools.tool("ta", () => "A"),
      )
      .tool(
        "tb",
        tools.tool("tb", () => "B"),
      )
      .tool(
        "tc",
        tools.tool("tc", () => "C"),
      );
    const flow = new Flow("fan", { state: State })
      .node("start", () => ({}))
      .node("a", new Call("ta", { args: () => ({}), into: "a" }))
      .node("b", new Call("tb", { args: () => ({}), into: "b" }))
      .node("c", new Call("tc", { args: () => ({}), into: "c" }))
      .edge("start", ["a", "b", "c"])
      .end("a", "b", "c");
    const store = new MemoryCheckpointStore();
    tools.hangInside = "tc";
    // The first worker on a connection of its own, as another process would be.
    void runnerOn(storeWith(store, {}), registry).run(flow, { a: "", b: "", c: "" }, { runId: "r" });
    // Until ta's and tb's results are stored (each lands at the end of the turn it finished in) while tc hangs.
    const done = async () => (await store.calls("r")).filter((c) => c.sealed.includes('"kind":"done"')).length;
    for (let wait = 0; wait < 500 && (await done()) < 2; wait++) await settle(10);
    tools.hangInside = undefined;
    // Its lease is live (it hangs in this process, renewing): the recovery takes the run over.
    const error = await runnerOn(store, registry)
      .recover(flow, "r", { takeOver: true })
      .catch((e: unknown) => e);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([{ tool: "tc", why: "started with no result" }]);
    const events: DurableEvent[] = [];
    const result = await runnerOn(store, registry, events).recover(flow, "r", { rerunInDoubt: true });
    expect(result).toMatchObject({ status: "done", state: { a: "A", b: "B", c: "C" } });
    expect([tools.count("ta"), tools.count("tb"), tools.count("tc")]).toEqual([1, 1, 2]);
    const recovered = events.find((e) => e.type === "run.recovered");
    expect(recovered).toMatchObject({ replayed: [{ tool: "ta" }, { tool: "tb" }], rerun: [{ tool: "tc" }] });
  });

  it("runs a call whose arguments changed as a new call, and lists the old one as unreplayed", async () => {
    let seats = 2;
    const tools = new Tools();
    const flow = new Flow("args", { state: z.object({ note: z.string() }) })
      .node("pay", async (_, ctx) => ({ note: String(await ctx.call("charge_card", { seats })) }))
      .end("pay");
    const store = new MemoryCheckpointStore();
    void runnerOn(new DyingStore(store, { op: "save", step: 1, when: "before" }), tools.registry()).run(
      flow,
      { note: "" },
      { runId: "r" },
    );
    await settle();
    seats = 3;
    const events: DurableEvent[] = [];
    const result = await runnerOn(store, tools.registry(), events).recover(flow, "r");
    expect(result).toMatchObject({ state: { note: "charged 120" } });
    expect(tools.count("charge_card")).toBe(2);
    const saved = events.filter((e) => e.type === "checkpoint.saved").at(-1);
    expect(saved).toMatchObject({
      status: "done",
      unreplayed: [{ callId: callIdOf(1, "pay", "charge_card", { seats: 2 }), tool: "charge_card" }],
    });
  });

  it("returns a paused run as its paused result, and refuses ended, unknown, changed and foreign runs", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const runner = runnerOn(store, tools.registry());
    await runner.run(ticketsFlow(), ORDER, { runId: "done" });
    await expect(runner.recover(ticketsFlow(), "done")).rejects.toThrow(CheckpointConflict);
    await expect(runner.recover(ticketsFlow(), "nope")).rejects.toThrow(CheckpointNotFound);

    await crashedAfterStep(store, tools, "cut", 1);
    const changed = ticketsFlow()
      .node("extra", () => ({}))
      .edge("send", "extra")
      .end("extra");
    await expect(runner.recover(changed, "cut")).rejects.toThrow(FlowError);
    const other = new Flow("other", { state: z.object({}) }).node("x", () => ({})).end("x");
    await expect(runner.recover(other, "cut")).rejects.toThrow(/belongs to flow "tickets"/);
  });

  it("recoverEach recovers runs concurrently: one run whose tool hangs does not hold up the others", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    for (const seats of [1, 2, 3]) {
      const a = new Cuttable(data);
      tools.hangInside = "charge_card";
      void worker(a, "a", tools, 100)
        .run(flow, { show: "Hamlet", seats }, { runId: `r${seats}` })
        .catch(() => undefined);
      await until(() => tools.count("charge_card") === seats);
      a.cut = true;
    }
    tools.hangInside = undefined;
    await new Promise((resolve) => setTimeout(resolve, 150));
    // On recovery the charge of one seat hangs forever.
    const registry = new ToolRegistry()
      .tool("hold_seats", async () => "held", { idempotent: true })
      .tool("charge_card", async (a: { seats: number }) => (a.seats === 1 ? forever() : "charged"))
      .tool("email_tickets", async () => "mailed");
    const b = new FlowRunner(new Executor(registry), {
      checkpoints: new MemoryCheckpointStore({ data }),
      checkpointKey: KEY,
    });
    const done: string[] = [];
    void (async () => {
      for await (const settled of b.recoverEach(flow, { rerunInDoubt: true, concurrency: 3 })) done.push(settled.item);
    })();
    await until(() => done.length === 2);
    expect(done.sort()).toEqual(["r2", "r3"]);
  });
});

describe("identity on recovery", () => {
  const State = z.object({ who: z.string() });
  const flow = new Flow("who", { state: State })
    .node("wait", new Call("noop", { args: () => ({}) }))
    .node("read", (_, ctx) => ({ who: `${ctx.user}/${ctx.thread}` }))
    .edge("wait", "read")
    .end("read");

  async function crashed(store: MemoryCheckpointStore, runId: string, ctx: object) {
    const registry = new ToolRegistry().tool("noop", () => null, { idempotent: true });
    void runnerOn(new DyingStore(store, { op: "save", step: 1, when: "after" }), registry).run(
      flow,
      { who: "" },
      { runId, ctx },
    );
    await settle();
    return runnerOn(store, registry);
  }

  it("restores user and thread without a ctx, and refuses a ctx for anyone else", async () => {
    const store = new MemoryCheckpointStore();
    const runner = await crashed(store, "r", { user: "ada", thread: "t-1" });
    await expect(runner.recover(flow, "r", { ctx: { user: "eve" } })).rejects.toThrow(IdentityMismatch);
    expect(await runner.recover(flow, "r")).toMatchObject({ state: { who: "ada/t-1" } });
  });

  it("needs the ctx back for a run that had a principal; recoverAll reports it instead of skipping it", async () => {
    const store = new MemoryCheckpointStore();
    const runner = await crashed(store, "p", { user: "ada", principal: "svc-1" });
    await crashed(store, "q", { user: "bob" });
    await expect(runner.recover(flow, "p")).rejects.toThrow(/principal/);
    // The crashed workers' leases are live: an operator who knows they are gone takes them over.
    const all = await runner.recoverAll(flow, { takeOver: true });
    expect([...all.keys()].sort()).toEqual(["p", "q"]);
    expect(all.get("p")).toBeInstanceOf(IdentityMismatch);
    expect(all.get("q")).toMatchObject({ status: "done", state: { who: "bob/undefined" } });
    expect(await runner.recover(flow, "p", { ctx: { user: "ada", principal: "svc-1" } })).toMatchObject({
      status: "done",
    });
  });
});
