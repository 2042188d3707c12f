import {
  defineQueue,
  drain,
  InvalidInput,
  MemoryCheckpointStore,
  type RunWorker,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { sleep } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { runnerOn } from "./helpers.js";

// Queues: runs started on a queue are taken by the workers that serve it, in its order, within limits the store
// keeps for the whole fleet. The verdict is the tool's own record of who was inside it when, not the store's.

/** A one-node flow whose `work` tool records each run inside it; the node sleeps first when the input asks. */
function job() {
  const inside = new Map<string, string>();
  const order: string[] = [];
  const entered: number[] = [];
  let most = 0;
  const mostByKey = new Map<string, number>();
  const gate = { ms: 30 };
  const registry = new ToolRegistry().tool("work", async (args: { customer: string }, ctx) => {
    inside.set(ctx.runId, args.customer);
    order.push(ctx.runId);
    entered.push(Date.now());
    most = Math.max(most, inside.size);
    const sameKey = [...inside.values()].filter((customer) => customer === args.customer).length;
    mostByKey.set(args.customer, Math.max(mostByKey.get(args.customer) ?? 0, sameKey));
    await sleep(gate.ms);
    inside.delete(ctx.runId);
    return "done";
  });
  const flow = new Flow("queued-job", {
    state: z.object({ customer: z.string(), nap: z.number().default(0), out: z.string().default("") }),
  })
    .node("work", async (state, ctx) => {
      if (state.nap > 0) await ctx.sleep(state.nap);
      return { out: await ctx.call<string>("work", { customer: state.customer }) };
    })
    .end("work");
  return { registry, flow, order, entered, gate, most: () => most, mostByKey };
}

async function allDone(runner: ReturnType<typeof runnerOn>, flow: Flow<never>, ids: readonly string[]): Promise<void> {
  for (const id of ids) await runner.handle(flow, id).result({ timeoutMs: 30_000 });
}

describe("queues", () => {
  it("a worker takes a queue's runs highest priority first, FIFO within a priority", async () => {
    const { registry, flow, order } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const jobs = defineQueue("jobs", { concurrency: 1 });
    const starts: [string, number][] = [
      ["a", 0],
      ["b", 5],
      ["c", 0],
      ["d", 5],
      ["e", -1],
      ["f", 9],
    ];
    for (const [id, priority] of starts)
      await runner.start(flow, { customer: id }, { runId: id, queue: jobs, priority });
    const worker = startWorker({ serve: [runner.served(flow)], queues: [jobs], pollMs: 20, stopOnSignals: false });
    try {
      await allDone(runner, flow as never, ["a", "b", "c", "d", "e", "f"]);
    } finally {
      await worker.stop();
    }
    expect(order).toEqual(["f", "b", "d", "a", "c", "e"]);
  });

  it("three workers keep a queue's concurrency and per-customer limits across 40 runs of 5 customers", async () => {
    const { registry, flow, most, mostByKey } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const jobs = defineQueue("api", { concurrency: 3, perKey: 1 });
    const ids = Array.from({ length: 40 }, (_, n) => `run-${n}`);
    for (const [n, id] of ids.entries()) {
      const customer = `customer-${n % 5}`;
      await runner.start(flow, { customer }, { runId: id, queue: jobs, concurrencyKey: customer });
    }
    const workers: RunWorker[] = [1, 2, 3].map(() =>
      startWorker({ serve: [runner.served(flow)], queues: [jobs], pollMs: 10, concurrency: 4, stopOnSignals: false }),
    );
    try {
      await allDone(runner, flow as never, ids);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
    expect(most()).toBe(3);
    expect(Math.max(...mostByKey.values())).toBe(1);
  }, 60_000);

  it("a queue starts at most its rate limit of runs in any window", async () => {
    const { registry, flow, entered, gate } = job();
    gate.ms = 1;
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const windowMs = 400;
    const jobs = defineQueue("rated", { rate: { limit: 3, windowMs } });
    const ids = Array.from({ length: 9 }, (_, n) => `rated-${n}`);
    for (const id of ids) await runner.start(flow, { customer: id }, { runId: id, queue: jobs });
    const worker = startWorker({ serve: [runner.served(flow)], queues: [jobs], pollMs: 10, stopOnSignals: false });
    try {
      await allDone(runner, flow as never, ids);
    } finally {
      await worker.stop();
    }
    // Each start is counted when its claim lands, a moment before its tool is entered: a window of entries may hold
    // a fourth only when the claims were further apart than the entries.
    const sorted = [...entered].sort((a, b) => a - b);
    for (let i = 3; i < sorted.length; i++)
      expect((sorted[i] as number) - (sorted[i - 3] as number)).toBeGreaterThan(windowMs - 50);
  }, 30_000);

  it("a run asleep gives its slot back: with concurrency 1, another run goes while it sleeps", async () => {
    const { registry, flow, order } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const jobs = defineQueue("one", { concurrency: 1 });
    await runner.start(flow, { customer: "napper", nap: 600 }, { runId: "napper", queue: jobs });
    await runner.start(flow, { customer: "other" }, { runId: "other", queue: jobs });
    const worker = startWorker({ serve: [runner.served(flow)], queues: [jobs], pollMs: 20, stopOnSignals: false });
    try {
      await allDone(runner, flow as never, ["napper", "other"]);
    } finally {
      await worker.stop();
    }
    expect(order).toEqual(["other", "napper"]);
  });

  it("20 drains of 2 s finish 200 queued runs of 20 customers, the limits kept", async () => {
    const { registry, flow, most, mostByKey, gate } = job();
    gate.ms = 20;
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const jobs = defineQueue("drained", { concurrency: 5, perKey: 1 });
    const ids = Array.from({ length: 200 }, (_, n) => `drained-${n}`);
    for (const [n, id] of ids.entries()) {
      const customer = `customer-${n % 20}`;
      await runner.start(flow, { customer }, { runId: id, queue: jobs, concurrencyKey: customer });
    }
    let drains = 0;
    for (; drains < 20; drains++) {
      const result = await drain({ serve: [runner.served(flow)], queues: [jobs], deadlineMs: 2_000, concurrency: 8 });
      if (!result.left) break;
    }
    expect(drains).toBeLessThan(20);
    await allDone(runner, flow as never, ids);
    expect(most()).toBeLessThanOrEqual(5);
    expect(Math.max(...mostByKey.values())).toBe(1);
  }, 60_000);

  it("a start says what is wrong with its queue options, and writes nothing", async () => {
    const { registry, flow } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await expect(runner.start(flow, { customer: "x" }, { runId: "p", priority: 3 })).rejects.toThrow(
      /give the run a queue too/,
    );
    await expect(
      runner.start(flow, { customer: "x" }, { runId: "q", queue: { name: "" } as never }),
    ).rejects.toBeInstanceOf(InvalidInput);
    expect(() => defineQueue("q", { concurrency: 0 })).toThrow(InvalidInput);
    const noQueues = new MemoryCheckpointStore();
    Object.defineProperty(noQueues, "listQueued", { value: undefined });
    await expect(
      runnerOn(noQueues, registry).start(flow, { customer: "x" }, { runId: "r", queue: defineQueue("q") }),
    ).rejects.toThrow(/no queues capability/);
    for (const [at, id] of [
      [store, "p"],
      [store, "q"],
      [noQueues, "r"],
    ] as const)
      await expect(at.latest(id)).rejects.toThrow(/No checkpoint is stored/);
  });
});
