import type { MemoryData } from "@durable/core/internal";
import {
  type DurableEvent,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  type ToolContext,
  ToolFailed,
  ToolRegistry,
  ToolTimedOut,
  UnrecordableResult,
  startWorker,
} from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { DyingStore, settle } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { runner, twoSteps } from "./workers.js";

// A tool that fails, and a worker that dies: the call's retries go on where the log left them, and its recorded
// error replays without the tool running again.

const State = z.object({ a: z.string().default(""), b: z.string().default("") });

describe("a failed call and a worker that dies", () => {
  it("goes on with a call a dead worker left failed: the next attempt after what is left of its wait, nothing else rerun", async () => {
    const data: MemoryData = new Map();
    const attempts: Array<{ attempt: number; at: number }> = [];
    let prepped = 0;
    const registry = new ToolRegistry()
      .tool("prep", () => {
        prepped += 1;
        return "prepared";
      })
      .tool(
        "pay",
        (_args: unknown, ctx: ToolContext) => {
          attempts.push({ attempt: ctx.attempt, at: Date.now() });
          if (ctx.attempt === 1) throw new Error("503");
          return "paid";
        },
        { retry: { attempts: 3, initialDelayMs: 1_000, jitter: 0 } },
      );
    const dying = new DyingStore(new MemoryCheckpointStore({ data }), {
      op: "recordCall",
      kind: "failed",
      tool: "pay",
      when: "after",
    });
    void runner(dying, registry, { owner: "a", ms: 150 })
      .run(twoSteps, {}, { runId: "r" })
      .catch(() => undefined);
    await until(() => dying.dead);
    const base = new MemoryCheckpointStore({ data });
    const sealer = Sealer.withKeys(KEY);
    const failed = (await readCallLog(base, sealer, "r", [])).find((r) => r.kind === "failed");
    const w = startWorker({
      serve: [runner(base, registry, { owner: "b", ms: 150 }).served(twoSteps)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await until(async () => (await base.latest("r")).status === "done");
    await w.stop();
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(attempts[1]!.at).toBeGreaterThanOrEqual(failed!.retryAt!);
    expect(attempts[1]!.at - failed!.retryAt!).toBeLessThan(200); // not a whole second more
    expect(prepped).toBe(1);
  });

  it("a flow node that catches ToolFailed gets the same error on recovery after a crash, without the tool running again", async () => {
    const data: MemoryData = new Map();
    let charged = 0;
    const registry = new ToolRegistry().tool(
      "charge",
      () => {
        charged += 1;
        throw new Error("card declined");
      },
      { retry: { attempts: 2, initialDelayMs: 10, jitter: 0 } },
    );
    const caught = new Flow("caught", { state: State })
      .node("pay", async (_state, ctx) => {
        try {
          return { a: String(await ctx.call("charge", { cents: 1 })) };
        } catch (error) {
          return { a: error instanceof ToolFailed ? `failed after ${error.attempts}: ${error.error}` : "other" };
        }
      })
      .end("pay");
    // The worker dies right before the superstep's save: the error record is the only trace.
    const dying = new DyingStore(new MemoryCheckpointStore({ data }), { op: "save", step: 1, when: "before" });
    void runner(dying, registry, { owner: "a", ms: 100 })
      .run(caught, {}, { runId: "r" })
      .catch(() => undefined);
    await until(() => dying.dead);
    await sleep(150);
    const result = await runner(new MemoryCheckpointStore({ data }), registry, { owner: "b", ms: 100 }).recover(
      caught,
      "r",
    );
    expect(result).toMatchObject({ status: "done", state: { a: "failed after 2: Error: card declined" } });
    expect(charged).toBe(2);
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

describe("a node that catches the error of a call left in doubt", () => {
  const cases = [
    {
      what: "a charge that timed out and charges late",
      error: ToolTimedOut,
      charge: async () => {
        await sleep(150);
        return "charged";
      },
    },
    { what: "a charge whose result cannot be stored", error: UnrecordableResult, charge: () => ({ at: new Date() }) },
  ];

  it.each(cases)("$what: the run is left for a decision, not done, and the next node never runs", async (c) => {
    const store = new MemoryCheckpointStore();
    let charged = 0;
    let mailed = 0;
    const registry = new ToolRegistry()
      .tool(
        "charge",
        async () => {
          const result = await c.charge();
          charged += 1;
          return result;
        },
        { timeoutMs: 30 },
      )
      .tool("mail", () => ++mailed);
    const flow = new Flow("careless", { state: z.object({ note: z.string() }) })
      .node("pay", async (_s, ctx) => {
        try {
          await ctx.call("charge", { cents: 4000 });
          return { note: "charged" };
        } catch {
          return { note: "the charge did not go through" };
        }
      })
      .node("mail", async (_s, ctx) => ({ note: String(await ctx.call("mail", {})) }))
      .edge("pay", "mail")
      .end("mail");
    const events: DurableEvent[] = [];
    await expect(runnerOn(store, registry, events).run(flow, { note: "" }, { runId: "p" })).rejects.toThrow(c.error);
    expect(events.filter((e) => e.type === "run.done" || e.type === "run.failed")).toEqual([]);
    expect(await store.latest("p")).toMatchObject({ status: "running", step: 0 });
    await until(() => charged === 1);

    const recovery: DurableEvent[] = [];
    const error = await runnerOn(store, registry, recovery)
      .recover(flow, "p")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect(recovery.map((e) => e.type)).toEqual(["checkpoint.saved", "run.needs-decision"]);
    await sleep(200);
    expect([charged, mailed]).toEqual([1, 0]);
  });
});
