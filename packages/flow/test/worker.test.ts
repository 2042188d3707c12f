import type { MemoryData } from "@durable/core/internal";
import {
  CheckpointStoreCorrupt,
  decideInDoubt,
  type DurableEvent,
  type EventSink,
  Executor,
  LeaseHeld,
  MemoryCheckpointStore,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { callIdOf, readCallLog, Sealer } from "@durable/core/runner";
import { LateTimers } from "@durable/test-utils/late-timers";
import { countingReads, DyingStore, storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools, ticketsFlow } from "./helpers.js";
import { Cuttable, diesInside, flow, inside, insideTool, order, runner, worker } from "./workers.js";

// The standing worker: it takes a dead worker's run over once its lease runs out, reports a run in doubt once, and
// goes on through a failing store or event sink, paused runs and many runs at once.

afterEach(() => {
  vi.restoreAllMocks();
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
    // Step 2 is the claim, step 3 the run saved waiting for a decision.
    expect((await store.latest("stuck")).step).toBe(3);
    expect(tools.count("charge_card")).toBe(4);
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

  it("never claims a run another drive of the same process holds: each drive has a lease owner of its own", async () => {
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
    await expect(worker(store, "b", tools).recover(flow, "r")).rejects.toThrow(LeaseHeld);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await w.stop();
    expect((await store.latest("r")).step).toBe(step);
    expect(tools.count("charge_card")).toBe(1);
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

  it("does not claim a run in a hot loop when every claim's call-log read fails (StoreUnavailable)", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    // Worker "a" dies inside hold_seats: its lease (100 ms) runs out.
    const dying = new DyingStore(new MemoryCheckpointStore({ data }), undefined);
    tools.hangInside = "hold_seats";
    void runner(dying, tools.registry(), { owner: "a", ms: 100 })
      .run(ticketsFlow(), { show: "Hamlet", seats: 2 }, { runId: "r" })
      .catch(() => undefined);
    await until(() => tools.count("hold_seats") === 1);
    dying.dead = true;
    tools.hangInside = undefined;
    await sleep(150);
    const base = new MemoryCheckpointStore({ data });
    const before = (await base.latest("r")).step;
    // Reading this run's log times out (a big log, a slow replica): each claim gives the run up again.
    // (The failure comes back after a turn of the event loop, as a real store's I/O would: with an immediate
    // rejection the loop below is all microtasks and starves the process, no timer ever fires again.)
    const store = storeWith(base, {
      calls: async () => {
        await new Promise((resolve) => setImmediate(resolve));
        throw new StoreUnavailable("the call-log read timed out.");
      },
    });
    const w = startWorker({
      serve: [runner(store, tools.registry(), { owner: "b", ms: 100 }).served(ticketsFlow())],
      pollMs: 500,
      maxPollMs: 1_000,
      stopOnSignals: false,
    });
    await sleep(1_000);
    await w.stop();
    const claims = (await base.latest("r")).step - before;
    // pollMs 500 over 1 s: a couple of claims. Each failed drive wakes the poll at once, and the released run is listed again.
    expect(claims).toBeLessThanOrEqual(4);
  });
});

describe("a run left waiting for a decision", () => {
  it("costs an idle worker no read on each poll: the claimable listing leaves it out", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "charge_card", tools, "a", 100);
    await sleep(150);
    const { store, reads } = countingReads(new MemoryCheckpointStore({ data }));
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 100 }).served(flow)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (runId) => stuck.push(runId),
    });
    await until(() => stuck.length === 1);
    await sleep(100);
    const [listings, runReads] = [reads.listings, reads.runReads];
    await sleep(300);
    await w.stop();
    expect(reads.listings - listings, "the worker went on polling").toBeGreaterThan(5);
    expect(reads.runReads - runReads, "reads of the run while the worker polled").toBe(0);
    expect(stuck).toEqual(["r"]);
    expect(tools.count("charge_card")).toBe(1);
  });

  it("is listed again once an operator's decision claimed it: the worker finishes it", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "charge_card", tools, "a", 100);
    await sleep(150);
    const store = new MemoryCheckpointStore({ data });
    const w = startWorker({
      serve: [runner(store, tools, { owner: "b", ms: 100 }).served(flow)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await until(() => w.status().waitingForDecision === 1);
    const charge = (await readCallLog(store, Sealer.withKeys(KEY), "r", [])).find((r) => r.tool === "charge_card")!;
    await decideInDoubt(
      "r",
      { [charge.callId]: { result: "charged" } },
      {
        checkpoints: store,
        checkpointKey: KEY,
        by: "operator",
      },
    );
    await until(async () => (await store.latest("r")).status === "done");
    await w.stop();
    expect(tools.count("charge_card")).toBe(1);
  });
});

describe("a run whose stored rows are malformed", () => {
  it("is reported once through onStuck as CheckpointStoreCorrupt naming the run, and left: never recovered again", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold_seats", tools, "a", 100);
    await sleep(150);
    // Its latest checkpoint row holds a number where the sealed envelope belongs, as a bug or an attacker could leave it.
    const rows = data.get("r")!.checkpoints;
    rows[rows.length - 1] = { ...rows.at(-1)!, sealed: 42 as unknown as string };
    const store = new MemoryCheckpointStore({ data });
    let recoveries = 0;
    const served = runner(store, tools, { owner: "b", ms: 100 }).served(flow);
    const stuck: unknown[] = [];
    const w = startWorker({
      serve: [
        {
          kind: served.kind,
          name: served.name,
          store: served.store,
          recover: (runId, options) => {
            recoveries += 1;
            return served.recover(runId, options);
          },
        },
      ],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (_, error) => stuck.push(error),
    });
    await sleep(400);
    await w.stop();
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toBeInstanceOf(CheckpointStoreCorrupt);
    expect((stuck[0] as CheckpointStoreCorrupt).runId).toBe("r");
    expect(recoveries).toBe(1);
    expect(w.status()).toMatchObject({ stuck: 1, running: 0 });
  });
});

describe("two standing workers (different owners) and a run that needs a decision", () => {
  it("each report it once and leave it; they do not claim it again and again from each other", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    // Worker "a" dies inside charge_card (not idempotent): the run needs a decision.
    await diesInside(data, "charge_card", tools, "a", 100);
    await sleep(150);

    const store = new MemoryCheckpointStore({ data });
    const stuck: string[] = [];
    // An ordinary event sink that ships each event somewhere (here: a 1 ms write).
    const ship: EventSink = async () => {
      await sleep(1);
    };
    const workers = ["b", "c"].map((owner) =>
      startWorker({
        serve: [runner(new MemoryCheckpointStore({ data }), tools, { owner, ms: 100 }, ship).served(flow)],
        pollMs: 20,
        maxPollMs: 40,
        stopOnSignals: false,
        onStuck: (runId) => stuck.push(`${owner}:${runId}`),
      }),
    );
    await sleep(800);
    const step = (await store.latest("r")).step;
    await Promise.all(workers.map((w) => w.stop()));
    // Each worker's claim moves the latest step: were it taken by the other for "someone decided", they would claim
    // the run from each other on every poll, writing a checkpoint and telling onStuck each time.
    expect(stuck.length, `onStuck was told ${stuck.length} times; the run is at step ${step}`).toBeLessThanOrEqual(2);
    expect(step).toBeLessThanOrEqual(4);
    expect(tools.count("charge_card")).toBe(1);
  });
});
