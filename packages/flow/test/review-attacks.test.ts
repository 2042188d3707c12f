import {
  type CheckpointStore,
  CheckpointConflict,
  type DurableEvent,
  Executor,
  RecoveryNeedsDecision,
  StoreUnavailable,
  ToolRegistry,
} from "@durable/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { DyingStore, KEY, MemoryCheckpointStore, settle, storeWith } from "./helpers.js";

/** A memory store whose `recordCall` fails once, as a store that did not answer would. */
class FlakyRecordStore extends MemoryCheckpointStore {
  failNext = false;
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new StoreUnavailable("the store did not answer (test)");
    }
    return super.recordCall(runId, segment, seq, sealed);
  }
}

function runner(store: CheckpointStore, registry: ToolRegistry) {
  return new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });
}

describe("a call record the store did not take", () => {
  it("is never counted by a checkpoint: the run stays recoverable, not corrupt", async () => {
    const store = new FlakyRecordStore();
    const ran: string[] = [];
    let firstWorker = true;
    const registry = new ToolRegistry()
      .tool("ping", async () => void ran.push("ping"), { idempotent: true })
      .tool("charge", async () => void ran.push("charge"));
    const State = z.object({ note: z.string().default("") });
    const flow = new Flow("flaky", { state: State })
      .node("a", async (_s, ctx) => {
        store.failNext = firstWorker;
        try {
          await ctx.call("ping", {});
        } catch (error) {
          return { note: `ping failed: ${(error as Error).name}` };
        }
        return {};
      })
      .node("b", async (_s, ctx) => {
        await ctx.call("charge", {});
        return {};
      })
      .edge("a", "b")
      .end("b");
    // Through a store that writes one at a time (no `commit`), so the record fails alone, not in a batch with a checkpoint.
    const first = runner(storeWith(store, {}), registry);
    // The log of this worker is poisoned after the failed write: node b's call fails and leaves the run for recovery.
    await expect(first.run(flow, {}, { runId: "flaky-1" })).rejects.toBeInstanceOf(StoreUnavailable);
    firstWorker = false;
    const result = await runner(store, registry).recover(flow, "flaky-1");
    expect(result.status).toBe("done");
    expect(ran.filter((t) => t === "charge")).toHaveLength(1);
  });
});

/** A memory store through which a worker dies while a record of `tool` is on its way: that record never lands, every other write does. */
class LostRecordStore extends MemoryCheckpointStore {
  constructor(readonly lose: string) {
    super();
  }
  losing = true;
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (this.losing && sealed.includes(`"tool":${JSON.stringify(this.lose)}`)) return new Promise(() => {});
    return super.recordCall(runId, segment, seq, sealed);
  }
}

describe("a checkpoint saved while a call record is on its way", () => {
  it("never counts a record that had not landed: recovery after the worker died is not corrupt", async () => {
    const store = new LostRecordStore("notify");
    const ran: string[] = [];
    const registry = new ToolRegistry()
      .tool("notify", async () => void ran.push("notify"), { idempotent: true })
      .tool("charge", async () => void ran.push("charge"));
    const State = z.object({ note: z.string().default("") });
    const flow = new Flow("lost", { state: State })
      .node("a", (_s, ctx) => {
        void ctx.call("notify", {}).catch(() => {}); // fire and forget
        return { note: "notified" };
      })
      .node("b", async (_s, ctx) => {
        await ctx.call("charge", {});
        return {};
      })
      .edge("a", "b")
      .end("b");
    // The first worker saves superstep 1 while notify's record is on its way, then dies (it never gets further).
    // The first worker on a connection of its own, as another process would be.
    void runner(storeWith(store, {}), registry).run(flow, {}, { runId: "lost-1" });
    await new Promise((resolve) => setTimeout(resolve, 30));
    store.losing = false;
    const result = await runner(store, registry).recover(flow, "lost-1");
    expect(result.status).toBe("done");
  });
});

describe("a call waiting on an approval", () => {
  it("pauses the run even when the node's own try/catch swallows the wait", async () => {
    const store = new MemoryCheckpointStore();
    let refunds = 0;
    const registry = new ToolRegistry().tool("refund", () => ++refunds, { approval: true });
    const State = z.object({ note: z.string().default("") });
    const flow = new Flow("careful", { state: State })
      .node("refund", async (_s, ctx) => {
        try {
          await ctx.call("refund", { amount: 50 });
          return { note: "refunded" };
        } catch {
          return { note: "refund did not go through" };
        }
      })
      .end("refund");
    const result = await runner(store, registry).run(flow, {}, { runId: "careful-1" });
    expect(result.status).toBe("paused");
    if (result.status !== "paused") return;
    const done = await runner(store, registry).resume(flow, "careful-1", { [result.approvals[0]!.callId]: true });
    expect(done).toMatchObject({ status: "done", state: { note: "refunded" } });
    expect(refunds).toBe(1);
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
    const result = await runner(store, registry)
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
    const result = await runner(store, new ToolRegistry()).run(
      flow,
      { constructor: "", toString: "" },
      { runId: "named-1" },
    );
    expect(result).toMatchObject({ status: "done", state: { constructor: "built", toString: "shown" } });
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
      runner(new MemoryCheckpointStore(), new ToolRegistry()).run(flow, {}, { runId: "spin-1" }),
    ).rejects.toThrow(/ran more than 3 times/);
  });
});

describe("a flow whose tool throws", () => {
  it("fails the run with the recorded error, replayed after a worker died before the failed checkpoint: the tool runs once", async () => {
    const store = new MemoryCheckpointStore();
    let bookings = 0;
    const registry = new ToolRegistry().tool("book", () => {
      bookings++;
      throw new Error("sold out");
    });
    const flow = new Flow("booking", { state: z.object({ note: z.string() }) })
      .node("book", async (_s, ctx) => ({ note: String(await ctx.call("book", { seats: 2 })) }))
      .end("book");
    void runner(new DyingStore(store, { op: "save", step: 1, when: "before" }), registry).run(
      flow,
      { note: "" },
      { runId: "b" },
    );
    await settle();
    expect(bookings).toBe(1);
    await expect(runner(store, registry).recover(flow, "b")).rejects.toThrow("book failed: Error: sold out");
    expect(await store.latest("b")).toMatchObject({ status: "failed", step: 2 });
    expect(bookings).toBe(1);
  });
});

describe("a resume whose round holds a call in doubt (a node swallowed an unrecordable result, then waited on an approval)", () => {
  it("stores the decision with its claim, stops with RecoveryNeedsDecision and run.needs-decision; a second resume is refused; the recovery that reruns the call spends the decision once", async () => {
    const store = new MemoryCheckpointStore();
    const ran = { lookup: 0, refund: 0 };
    const registry = new ToolRegistry()
      .tool("lookup", () => {
        ran.lookup++;
        return { at: new Date() };
      })
      .tool("refund", () => ++ran.refund, { approval: true });
    const flow = new Flow("refunds", { state: z.object({ note: z.string() }) })
      .node("refund", async (_s, ctx) => {
        await ctx.call("lookup", { order: 7 }).catch(() => undefined);
        return { note: `refund ${String(await ctx.call("refund", { order: 7 }))}` };
      })
      .end("refund");
    const events: DurableEvent[] = [];
    const worker = new FlowRunner(new Executor(registry), {
      checkpoints: store,
      checkpointKey: KEY,
      events: (e) => void events.push(e),
    });
    const paused = await worker.run(flow, { note: "" }, { runId: "r" });
    if (paused.status !== "paused") throw new Error("expected a pause");
    const refund = paused.approvals[0]!.callId;
    const error = await worker.resume(flow, "r", { [refund]: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([
      { tool: "lookup", why: "result could not be recorded" },
    ]);
    const claim = await store.latest("r");
    expect(events.at(-1)).toMatchObject({ type: "run.needs-decision", step: claim.step, calls: [{ tool: "lookup" }] });
    await expect(worker.resume(flow, "r", { [refund]: false })).rejects.toThrow(CheckpointConflict);
    expect(await worker.recover(flow, "r", { rerunInDoubt: true })).toMatchObject({
      status: "done",
      state: { note: "refund 1" },
    });
    expect(ran).toEqual({ lookup: 2, refund: 1 });
  });
});
