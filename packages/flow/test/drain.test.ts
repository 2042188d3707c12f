import { drain, InvalidInput, MemoryCheckpointStore, runHandle, ToolRegistry } from "@durable/core";
import { sleep } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// A drain is a worker bounded in time, for a function that stops between requests: it drives the claimable runs
// until the deadline, gives up the rest (released for the next drain), and says what it did.

/** A one-node flow whose idempotent `work` tool takes `gate.ms` (listening to its signal unless `gate.deaf`). */
function job() {
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  const gate = { ms: 50, deaf: false };
  const registry = new ToolRegistry().tool(
    "work",
    async (args: { n: number }, ctx) => {
      starts.set(ctx.runId, (starts.get(ctx.runId) ?? 0) + 1);
      if (gate.deaf) await new Promise(() => {});
      await sleep(gate.ms, undefined, { signal: ctx.signal });
      ends.set(ctx.runId, (ends.get(ctx.runId) ?? 0) + 1);
      return args.n * 2;
    },
    { idempotent: true },
  );
  const flow = new Flow("job", { state: z.object({ n: z.number(), doubled: z.number().default(0) }) })
    .node("work", async (state, ctx) => ({ doubled: await ctx.call<number>("work", { n: state.n }) }))
    .end("work");
  return { starts, ends, gate, registry, flow };
}

const sum = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

describe("drain", () => {
  it("20 drains of 2 s each, one after another as a cron route runs them, finish 200 started runs, each tool once", async () => {
    const { starts, ends, registry, flow } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    for (let n = 0; n < 200; n++) await runner.start(flow, { n }, { runId: `job-${n}` });
    const results = [];
    for (let each = 0; each < 20; each++) {
      const result = await drain({ serve: [runner.served(flow)], deadlineMs: 2_000, concurrency: 4 });
      expect(result.tookMs).toBeLessThan(2_600);
      results.push(result);
      if (!result.left) break;
    }
    // 200 runs of 50 ms at 4 at once take 2.5 s: the first drain gives up what it drives at its deadline.
    expect(results.length).toBeGreaterThan(1);
    expect(results.at(-1)?.left).toBe(false);
    const gaveUp = results.reduce((total, each) => total + each.gaveUp, 0);
    expect(gaveUp).toBeGreaterThan(0);
    expect(results.reduce((total, each) => total + each.finished, 0)).toBe(200);
    expect(ends.size).toBe(200);
    expect([...ends.values()].every((count) => count === 1)).toBe(true);
    // A run given up inside its tool runs it again (the call was in doubt, the tool idempotent); no other does.
    expect(sum(starts)).toBeLessThanOrEqual(200 + gaveUp);
    const handle = runHandle({ checkpoints: store, checkpointKey: KEY }, "job-7");
    expect(await handle.status()).toMatchObject({ status: "done" });
  }, 60_000);

  it("gives up a run still inside its tool at the deadline (the tool hears its signal); the next drain finishes it", async () => {
    const { starts, ends, gate, registry, flow } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.start(flow, { n: 21 }, { runId: "slow" });
    gate.ms = 60_000;
    const first = await drain({ serve: [runner.served(flow)], deadlineMs: 300 });
    expect(first).toMatchObject({ finished: 0, gaveUp: 1, left: true });
    expect(first.tookMs).toBeLessThan(800);
    expect(await store.leaseOf("slow")).toBeUndefined();
    gate.ms = 10;
    const second = await drain({ serve: [runner.served(flow)], deadlineMs: 2_000 });
    expect(second).toMatchObject({ finished: 1, gaveUp: 0, left: false });
    expect(await runner.handle(flow, "slow").result({ timeoutMs: 1_000 })).toEqual({ n: 21, doubled: 42 });
    expect(starts.get("slow")).toBe(2);
    expect(ends.get("slow")).toBe(1);
  });

  it("returns about a second after its deadline when a tool ignores its signal, the run released", async () => {
    const { gate, registry, flow } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.start(flow, { n: 1 }, { runId: "deaf" });
    gate.deaf = true;
    const result = await drain({ serve: [runner.served(flow)], deadlineMs: 300 });
    expect(result).toMatchObject({ finished: 0, gaveUp: 1, left: true });
    expect(result.tookMs).toBeLessThan(1_800);
    expect(await store.leaseOf("deaf")).toBeUndefined();
  });

  it("returns at once when there is nothing to do, and as soon as its work is done, not at the deadline", async () => {
    const { registry, flow } = job();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const idle = await drain({ serve: [runner.served(flow)], deadlineMs: 10_000 });
    expect(idle).toMatchObject({ finished: 0, gaveUp: 0, stuck: 0, left: false });
    expect(idle.tookMs).toBeLessThan(500);
    for (let n = 0; n < 3; n++) await runner.start(flow, { n }, { runId: `quick-${n}` });
    const quick = await drain({ serve: [runner.served(flow)], deadlineMs: 10_000 });
    expect(quick).toMatchObject({ finished: 3, gaveUp: 0, left: false });
    expect(quick.tookMs).toBeLessThan(1_000);
  });

  it("refuses bad options with a one-line InvalidInput", async () => {
    const { registry, flow } = job();
    const served = runnerOn(new MemoryCheckpointStore(), registry).served(flow);
    const bad: [unknown, RegExp][] = [
      [undefined, /^drain takes an options object/],
      [{ serve: [served] }, /^drain: deadlineMs must be a whole number/],
      [{ serve: [served], deadlineMs: 0 }, /^drain: deadlineMs must be/],
      [{ serve: [served], deadlineMs: "2s" }, /^drain: deadlineMs must be/],
      [{ serve: [], deadlineMs: 1_000 }, /^drain: serve must list/],
      [{ serve: [{}], deadlineMs: 1_000 }, /^drain: serve must list/],
      [{ serve: [served], deadlineMs: 1_000, concurrency: 0 }, /^drain: concurrency must be/],
      [
        { serve: [served], deadlineMs: 1_000, deadline: 5 },
        /^drain: unknown option `deadline`; did you mean `deadlineMs`\?/,
      ],
      [{ serve: [served], deadlineMs: 1_000, stopDeadlineMs: 5 }, /^drain: unknown option `stopDeadlineMs`/],
    ];
    for (const [options, message] of bad) {
      const error = await drain(options as never).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain("\n");
    }
  });
});
