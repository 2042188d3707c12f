import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CheckpointConflict, RecoveryNeedsDecision, StoreUnavailable, ToolRegistry } from "@durable/core";
import { Flow } from "../src/index.js";
import {
  DyingStore,
  MemoryCheckpointStore,
  Tools,
  runnerOn,
  settle,
  storeWith,
  ticketsFlow,
  type CrashPoint,
} from "./helpers.js";

const TOOLS = ["hold_seats", "charge_card", "email_tickets"] as const;
const ORDER = { show: "Hamlet", seats: 2 };
const FINAL = { show: "Hamlet", seats: 2, note: "mailed Hamlet" };

/** `ran`: the tool ran in the dying worker; `inDoubt`: its call is in doubt on recovery. */
type Point = {
  name: string;
  crash: (tool: string, step: number) => CrashPoint | "inside";
  inDoubt: boolean;
  ran: boolean;
};
const POINTS: Point[] = [
  {
    name: "before the started record",
    crash: (tool) => ({ op: "recordCall", kind: "started", tool, when: "before" }),
    inDoubt: false,
    ran: false,
  },
  {
    name: "after started, before the tool",
    crash: (tool) => ({ op: "recordCall", kind: "started", tool, when: "after" }),
    inDoubt: true,
    ran: false,
  },
  { name: "inside the tool", crash: () => "inside", inDoubt: true, ran: true },
  {
    name: "after the tool, before done",
    crash: (tool) => ({ op: "recordCall", kind: "done", tool, when: "before" }),
    inDoubt: true,
    ran: true,
  },
  {
    name: "after done, before the checkpoint",
    crash: (_, step) => ({ op: "save", step, when: "before" }),
    inDoubt: false,
    ran: true,
  },
  {
    name: "after the checkpoint",
    crash: (_, step) => ({ op: "save", step, when: "after" }),
    inDoubt: false,
    ran: true,
  },
];

describe("a worker dies at every point of every call of the tickets flow", () => {
  const cases = POINTS.flatMap((point) => TOOLS.map((tool, i) => [point.name, tool, point, i + 1] as const));

  it.each(cases)("%s of %s: a fresh runner recovers it", async (_, tool, point, step) => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const crash = point.crash(tool, step);
    if (crash === "inside") tools.hangInside = tool;
    const flow = ticketsFlow();

    // Worker 1 dies at the point: its run() never settles and it writes nothing more.
    const through = new DyingStore(store, crash === "inside" ? undefined : crash);
    void runnerOn(through, tools.registry()).run(flow, ORDER, { runId: "order-7" });
    await settle();
    if (crash === "inside") await through.die();
    const before = new Map(tools.ran);
    const doneRecords = await doneTools(store);

    // Worker 2: a fresh runner on the same store.
    tools.hangInside = undefined;
    const worker2 = runnerOn(store, tools.registry());
    const needsDecision = point.inDoubt && tool !== "hold_seats";
    if (needsDecision) {
      const error = await worker2.recover(flow, "order-7").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RecoveryNeedsDecision);
      expect((error as RecoveryNeedsDecision).calls.map((c) => c.tool)).toEqual([tool]);
      expect(tools.ran).toEqual(before); // raised before any tool ran
    }
    const ended = point.name === "after the checkpoint" && step === 3;
    if (ended) {
      // The last checkpoint says done: there is nothing to recover.
      await expect(worker2.recover(flow, "order-7")).rejects.toThrow(CheckpointConflict);
      expect((await store.latest("order-7")).status).toBe("done");
    } else {
      const result = await worker2.recover(flow, "order-7", { rerunInDoubt: needsDecision });
      expect(result).toMatchObject({ status: "done", state: FINAL });
    }

    // Every tool whose done record existed before the crash ran exactly once in total.
    for (const finished of doneRecords) expect(tools.count(finished), finished).toBe(1);
    for (const t of TOOLS) expect(tools.count(t)).toBe(t === tool && point.inDoubt && point.ran ? 2 : 1);
  });
});

async function doneTools(store: MemoryCheckpointStore): Promise<string[]> {
  const calls = await store.calls("order-7");
  return calls
    .map((c) => JSON.parse(c.sealed.slice(c.sealed.indexOf(".", 3) + 1)) as { kind: string; tool: string })
    .filter((r) => r.kind === "done")
    .map((r) => r.tool);
}

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
    const first = runnerOn(storeWith(store, {}), registry);
    // The log of this worker is poisoned after the failed write: node b's call fails and leaves the run for recovery.
    await expect(first.run(flow, {}, { runId: "flaky-1" })).rejects.toBeInstanceOf(StoreUnavailable);
    firstWorker = false;
    const result = await runnerOn(store, registry).recover(flow, "flaky-1");
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
    void runnerOn(storeWith(store, {}), registry).run(flow, {}, { runId: "lost-1" });
    await new Promise((resolve) => setTimeout(resolve, 30));
    store.losing = false;
    // Its lease is live (it waits in this process, renewing): the recovery takes the run over.
    const result = await runnerOn(store, registry).recover(flow, "lost-1", { takeOver: true });
    expect(result.status).toBe("done");
  });
});
