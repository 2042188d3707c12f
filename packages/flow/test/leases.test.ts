import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointStore,
  CheckpointConflict,
  Executor,
  LeaseHeld,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { FlowRunner } from "../src/index.js";
import { KEY, Tools, forever, ticketsFlow } from "./helpers.js";

const flow = ticketsFlow();
const order = { show: "Hamlet", seats: 2 };

/** A connection to a shared memory store that can be cut: from then on every call fails as a dead network would. */
class Cuttable extends MemoryCheckpointStore {
  cut = false;

  constructor(data: MemoryData) {
    super({ data });
    for (const method of ["save", "renew", "release", "recordCall", "latest", "calls"] as const) {
      const own = this[method].bind(this) as (...args: unknown[]) => Promise<unknown>;
      (this as Record<string, unknown>)[method] = (...args: unknown[]) =>
        this.cut ? Promise.reject(new StoreUnavailable("the connection was cut.")) : own(...args);
    }
  }
}

function worker(store: CheckpointStore, owner: string, tools: Tools, ms = 5_000): FlowRunner {
  return new FlowRunner(new Executor(tools.registry()), {
    checkpoints: store,
    checkpointKey: KEY,
    lease: { owner, ms },
  });
}

/** Worker A starts a run and is inside `tool` (it hangs there); returns A's connection. */
async function insideTool(data: MemoryData, tool: string, tools: Tools, ms: number): Promise<Cuttable> {
  const store = new Cuttable(data);
  tools.hangInside = tool;
  void worker(store, "a", tools, ms)
    .run(flow, order, { runId: "r" })
    .catch(() => undefined);
  await until(() => tools.count(tool) === 1);
  tools.hangInside = undefined;
  return store;
}

describe("leases: a live worker's run is never claimed by another", () => {
  it("refuses another worker's recover with LeaseHeld naming the owner, recoverAll skips it, and the tool runs once", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await insideTool(data, "charge_card", tools, 5_000);
    const b = worker(new MemoryCheckpointStore({ data }), "b", tools);
    const refused = await b.recover(flow, "r").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LeaseHeld);
    expect(refused).toMatchObject({ owner: "a" });
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

describe("the worker", () => {
  it("takes over a dead worker's run once its lease runs out, reports a run in doubt once, and stops", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    // Run "r" dies inside an idempotent tool, run "s" inside a non-idempotent one.
    (await insideTool(data, "hold_seats", tools, 200)).cut = true;
    const s = new Cuttable(data);
    tools.hangInside = "charge_card";
    void worker(s, "a", tools, 200)
      .run(flow, order, { runId: "s" })
      .catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    tools.hangInside = undefined;
    s.cut = true;

    const store = new MemoryCheckpointStore({ data });
    const stuck: string[] = [];
    const w = startWorker({
      serve: [worker(store, "b", tools, 200).served(flow)],
      pollMs: 20,
      maxPollMs: 40,
      stopOnSignals: false,
      onStuck: (runId, error) => stuck.push(`${runId}: ${(error as Error).name}`),
    });
    await until(async () => (await store.latest("r")).status === "done" && stuck.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stuck).toEqual(["s: RecoveryNeedsDecision"]);
    expect(w.status()).toMatchObject({ running: 0, waitingForDecision: 1, finished: 1 });
    // hold_seats: r's first call and its rerun (idempotent, in doubt), and s's; charge_card: r's, and s's, never rerun.
    expect(tools.count("hold_seats")).toBe(3);
    expect(tools.count("charge_card")).toBe(2);
    await w.stop();
  });

  it("counts a run its recovery failed (a tool's error) as finished, not stuck: it ended", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    (await insideTool(data, "hold_seats", tools, 100)).cut = true;
    const failing = new ToolRegistry()
      .tool(
        "hold_seats",
        () => {
          throw new Error("sold out");
        },
        { idempotent: true },
      )
      .tool("charge_card", () => "charged")
      .tool("email_tickets", () => "mailed");
    const store = new MemoryCheckpointStore({ data });
    const runner = new FlowRunner(new Executor(failing), {
      checkpoints: store,
      checkpointKey: KEY,
      lease: { ms: 100 },
    });
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner.served(flow)],
      pollMs: 20,
      stopOnSignals: false,
      onStuck: (runId) => stuck.push(runId),
    });
    await until(() => w.status().finished === 1);
    await w.stop();
    expect((await store.latest("r")).status).toBe("failed");
    expect(stuck).toEqual([]);
    expect(w.status()).toMatchObject({ stuck: 0, waitingForDecision: 0 });
  });

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
    expect(await store.leaseOf("r")).toMatchObject({ owner: "b" });
    await w.stop();
    expect(await store.leaseOf("r")).toBeUndefined();
    tools.hangInside = undefined;
    const c = worker(new MemoryCheckpointStore({ data }), "c", tools);
    expect(await c.recover(flow, "r")).toMatchObject({ status: "done" });
  });

  it("never claims a run another drive of the same process holds: every runner of a process shares its lease owner", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    (await insideTool(data, "hold_seats", tools, 100)).cut = true;
    await new Promise((resolve) => setTimeout(resolve, 150));
    const store = new MemoryCheckpointStore({ data });
    tools.hangInside = "charge_card";
    const deciding = worker(store, "b", tools).recover(flow, "r", { rerunInDoubt: true });
    void deciding.catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const step = (await store.latest("r")).step;
    const w = startWorker({ serve: [worker(store, "b", tools).served(flow)], pollMs: 20, stopOnSignals: false });
    await expect(worker(store, "b", tools).recover(flow, "r", { takeOver: true })).rejects.toThrow(
      /drives the run already/,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await w.stop();
    expect((await store.latest("r")).step).toBe(step);
    expect(tools.count("charge_card")).toBe(1);
  });

  it("takes a run it lost to a worker that then died at the step it claimed: at once when the lease runs out, a lost race after a few polls", async () => {
    for (const lost of ["lease held", "race"] as const) {
      const data: MemoryData = new Map();
      const tools = new Tools();
      (await insideTool(data, "hold_seats", tools, 100)).cut = true;
      await new Promise((resolve) => setTimeout(resolve, 150));
      // Worker c claims r between b's listing and b's claim, then dies inside hold_seats, at the step it claimed.
      let c: Cuttable | undefined;
      const cutsIn = async () => {
        if (c !== undefined) return;
        c = new Cuttable(data);
        tools.hangInside = "hold_seats";
        void worker(c, "c", tools, 100)
          .recover(flow, "r")
          .catch(() => undefined);
        await until(() => tools.count("hold_seats") === 2);
        tools.hangInside = undefined;
        c.cut = true;
      };
      const store = new MemoryCheckpointStore({ data });
      if (lost === "lease held") {
        const list = store.listUnfinished.bind(store);
        store.listUnfinished = async function* (name, options) {
          for await (const runId of list(name, options)) {
            await cutsIn();
            yield runId;
          }
        };
      } else {
        // b read the run before c claimed it: b's claim loses the compare-and-set, not to the lease.
        const latest = store.latest.bind(store);
        store.latest = async (runId) => {
          const row = await latest(runId);
          await cutsIn();
          return row;
        };
      }
      const w = startWorker({
        serve: [worker(store, "b", tools, 100).served(flow)],
        pollMs: 20,
        maxPollMs: 40,
        stopOnSignals: false,
      });
      const look = new MemoryCheckpointStore({ data });
      await until(async () => (await look.latest("r")).status === "done");
      expect(w.status()).toMatchObject({ lost: 1, finished: 1 });
      expect(tools.count("charge_card")).toBe(1);
      await w.stop();
    }
  });

  it("recoverEach recovers runs concurrently: one run whose tool hangs does not hold up the others", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    for (const seats of [1, 2, 3]) {
      const a = new Cuttable(data);
      tools.hangInside = "charge_card";
      void worker(a, "a", tools, 100)
        .run(flow, { show: "Hamlet", seats }, { runId: `r${seats}` })
        .catch(() => undefined);
      await until(() => tools.count("charge_card") === seats);
      a.cut = true;
    }
    tools.hangInside = undefined;
    await new Promise((resolve) => setTimeout(resolve, 150));
    // On recovery the charge of one seat hangs forever.
    const registry = new ToolRegistry()
      .tool("hold_seats", async () => "held", { idempotent: true })
      .tool("charge_card", async (a: { seats: number }) => (a.seats === 1 ? forever() : "charged"))
      .tool("email_tickets", async () => "mailed");
    const b = new FlowRunner(new Executor(registry), {
      checkpoints: new MemoryCheckpointStore({ data }),
      checkpointKey: KEY,
    });
    const done: string[] = [];
    void (async () => {
      for await (const settled of b.recoverEach(flow, { rerunInDoubt: true, concurrency: 3 })) done.push(settled.item);
    })();
    await until(() => done.length === 2);
    expect(done.sort()).toEqual(["r2", "r3"]);
  });
});
