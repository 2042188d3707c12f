import type { MemoryData } from "@durable/core/internal";
import {
  type EventSink,
  Executor,
  MemoryCheckpointStore,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { DyingStore, storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools } from "./helpers.js";
import { diesInside, flow, inside, runner, worker, insideTool } from "./workers.js";

// A run a worker gives up (at stop, on a store error, on an abort) is released at once, and nothing more of it
// runs in that worker.

describe("the standing worker", () => {
  it("on stop, gives up a run still inside a tool after the deadline: its lease is released at once", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    (await insideTool(data, "hold_seats", tools, 200)).cut = true;
    const store = new MemoryCheckpointStore({ data });
    tools.hangInside = "hold_seats";
    const w = startWorker({
      serve: [worker(store, "b", tools, 5_000).served(flow)],
      pollMs: 20,
      stopDeadlineMs: 100,
      stopOnSignals: false,
    });
    await until(() => tools.count("hold_seats") === 2);
    expect(await store.leaseOf("r")).toMatchObject({ owner: expect.stringMatching(/^b#/) });
    await w.stop();
    expect(await store.leaseOf("r")).toBeUndefined();
    tools.hangInside = undefined;
    const c = worker(new MemoryCheckpointStore({ data }), "c", tools);
    expect(await c.recover(flow, "r")).toMatchObject({ status: "done" });
  });

  it("stops within its deadline (+1 s) when its event sink hangs mid-drive, and releases the run", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "hold_seats", tools, { ms: 100, die: true });
    const store = new MemoryCheckpointStore({ data });
    let hung = 0;
    // The sink answers the claim's events, then hangs from the first superstep's checkpoint on.
    const hanging: EventSink = (event) => {
      if (event.type !== "checkpoint.saved" || event.step < 3) return;
      hung += 1;
      return new Promise(() => {});
    };
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 5_000 }, hanging).served(flow)],
      pollMs: 10,
      stopDeadlineMs: 100,
      stopOnSignals: false,
    });
    await until(() => hung > 0);
    const started = performance.now();
    await w.stop();
    expect(performance.now() - started).toBeLessThan(1_400);
    expect(await store.leaseOf("r")).toBeUndefined();
  });
});

describe("stop() while the store hangs", () => {
  it("returns within its deadline (+1 s) even when the listing never answers", async () => {
    const tools = new Tools();
    let hang = false;
    const base = new MemoryCheckpointStore();
    const store = storeWith(base, {
      listUnfinished: (name, options) =>
        hang
          ? {
              [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<string>>(() => {}) }),
            }
          : base.listUnfinished(name, options),
    });
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b" }).served(flow)],
      pollMs: 10,
      maxPollMs: 10,
      stopDeadlineMs: 100,
      stopOnSignals: false,
    });
    await sleep(50);
    hang = true;
    await sleep(50);
    const started = performance.now();
    const stopped = await Promise.race([w.stop().then(() => true), sleep(2_000).then(() => false)]);
    expect(stopped, `stop() had not returned after ${Math.round(performance.now() - started)} ms`).toBe(true);
  });
});

describe("a worker stopped while a run it just claimed has not started driving (its event sink hangs)", () => {
  it("releases the run at stop, as it does mid-drive: the signal is not heard between claim and drive", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold_seats", tools, "a", 100);
    const store = new MemoryCheckpointStore({ data });
    let hung = 0;
    // An event sink whose webhook never answers: the claim's checkpoint.saved waits on it, before the drive begins.
    const hanging: EventSink = () => {
      hung += 1;
      return new Promise(() => {});
    };
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 300 }, hanging).served(flow)],
      pollMs: 10,
      stopDeadlineMs: 100,
      stopOnSignals: false,
    });
    await until(() => hung > 0);
    await w.stop();
    // A run given up at stop is claimable at once, though the stop came before the drive listened for it: a lease
    // nobody released would be renewed by the claim's LeaseKeeper every 100 ms for as long as the process lives.
    await sleep(500);
    expect(await store.leaseOf("r")).toBeUndefined();
  });
});

describe("a claim whose call-log read fails (a store error right after the claim)", () => {
  it("gives the run up at once, as any other store error does: no lease is kept alive behind the caller's back", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    // Worker "a" dies inside hold_seats (an idempotent tool): its lease runs out after 150 ms.
    await diesInside(data, "hold_seats", tools, "a", 150);
    await sleep(200);

    // Worker "b" claims it, then its read of the call log fails once (the store blinked).
    let failCalls = true;
    const base = new MemoryCheckpointStore({ data });
    const flaky = storeWith(base, {
      calls: (runId) => {
        if (!failCalls) return base.calls(runId);
        failCalls = false;
        return Promise.reject(new StoreUnavailable("the connection blinked."));
      },
    });
    await expect(runner(flaky, tools, { owner: "b", ms: 150 }).recover(flow, "r")).rejects.toThrow(StoreUnavailable);

    // A run given up on a store error is claimable at once: were b's lease keeper left renewing it every 50 ms, no
    // other worker could claim the run while b's process lives.
    await sleep(400);
    expect(await base.leaseOf("r")).toBeUndefined();
    const c = runner(new MemoryCheckpointStore({ data }), tools, { owner: "c", ms: 150 });
    await expect(c.recover(flow, "r")).resolves.toMatchObject({ status: "done" });
  });
});

describe("a signal that aborts a recovery", () => {
  it("already aborted: claims nothing (no step written, the old segment not fenced)", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold_seats", tools, "a", 100);
    await sleep(150);
    const store = new MemoryCheckpointStore({ data });
    const before = (await store.latest("r")).step;
    const b = runner(store, tools, { owner: "b", ms: 100 });
    await expect(b.recover(flow, "r", { signal: AbortSignal.abort(new Error("shutting down")) })).rejects.toThrow(
      "shutting down",
    );
    // The driver looks at the signal before its claim: no step 1 with a new segment is saved.
    expect((await store.latest("r")).step).toBe(before);
  });

  it("aborted inside a node's first call: the node's next call is not started after the run was given up", async () => {
    const Order = z.object({ note: z.string() });
    let charged = 0;
    let finishHold: () => void = () => undefined;
    const registry = new ToolRegistry()
      .tool(
        "hold",
        () =>
          new Promise<string>((resolve) => {
            finishHold = () => resolve("held");
          }),
        { idempotent: true },
      )
      .tool("charge", () => {
        charged += 1;
        return "charged";
      });
    const twoCalls = new Flow("two-calls", { state: Order })
      .node("order", async (_, ctx) => {
        await ctx.call("hold", {});
        return { note: String(await ctx.call("charge", {})) };
      })
      .end("order");
    const store = new MemoryCheckpointStore();
    const r = new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });
    const controller = new AbortController();
    // Worker "a" dies inside hold; b recovers the run with a signal and is inside hold again when it aborts.
    const dying = new DyingStore(store, undefined);
    void new FlowRunner(new Executor(registry), {
      checkpoints: dying,
      checkpointKey: KEY,
      lease: { owner: "a", ms: 100 },
    })
      .run(twoCalls, { note: "" }, { runId: "r" })
      .catch(() => undefined);
    await sleep(20);
    dying.dead = true;
    finishHold();
    await sleep(150);
    const recovering = r.recover(twoCalls, "r", { signal: controller.signal, rerunInDoubt: true });
    void recovering.catch(() => undefined);
    await sleep(20);
    controller.abort(new Error("shutting down"));
    finishHold();
    await expect(recovering).rejects.toThrow("shutting down");
    // The lease was released at the abort: a charge after it would be made for a run given up (another worker may
    // claim it meanwhile, and the charge would then be in doubt and wait for a decision).
    expect(charged).toBe(0);
  });

  it("releases the lease at once, saves nothing more, and the finished call is replayed, not run again", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "hold_seats", tools, { ms: 100, die: true });
    await sleep(150);
    const store = new MemoryCheckpointStore({ data });
    let release: () => void = () => undefined;
    const registry = new ToolRegistry()
      .tool("hold_seats", () => "held", { idempotent: true })
      .tool(
        "charge_card",
        () =>
          new Promise<string>((resolve) => {
            release = () => resolve("charged");
          }),
      )
      .tool("email_tickets", () => "mailed");
    const controller = new AbortController();
    const b = runner(store, registry, { owner: "b", ms: 5_000 });
    const recovering = b.recover(flow, "r", { signal: controller.signal });
    void recovering.catch(() => undefined);
    await until(async () => (await store.calls("r")).length >= 3);
    const step = (await store.latest("r")).step;
    controller.abort(new Error("shutting down"));
    await sleep(5);
    expect(await store.leaseOf("r")).toBeUndefined();
    release();
    await expect(recovering).rejects.toThrow("shutting down");
    expect((await store.latest("r")).step).toBe(step);
    let charged = 0;
    const again = new ToolRegistry()
      .tool("hold_seats", () => "held", { idempotent: true })
      .tool("charge_card", () => {
        charged += 1;
        return "charged";
      })
      .tool("email_tickets", () => "mailed");
    expect(await runner(store, again, { owner: "c" }).recover(flow, "r")).toMatchObject({ status: "done" });
    expect(charged).toBe(0);
  });
});
