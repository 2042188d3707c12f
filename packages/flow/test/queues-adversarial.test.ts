import {
  approveRun,
  cancelRun,
  type CheckpointStore,
  defineQueue,
  Executor,
  InvalidInput,
  MemoryCheckpointStore,
  QueueFull,
  runHandle,
  type RunWorker,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
  wakeRun,
} from "@durable/core";
import { storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// Queues under attack: what users, operators and broken stores do to queued runs while their queue is full.

const workers: RunWorker[] = [];
/** Every gate a test made: opened after it, so its workers stop at once whatever the test found. */
const gates: (() => void)[] = [];
afterEach(async () => {
  for (const open of gates.splice(0)) open();
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

/** A flow whose `block` tool holds its run inside until the gate opens, `pay` asks for approval, `nap` sleeps long. */
function ops() {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  gates.push(() => open());
  const ran: string[] = [];
  const registry = new ToolRegistry()
    .tool("block", async (_args: object, ctx) => {
      ran.push(ctx.runId);
      await gate;
      return "unblocked";
    })
    .tool(
      "pay",
      (_args: object, ctx) => {
        ran.push(ctx.runId);
        return "paid";
      },
      { approval: true },
    );
  const flow = new Flow("queue-ops", { state: z.object({ kind: z.string(), note: z.string().default("") }) })
    .node("go", async (state, ctx) => {
      if (state.kind === "block") return { note: await ctx.call<string>("block", {}) };
      if (state.kind === "nap") await ctx.sleep(600_000);
      return { note: await ctx.call<string>("pay", {}) };
    })
    .end("go");
  return { registry, flow, ran, open: () => open() };
}

/** `store` counting the takes its queues refused, by save and commit. */
function refusing(store: MemoryCheckpointStore): { store: CheckpointStore; refused: () => number } {
  let refused = 0;
  const counted = <T>(write: Promise<T>): Promise<T> =>
    write.catch((error: unknown) => {
      if (error instanceof QueueFull) refused += 1;
      throw error;
    });
  const wrapped = storeWith(store, {
    save: (runId, step, row, lease) => counted(store.save(runId, step, row, lease)),
    commit: (runId, writes) => counted(store.commit(runId, writes)),
    listQueued: (queue) => store.listQueued(queue),
  });
  return { store: wrapped, refused: () => refused };
}

/** A worker serving `flow` and `queue`, stopped after the test. */
function serve(runner: FlowRunner, flow: Flow<never>, queue: ReturnType<typeof defineQueue>, pollMs = 20): RunWorker {
  const served = [runner.served(flow)];
  const worker = startWorker({ serve: served, queues: [queue], pollMs, maxPollMs: pollMs, stopOnSignals: false });
  workers.push(worker);
  return worker;
}

describe("a full queue", () => {
  it("costs a worker one refused claim per look, not one per run waiting", async () => {
    const { registry, flow } = ops();
    const counting = refusing(new MemoryCheckpointStore());
    const runner = runnerOn(counting.store, registry);
    const queue = defineQueue("full", { concurrency: 1 });
    await runner.start(flow, { kind: "block" }, { runId: "holder", queue, priority: 1 });
    for (let n = 0; n < 30; n++) await runner.start(flow, { kind: "pay" }, { runId: `waiting-${n}`, queue });
    serve(runner, flow as never, queue, 50);
    await sleep(600);
    // About a dozen looks in 600 ms: each tries the head of the queue once, then leaves the queue for a poll.
    expect(counting.refused()).toBeGreaterThan(0);
    expect(counting.refused()).toBeLessThanOrEqual(20);
  });

  it("costs a worker one refused claim per look for a full key, and the runs of other keys behind it go on", async () => {
    const { registry, flow, ran } = ops();
    const counting = refusing(new MemoryCheckpointStore());
    const runner = runnerOn(counting.store, registry);
    const queue = defineQueue("keyed", { concurrency: 10, perKey: 1 });
    const start = (runId: string, kind: string, concurrencyKey: string, priority = 0) =>
      runner.start(flow, { kind }, { runId, queue, concurrencyKey, priority });
    await start("alice-holder", "block", "alice", 1);
    for (let n = 0; n < 30; n++) await start(`alice-${n}`, "nap", "alice");
    await start("bob", "nap", "bob");
    serve(runner, flow as never, queue, 50);
    await until(() => ran.includes("alice-holder"));
    await until(
      async () =>
        (await runHandle({ checkpoints: counting.store, checkpointKey: KEY }, "bob").status()).status === "asleep",
    );
    await sleep(600);
    // Each look tries alice's first waiting run once, then skips her other 29: about a dozen refusals, not 30 a look.
    expect(counting.refused()).toBeGreaterThan(0);
    expect(counting.refused()).toBeLessThanOrEqual(20);
  });
});

describe("an operator", () => {
  it("cancels a queued run waiting its turn on a full queue, and the cancel spends none of the queue's rate", async () => {
    const { registry, flow, open } = ops();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const queue = defineQueue("cancelled", { concurrency: 1, rate: { limit: 2, windowMs: 600_000 } });
    await runner.start(flow, { kind: "block" }, { runId: "holder", queue, priority: 1 });
    for (const runId of ["doomed", "next"]) await runner.start(flow, { kind: "pay" }, { runId, queue });
    serve(runner, flow as never, queue);
    await until(async () => (await store.leaseOf("holder")) !== undefined);
    const operator = { checkpoints: store, checkpointKey: KEY, by: "ops@example.com" };
    const step = await cancelRun("doomed", "the customer left", operator);
    expect(await store.latest("doomed")).toMatchObject({ status: "failed", step });
    await expect(runner.handle(flow, "doomed").status()).resolves.toMatchObject({ status: "failed" });
    await expect(runHandle(operator, "next").cancel("no longer needed")).resolves.toBeTypeOf("number");
    // The rate's second start is still there for a run started after the cancels.
    await runner.start(flow, { kind: "pay" }, { runId: "after", queue });
    open();
    await until(async () => (await store.latest("after")).status === "paused");
  });

  it("approves a paused queued run and wakes a sleeping one while the queue is full; the worker takes them once it has room", async () => {
    const { registry, flow, ran, open } = ops();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const queue = defineQueue("operated", { concurrency: 1 });
    await runner.start(flow, { kind: "pay" }, { runId: "paused", queue, priority: 2 });
    await runner.start(flow, { kind: "nap" }, { runId: "napping", queue, priority: 1 });
    serve(runner, flow as never, queue);
    await until(async () => (await store.latest("paused")).status === "paused");
    await until(async () => (await runner.handle(flow, "napping").status()).status === "asleep");
    await runner.start(flow, { kind: "block" }, { runId: "holder", queue });
    await until(() => ran.includes("holder"));
    const operator = { checkpoints: store, checkpointKey: KEY, by: "ops@example.com" };
    const paused = await runner.recover(flow, "paused");
    const callId = paused.status === "paused" ? (paused.approvals[0]?.callId ?? "") : "";
    await approveRun("paused", { [callId]: { approved: true } }, operator);
    await wakeRun("napping", operator);
    await sleep(100);
    expect(ran).toEqual(["holder"]);
    open();
    await expect(runner.handle(flow, "paused").result({ timeoutMs: 10_000 })).resolves.toMatchObject({ note: "paid" });
    await until(async () => (await store.latest("napping")).status === "paused");
    expect(ran).toEqual(["holder", "paused"]);
  });
});

describe("a drive whose lease ran out", () => {
  it("stops when the full queue refuses its renewal: it starts no other call beside the run that took its slot", async () => {
    const inside = new Set<string>();
    const entries: { call: string; beside: string[] }[] = [];
    const registry = new ToolRegistry().tool(
      "work",
      async (args: { n: number; ms: number }, ctx) => {
        entries.push({ call: `${ctx.runId}:${args.n}`, beside: [...inside] });
        inside.add(ctx.runId);
        await sleep(args.ms);
        inside.delete(ctx.runId);
        return args.n;
      },
      { idempotent: true },
    );
    // Two calls in one node: the second one's record is no save, so no take checks it.
    const flow = new Flow("stalled", { state: z.object({ ms: z.number(), x: z.number().default(0) }) })
      .node("both", async (state, ctx) => {
        await ctx.call<number>("work", { n: 1, ms: state.ms });
        return { x: await ctx.call<number>("work", { n: 2, ms: 10 }) };
      })
      .end("both");
    const store = new MemoryCheckpointStore();
    const renewals = { down: true };
    // The stalled worker's store cannot renew run "a" for a while: its lease runs out inside the first call.
    const stalled = storeWith(store, {
      renew: (runId, segment, terms) =>
        renewals.down && runId === "a"
          ? Promise.reject(new StoreUnavailable("the network is partitioned"))
          : store.renew(runId, segment, terms),
      listQueued: (queue) => store.listQueued(queue),
    });
    const lease = { ms: 300 };
    const queue = defineQueue("stalled", { concurrency: 1 });
    const runnerA = new FlowRunner(new Executor(registry), { checkpoints: stalled, checkpointKey: KEY, lease });
    const runnerB = new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, lease });
    await runnerA.start(flow, { ms: 900 }, { runId: "a", queue });
    serve(runnerA, flow as never, queue);
    await until(() => inside.has("a"));
    // Higher priority: when "a"'s lease ran out, "b" takes the slot, not a claim of "a" again.
    await runnerB.start(flow, { ms: 1_200 }, { runId: "b", queue, priority: 1 });
    serve(runnerB, flow as never, queue);
    await until(() => inside.has("b"));
    renewals.down = false;
    await until(async () => (await store.latest("b")).status === "done", 10_000);
    // "a" was inside its first call when "b" took its slot (a stall the lease cannot see), but no call of it began
    // beside "b" after that.
    expect(entries.filter((entry) => entry.beside.length > 0).map((entry) => entry.call)).toEqual(["b:1"]);
  }, 20_000);
});

describe("a queue's name and a concurrency key", () => {
  it("are storable text, as every other name a store keeps in a column: InvalidInput, and nothing written", async () => {
    const { registry, flow } = ops();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    for (const name of ["nul\u0000queue", "half\ud800queue"]) expect(() => defineQueue(name)).toThrow(InvalidInput);
    const queue = defineQueue("tenants", { perKey: 1 });
    for (const [n, concurrencyKey] of ["tenant\ud800", "tenant\u0007"].entries())
      await expect(
        runner.start(flow, { kind: "pay" }, { runId: `bad-${n}`, queue, concurrencyKey }),
      ).rejects.toBeInstanceOf(InvalidInput);
    for (const runId of ["bad-0", "bad-1"]) await expect(store.latest(runId)).rejects.toThrow(/No checkpoint/);
  });
});

describe("a queue out of rate", () => {
  it("still takes a run woken from its sleep: only starts wait for the window", async () => {
    const { registry, flow, ran } = ops();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    const queue = defineQueue("rated", { rate: { limit: 1, windowMs: 60_000 } });
    const napper = new Flow("rated-napper", { state: z.object({ note: z.string().default("") }) })
      .node("nap", async (_state, ctx) => {
        await ctx.sleep(300);
        return { note: "woke" };
      })
      .end("nap");
    await runner.start(napper, {}, { runId: "napper", queue });
    const worker = startWorker({
      serve: [runner.served(napper), runner.served(flow)],
      queues: [queue],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    workers.push(worker);
    await until(async () => (await runner.handle(napper, "napper").status()).status === "asleep");
    // A start of higher priority the window refuses: it waits a minute, the woken run need not.
    await runner.start(flow, { kind: "pay" }, { runId: "fresh", queue, priority: 1 });
    await expect(runner.handle(napper, "napper").result({ timeoutMs: 5_000 })).resolves.toMatchObject({ note: "woke" });
    expect(ran).toEqual([]);
  });
});
