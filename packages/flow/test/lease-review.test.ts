import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointStore,
  type DurableEvent,
  type EventSink,
  Executor,
  LeaseHeld,
  MemoryCheckpointStore,
  StoreUnavailable,
  ToolRegistry,
  startWorker,
} from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it, type TestContext, vi } from "vitest";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools, ticketsFlow } from "./helpers.js";
import { LateTimers } from "@durable/test-utils/late-timers";
import { DyingStore, storeWith } from "@durable/test-utils/stores";

// Attacks of the adversarial review of leases and the standing worker that the code withstands.

const flow = ticketsFlow();
const order = { show: "Hamlet", seats: 2 };

function runner(
  store: CheckpointStore,
  tools: Tools | ToolRegistry,
  lease?: { owner?: string; ms?: number },
  events?: EventSink,
): FlowRunner {
  return new FlowRunner(new Executor(tools instanceof Tools ? tools.registry() : tools), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(lease === undefined ? {} : { lease }),
    ...(events === undefined ? {} : { events }),
  });
}

/**
 * Skips the rest of a test whose worker must renew before its lease runs out, when this process stalled longer
 * than the lease leaves it (`marginMs`): a worker that stalls so long is a dead worker, and another may claim.
 */
async function unjudgedIfStalled(ctx: TestContext, timers: LateTimers, from: number, marginMs: number): Promise<void> {
  await timers.settled();
  const stall = timers.longestWithin(from, performance.now());
  timers.stop();
  if (stall > marginMs)
    ctx.skip(`this process stalled ${Math.round(stall)} ms, more than the ${marginMs} ms its lease leaves`);
}

/** Worker "a" drives run `runId` into `tool`, where it hangs; with `die`, its store hangs from then on (a dead worker). */
async function inside(
  data: MemoryData,
  tool: string,
  tools: Tools,
  options: { ms: number; die: boolean; runId?: string; owner?: string },
): Promise<void> {
  const dying = new DyingStore(new MemoryCheckpointStore({ data }), undefined);
  tools.hangInside = tool;
  const before = tools.count(tool);
  void runner(dying, tools, { owner: options.owner ?? "a", ms: options.ms })
    .run(flow, order, { runId: options.runId ?? "r" })
    .catch(() => undefined);
  await until(() => tools.count(tool) === before + 1);
  tools.hangInside = undefined;
  dying.dead = options.die;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a live lease", () => {
  it("is refused to another owner's recover with LeaseHeld, and recoverAll skips it", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    tools.hangInside = "charge_card";
    void runner(new MemoryCheckpointStore({ data }), tools, { owner: "a", ms: 5_000 })
      .run(flow, order, { runId: "r" })
      .catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const b = runner(new MemoryCheckpointStore({ data }), tools, { owner: "b" });
    await expect(b.recover(flow, "r")).rejects.toThrow(LeaseHeld);
    expect(await b.recoverAll(flow)).toEqual(new Map());
  });

  it("is judged by the store's clock: Date.now shifted an hour either way changes nothing", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "charge_card", tools, { ms: 300, die: false });
    const b = runner(new MemoryCheckpointStore({ data }), tools, { owner: "b", ms: 300 });
    const real = Date.now.bind(Date);
    for (const shift of [3_600_000, -3_600_000]) {
      vi.spyOn(Date, "now").mockImplementation(() => real() + shift);
      await expect(b.recover(flow, "r")).rejects.toThrow(LeaseHeld);
      expect(await b.recoverAll(flow)).toEqual(new Map());
      vi.restoreAllMocks();
    }
    // And a dead worker's lease runs out by the store's clock, even with this process's clock set back.
    await inside(data, "charge_card", tools, { ms: 150, die: true, runId: "s" });
    vi.spyOn(Date, "now").mockImplementation(() => real() - 3_600_000);
    await sleep(250);
    expect([...(await b.recoverAll(flow, { rerunInDoubt: true })).keys()]).toEqual(["s"]);
  });

  it("stays live while renewals answer slowly (half the lease late): another worker polling all along claims nothing", async (ctx) => {
    const timers = new LateTimers();
    const from = performance.now();
    const data: MemoryData = new Map();
    const tools = new Tools();
    const base = new MemoryCheckpointStore({ data });
    // Every renewal is applied at once, but its answer reaches the worker 150 ms later (lease 300 ms).
    const slow = storeWith(base, {
      renew: async (runId, segment, terms) => {
        const lease = await base.renew(runId, segment, terms);
        await sleep(150);
        return lease;
      },
    });
    tools.hangInside = "charge_card";
    void runner(slow, tools, { owner: "a", ms: 300 })
      .run(flow, order, { runId: "r" })
      .catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const w = startWorker({
      serve: [runner(new MemoryCheckpointStore({ data }), tools, { owner: "b", ms: 300 }).served(flow)],
      pollMs: 10,
      maxPollMs: 10,
      stopOnSignals: false,
    });
    await sleep(1_500);
    await w.stop();
    await unjudgedIfStalled(ctx, timers, from, 150);
    expect(w.status()).toMatchObject({ finished: 0, lost: 0, stuck: 0, waitingForDecision: 0 });
    expect(tools.count("charge_card")).toBe(1);
    expect(await base.leaseOf("r")).toMatchObject({ owner: "a" });
  });

  it("outlives a tool three times its length with a second worker polling: the tool runs once", async (ctx) => {
    const timers = new LateTimers();
    const from = performance.now();
    const data: MemoryData = new Map();
    let charged = 0;
    const registry = new ToolRegistry()
      .tool("hold_seats", () => "held", { idempotent: true })
      .tool("charge_card", async () => {
        charged += 1;
        await sleep(500);
        return "charged";
      })
      .tool("email_tickets", () => "mailed");
    const a = runner(new MemoryCheckpointStore({ data }), registry, { owner: "a", ms: 150 });
    const w = startWorker({
      serve: [runner(new MemoryCheckpointStore({ data }), registry, { owner: "b", ms: 150 }).served(flow)],
      pollMs: 10,
      maxPollMs: 10,
      concurrency: 1,
      stopOnSignals: false,
    });
    expect(await a.run(flow, order, { runId: "r" })).toMatchObject({ status: "done" });
    await w.stop();
    await unjudgedIfStalled(ctx, timers, from, 75);
    expect(charged).toBe(1);
    expect(w.status()).toMatchObject({ finished: 0, lost: 0 });
  });
});

describe("the standing worker", () => {
  it("takes over a dead worker's run within about lease + poll interval", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    const store = new MemoryCheckpointStore({ data });
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 200 }).served(flow)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    const timers = new LateTimers();
    await inside(data, "hold_seats", tools, { ms: 200, die: true });
    const died = performance.now();
    await until(async () => (await store.latest("r")).status === "done");
    const done = performance.now();
    const took = done - died;
    await w.stop();
    await timers.settled();
    const late = timers.within(died, done);
    timers.stop();
    // Lease 200 ms, poll 50 ms ± a quarter, a little slack, and however late this process ran its timers meanwhile.
    expect(took, `timers ran ${Math.round(late)} ms late`).toBeLessThan(200 + 63 + 150 + late);
  });

  it("keeps going when its event sink throws on every event: the run is finished and its lease released", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "hold_seats", tools, { ms: 100, die: true });
    const store = new MemoryCheckpointStore({ data });
    const broken: EventSink = () => {
      throw new Error("the event bus is down");
    };
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 100 }, broken).served(flow)],
      pollMs: 10,
      stopOnSignals: false,
    });
    await until(async () => (await store.latest("r")).status === "done");
    await w.stop();
    expect(warn).toHaveBeenCalled();
    expect(w.status()).toMatchObject({ finished: 1, stuck: 0 });
    expect(await store.leaseOf("r")).toBeUndefined();
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

  it("with concurrency 1, leaves a run that needs a decision after one claim and finishes the others", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "charge_card", tools, { ms: 100, die: true, runId: "stuck" });
    for (const runId of ["r1", "r2", "r3"]) await inside(data, "hold_seats", tools, { ms: 100, die: true, runId });
    await sleep(150);
    const store = new MemoryCheckpointStore({ data });
    const events: DurableEvent[] = [];
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 100 }, (e) => void events.push(e)).served(flow)],
      concurrency: 1,
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (runId) => stuck.push(runId),
    });
    await until(() => w.status().finished === 3);
    await sleep(400);
    await w.stop();
    expect(stuck).toEqual(["stuck"]);
    expect(events.filter((e) => e.type === "run.needs-decision")).toHaveLength(1);
    expect((await store.latest("stuck")).step).toBe(2);
    expect(tools.count("charge_card")).toBe(4);
  });

  it("never crashes on a store that fails its listings and reads, and goes on once the store answers", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await inside(data, "hold_seats", tools, { ms: 100, die: true });
    const base = new MemoryCheckpointStore({ data });
    let down = true;
    const fail = () => {
      throw new StoreUnavailable("the store is down.");
    };
    const store = storeWith(base, {
      listUnfinished: (name, options) => (down ? fail() : base.listUnfinished(name, options)),
      latest: (runId) => (down ? Promise.reject(new StoreUnavailable("down")) : base.latest(runId)),
      save: (runId, step, row, lease) =>
        down ? Promise.reject(new StoreUnavailable("down")) : base.save(runId, step, row, lease),
    });
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 100 }).served(flow)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await sleep(200);
    down = false;
    await until(async () => (await base.latest("r")).status === "done");
    await w.stop();
  });

  it("leaves paused runs alone while it polls, and a resume in the same process drives them to the end", async () => {
    const State = z.object({ amount: z.number(), note: z.string() });
    const refunds = new Flow("refunds", { state: State })
      .node("refund", new Call("refund", { args: (s) => ({ amount: s.amount }), into: "note" }))
      .end("refund");
    let refunded = 0;
    const registry = new ToolRegistry().tool(
      "refund",
      () => {
        refunded += 1;
        return "refunded";
      },
      { approval: true },
    );
    const store = new MemoryCheckpointStore();
    const r = runner(store, registry, { ms: 150 });
    const w = startWorker({ serve: [r.served(refunds)], pollMs: 10, maxPollMs: 10, stopOnSignals: false });
    expect(await r.run(refunds, { amount: 5, note: "" }, { runId: "p" })).toMatchObject({ status: "paused" });
    await sleep(300);
    expect((await store.latest("p")).step).toBe(1);
    const call = callIdOf(1, "refund", "refund", { amount: 5 });
    expect(await r.resume(refunds, "p", { [call]: true })).toMatchObject({ status: "done" });
    await w.stop();
    expect(refunded).toBe(1);
    expect(w.status()).toMatchObject({ finished: 0, lost: 0, stuck: 0 });
  });

  it("two workers of concurrency 1 and 40 runs of dead workers: every run done, each charge made once", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    const runs = Array.from({ length: 40 }, (_, i) => `r${i}`);
    for (const runId of runs) await inside(data, "hold_seats", tools, { ms: 100, die: true, runId });
    const workers = ["b", "c"].map((owner) =>
      startWorker({
        serve: [runner(new MemoryCheckpointStore({ data }), tools, { owner, ms: 100 }).served(flow)],
        concurrency: 1,
        pollMs: 5,
        maxPollMs: 10,
        stopOnSignals: false,
      }),
    );
    const store = new MemoryCheckpointStore({ data });
    await until(async () => {
      for (const runId of runs) if ((await store.latest(runId)).status !== "done") return false;
      return true;
    });
    await Promise.all(workers.map((w) => w.stop()));
    expect(tools.count("charge_card")).toBe(40);
    expect(tools.count("email_tickets")).toBe(40);
    expect(workers.map((w) => w.status().finished).reduce((a, b) => a + b)).toBe(40);
  });
});

describe("a signal that aborts a recovery", () => {
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
