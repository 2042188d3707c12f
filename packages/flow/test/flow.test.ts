import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CheckpointConflict, CheckpointNotFound, type DurableEvent, InvalidInput, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowError } from "../src/index.js";
import { MemoryCheckpointStore, Tools, runnerOn, ticketsFlow } from "./helpers.js";

const ORDER = { show: "Hamlet", seats: 2 };

describe("running a flow", () => {
  it("runs the tickets flow to its end, one checkpoint per superstep, with events", async () => {
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const tools = new Tools();
    const result = await runnerOn(store, tools.registry(), events).run(ticketsFlow(), ORDER, { runId: "order-7" });
    expect(result).toEqual({
      status: "done",
      runId: "order-7",
      step: 3,
      state: { show: "Hamlet", seats: 2, note: "mailed Hamlet" },
    });
    expect(events.filter((e) => e.type === "checkpoint.saved").map((e) => [e.step, e.status])).toEqual([
      [0, "running"],
      [1, "running"],
      [2, "running"],
      [3, "done"],
    ]);
    expect(events.filter((e) => e.type === "call.done").length).toBe(3);
    expect(events.at(-1)).toMatchObject({ type: "run.done", runId: "order-7", step: 3, kind: "flow" });
    expect(events[0]).toMatchObject({ type: "checkpoint.saved", kind: "flow", name: "tickets", unreplayed: [] });
  });

  it("gives a new unguessable run id when none is given", async () => {
    const result = await runnerOn(new MemoryCheckpointStore(), new Tools().registry()).run(ticketsFlow(), ORDER);
    expect(result.runId).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("runs a fan-out concurrently and joins it, merging fields with a reducer", async () => {
    const State = z.object({ log: z.array(z.string()), total: z.number() });
    let running = 0;
    let most = 0;
    const part = (name: string) => async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 10));
      running--;
      return { log: [name] };
    };
    const flow = new Flow("fan", { state: State, reducers: { log: (a, b) => [...a, ...b] } })
      .node("start", () => ({ log: ["start"] }))
      .node("a", part("a"))
      .node("b", part("b"))
      .node("c", part("c"))
      .node("sum", (s) => ({ total: s.log.length }))
      .edge("start", ["a", "b", "c"])
      .edge(["a", "b", "c"], "sum")
      .end("sum");
    const result = await runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, { log: [], total: 0 });
    expect(result).toMatchObject({ status: "done", step: 3, state: { log: ["start", "a", "b", "c"], total: 4 } });
    expect(most).toBe(3);
  });

  it("waits at a join until every branch arrived, when branches differ in length", async () => {
    const State = z.object({ seen: z.array(z.string()) });
    const flow = new Flow("join", { state: State, reducers: { seen: (a, b) => [...a, ...b] } })
      .node("start", () => ({}))
      .node("short", () => ({ seen: ["short"] }))
      .node("long1", () => ({ seen: ["long1"] }))
      .node("long2", () => ({ seen: ["long2"] }))
      .node("done", (s) => ({ seen: [`done after ${s.seen.join(",")}`] }))
      .edge("start", ["short", "long1"])
      .edge("long1", "long2")
      .edge(["short", "long2"], "done")
      .end("done");
    const result = await runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, { seen: [] });
    expect(result).toMatchObject({ state: { seen: ["short", "long1", "long2", "done after short,long1,long2"] } });
  });

  it("follows a conditional edge and stops a node visited past its limit with FlowError, saving the run as failed", async () => {
    const State = z.object({ n: z.number() });
    const store = new MemoryCheckpointStore();
    const counting = new Flow("count", { state: State })
      .node("inc", (s) => ({ n: s.n + 1 }), { maxVisits: 3 })
      .node("stop", () => ({}))
      .edge("inc", (s) => (s.n < 2 ? "inc" : "stop"), { targets: ["inc", "stop"] })
      .end("stop");
    const runner = runnerOn(store, new ToolRegistry());
    expect(await runner.run(counting, { n: 0 })).toMatchObject({ status: "done", state: { n: 2 } });
    const looping = new Flow("loop", { state: State })
      .node("inc", (s) => ({ n: s.n + 1 }), { maxVisits: 3 })
      .edge("inc", () => "inc");
    await expect(runner.run(looping, { n: 0 }, { runId: "loop-1" })).rejects.toThrow(/ran more than 3 times/);
    expect((await store.latest("loop-1")).status).toBe("failed");
  });

  it("refuses two nodes writing one field in a superstep without a reducer", async () => {
    const State = z.object({ x: z.number() });
    const flow = new Flow("clash", { state: State })
      .node("start", () => ({}))
      .node("a", () => ({ x: 1 }))
      .node("b", () => ({ x: 2 }))
      .edge("start", ["a", "b"])
      .end("a", "b");
    await expect(runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, { x: 0 })).rejects.toThrow(
      /"a" and "b" both wrote "x"/,
    );
  });

  it("saves the run as failed and throws the tool's own error when a tool fails", async () => {
    const store = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool("charge_card", () => {
      throw new Error("card declined");
    });
    const flow = new Flow("pay", { state: z.object({ note: z.string() }) })
      .node("pay", new Call("charge_card", { args: () => ({}), into: "note" }))
      .end("pay");
    await expect(runnerOn(store, registry).run(flow, { note: "" }, { runId: "r" })).rejects.toThrow("card declined");
    expect((await store.latest("r")).status).toBe("failed");
    await expect(runnerOn(store, registry).recover(flow, "r")).rejects.toThrow(CheckpointConflict);
  });

  it("works with any Standard Schema: valibot too", async () => {
    const flow = new Flow("v", { state: v.object({ n: v.number() }) }).node("inc", (s) => ({ n: s.n + 1 })).end("inc");
    expect(await runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, { n: 1 })).toMatchObject({
      state: { n: 2 },
    });
  });
});

describe("bad input", () => {
  it("state that fails the schema is InvalidInput naming the field, and nothing is saved", async () => {
    const store = new MemoryCheckpointStore();
    const error = await runnerOn(store, new Tools().registry())
      .run(ticketsFlow(), { show: "Hamlet", seats: "two" }, { runId: "bad" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInput);
    expect((error as Error).message).toMatch(/seats: /);
    await expect(store.latest("bad")).rejects.toThrow(CheckpointNotFound);
  });

  it("an update that fails the schema fails the run with a message naming the field", async () => {
    const store = new MemoryCheckpointStore();
    const flow = new Flow("upd", { state: z.object({ n: z.number() }) })
      .node("bad", () => ({ n: "x" as never }))
      .end("bad");
    await expect(runnerOn(store, new ToolRegistry()).run(flow, { n: 1 }, { runId: "r" })).rejects.toThrow(/n: /);
    expect((await store.latest("r")).status).toBe("failed");
  });

  it("an invalid graph is FlowError listing its problems", () => {
    const State = z.object({});
    expect(() => new Flow("g", { state: State }).node("a", () => ({})).edge("a", "nowhere").graph).toThrow(
      /unknown node "nowhere"/,
    );
    expect(
      () =>
        new Flow("g", { state: State })
          .node("a", () => ({}))
          .node("a", () => ({}))
          .end("a").graph,
    ).toThrow(/used twice/);
    expect(
      () =>
        new Flow("g", { state: State })
          .node("a", () => ({}))
          .node("b", () => ({}))
          .edge("a", "b")
          .edge("b", "a").graph,
    ).toThrow(FlowError);
    expect(() => new Flow("g", { state: State }).graph).toThrow(/no nodes/);
  });

  it("a Call of a tool that is not registered is FlowError before anything is saved", async () => {
    const store = new MemoryCheckpointStore();
    await expect(runnerOn(store, new ToolRegistry()).run(ticketsFlow(), ORDER, { runId: "r" })).rejects.toThrow(
      /not registered/,
    );
    await expect(store.latest("r")).rejects.toThrow(CheckpointNotFound);
  });
});

describe("the graph digest", () => {
  it("covers the structure, not the text of closures", () => {
    const State = z.object({ n: z.number() });
    const one = new Flow("d", { state: State }).node("a", (s) => ({ n: s.n + 1 })).end("a");
    const two = new Flow("d", { state: State }).node("a", (s) => ({ n: s.n + 2 })).end("a");
    const three = new Flow("d", { state: State })
      .node("a", (s) => ({ n: s.n + 1 }))
      .node("b", () => ({}))
      .edge("a", "b")
      .end("b");
    expect(one.digest).toBe(two.digest);
    expect(one.digest).not.toBe(three.digest);
    expect(ticketsFlow().digest).toBe(ticketsFlow().digest);
  });
});

describe("maxVisits", () => {
  it("bounds a node named like an Object method as any other", { timeout: 3000 }, async () => {
    const State = z.object({ n: z.number().default(0) });
    const flow = new Flow("spin", { state: State, maxVisits: 3 })
      .node("toString", (s) => ({ n: s.n + 1 }))
      .edge("toString", (s) => (s.n < 1000 ? "toString" : "done"), { targets: ["toString", "done"] })
      .node("done", () => ({}))
      .end("done");
    await expect(
      runnerOn(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, {}, { runId: "spin-1" }),
    ).rejects.toThrow(/ran more than 3 times/);
  });
});
