import type { MemoryData } from "@durable/core/internal";
import {
  CheckpointConflict,
  LeaseHeld,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { LateTimers } from "@durable/test-utils/late-timers";
import { storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Tools, forever } from "./helpers.js";
import { flow, inside, insideTool, order, runner, twoSteps, unjudgedIfStalled, worker } from "./workers.js";

// A live lease: never claimed by another worker, nor by another drive of the same process, and kept alive while
// its worker lives (a clock shifted, slow renewals, a renewal outage, a tool longer than the lease).

afterEach(() => {
  vi.restoreAllMocks();
});

describe("leases: a live worker's run is never claimed by another", () => {
  it("refuses another worker's recover with LeaseHeld naming the owner, recoverAll skips it, and the tool runs once", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await insideTool(data, "charge_card", tools, 5_000);
    const b = worker(new MemoryCheckpointStore({ data }), "b", tools);
    const refused = await b.recover(flow, "r").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LeaseHeld);
    expect(refused).toMatchObject({ owner: expect.stringMatching(/^a#/) });
    expect((refused as LeaseHeld).expiresAt).toBeGreaterThan(Date.now());
    expect(await b.recoverAll(flow)).toEqual(new Map());
    expect(tools.count("charge_card")).toBe(1);
  });

  it("keeps the lease alive past its length while a tool runs long: no other worker claims it", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await insideTool(data, "charge_card", tools, 300);
    await new Promise((resolve) => setTimeout(resolve, 900));
    const b = worker(new MemoryCheckpointStore({ data }), "b", tools, 300);
    await expect(b.recover(flow, "r")).rejects.toThrow(LeaseHeld);
    expect(await b.recoverAll(flow)).toEqual(new Map());
  });

  it("takeOver claims a live run; the old worker is fenced", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    const a = await insideTool(data, "hold_seats", tools, 5_000);
    const b = worker(new MemoryCheckpointStore({ data }), "b", tools);
    expect(await b.recover(flow, "r", { takeOver: true })).toMatchObject({ status: "done" });
    await expect(a.renew("r", 0, { owner: "a", ms: 5_000 })).rejects.toThrow(CheckpointConflict);
    expect(tools.count("charge_card")).toBe(1);
  });

  it("a worker cut off from its store loses the run once its lease runs out; the call in doubt then waits for a decision, with the lease released", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    const a = await insideTool(data, "charge_card", tools, 300);
    a.cut = true;
    const store = new MemoryCheckpointStore({ data });
    const b = worker(store, "b", tools, 300);
    await expect(b.recover(flow, "r")).rejects.toThrow(LeaseHeld);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await expect(b.recover(flow, "r")).rejects.toThrow(RecoveryNeedsDecision);
    expect(await store.leaseOf("r")).toBeUndefined();
    expect(await b.recover(flow, "r", { rerunInDoubt: true })).toMatchObject({ status: "done" });
    expect(tools.count("charge_card")).toBe(2);
  });
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
    expect(await base.leaseOf("r")).toMatchObject({ owner: expect.stringMatching(/^a#/) });
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

describe("the save/keeper lease rule: a live worker inside a long tool keeps its run", () => {
  // Lease 600 ms (a third: 200 ms). Worker "a" starts the run, its prep takes `prepMs`, its save of step 1
  // begins ~280 ms after the start save began, then it sits in pay (alive) while worker "b" polls.
  async function attempt(options: { startSaveMs: number; prepMs: number }) {
    const data: MemoryData = new Map();
    const base = new MemoryCheckpointStore({ data });
    const t0 = performance.now();
    const a = storeWith(base, {
      save: async (runId, step, row, lease) => {
        // The store applies the start save late (a slow reply); every later save at once.
        if (step === 0) await sleep(options.startSaveMs);
        return base.save(runId, step, row, lease);
      },
      renew: async (runId, segment, terms) => {
        // The store is unreachable from 180 to 620 ms, then renewals take 100 ms.
        const at = performance.now() - t0;
        if (at > 180 && at < 620) throw new StoreUnavailable("the store is unreachable.");
        await sleep(100);
        return base.renew(runId, segment, terms);
      },
    });
    let paid = 0;
    const registry = new ToolRegistry()
      .tool("prep", async () => {
        await sleep(options.prepMs);
        return "prepared";
      })
      .tool("pay", async () => {
        paid += 1;
        return forever(); // worker "a" is alive in here all along
      });
    void runner(a, registry, { owner: "a", ms: 600 })
      .run(twoSteps, {}, { runId: "r" })
      .catch(() => undefined);
    await until(() => paid === 1);
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner(new MemoryCheckpointStore({ data }), registry, { owner: "b", ms: 600 }).served(twoSteps)],
      pollMs: 5,
      maxPollMs: 5,
      stopOnSignals: false,
      onStuck: (runId, error) => stuck.push(`${runId}: ${(error as Error).name}`),
    });
    await sleep(1_200);
    await w.stop();
    return { stuck, latest: await base.latest("r"), lease: await base.leaseOf("r") };
  }

  // The timeline has ~50 ms to spare: a process whose timers stalled longer cannot judge it (a skip says so).
  const SPARE_MS = 50;

  it("survives a renewal outage (180 to 620 ms of a 600 ms lease) after a slow start save and a save just over a third in", async (ctx) => {
    // Start save sent at 0, applied at 150 (expires 750). Renewal at ~200 fails. The save of step 1 at ~290 is
    // 140 ms after the store set the lease: the store keeps it. A keeper that took it for a renewal, counting from
    // when the start save was sent, would next renew at ~490 (fails), then ~690, applied ~790: lapsed at 750.
    const timers = new LateTimers();
    const from = performance.now();
    const { stuck, latest, lease } = await attempt({ startSaveMs: 150, prepMs: 125 });
    await unjudgedIfStalled(ctx, timers, from, SPARE_MS);
    expect(stuck).toEqual([]);
    expect(latest.segment).toBe(0);
    expect(lease).toMatchObject({ owner: expect.stringMatching(/^a#/) });
  });

  it("control: the same outage with a prompt start save (the save of step 1 renews) leaves the run with its worker", async (ctx) => {
    const timers = new LateTimers();
    const from = performance.now();
    const { stuck, latest, lease } = await attempt({ startSaveMs: 0, prepMs: 280 });
    await unjudgedIfStalled(ctx, timers, from, SPARE_MS);
    expect(stuck).toEqual([]);
    expect(latest.segment).toBe(0);
    expect(lease).toMatchObject({ owner: expect.stringMatching(/^a#/) });
  });
});

describe("one process, a lease owner per drive: a run that runner.run() drives", () => {
  it("is not claimed by recover() of the same process: its drive's live lease refuses it (LeaseHeld)", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    tools.hangInside = "charge_card";
    const a = runner(store, tools);
    void a.run(flow, order, { runId: "r" }).catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const before = (await store.latest("r")).step;
    // An operator's endpoint, or a retry, recovers the run by id: run() is alive and renewing, inside charge_card.
    const refused = await a.recover(flow, "r").catch((error: unknown) => error);
    // No claim: one would fence run() mid-tool and leave its call in doubt.
    expect((await store.latest("r")).step).toBe(before);
    expect(refused).toBeInstanceOf(LeaseHeld);
  });

  it("whose lease lapsed (renewals failed, run() still alive) is claimed by a worker of the same process as by another: its call waits for a decision, never run twice", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    const base = new MemoryCheckpointStore({ data });
    // The store does not answer renewals for a while: run()'s lease lapses though run() is alive inside charge_card.
    let renewFails = true;
    const store = storeWith(base, {
      renew: (runId, segment, terms) =>
        renewFails ? Promise.reject(new StoreUnavailable("renew timed out.")) : base.renew(runId, segment, terms),
    });
    tools.hangInside = "charge_card";
    const a = runner(store, tools, { ms: 150 });
    void a.run(flow, order, { runId: "r" }).catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const stuck: unknown[] = [];
    const w = startWorker({
      serve: [a.served(flow)],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (_, error) => stuck.push(error),
    });
    await sleep(400);
    renewFails = false;
    await w.stop();
    // A lapsed lease says nothing of which process holds it: the worker claims the run (run() is fenced) and
    // finds charge_card in doubt, as a worker of another process would; it waits for a decision.
    expect(stuck).toEqual([expect.any(RecoveryNeedsDecision)]);
    expect(await base.latest("r")).toMatchObject({ segment: 1 });
    expect(w.status()).toMatchObject({ waitingForDecision: 1 });
    expect(tools.count("charge_card")).toBe(1);
  });
});
