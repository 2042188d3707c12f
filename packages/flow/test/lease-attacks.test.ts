import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointStore,
  type EventSink,
  Executor,
  MemoryCheckpointStore,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { z } from "zod";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools, ticketsFlow } from "./helpers.js";
import { DyingStore, storeWith } from "@durable/test-utils/stores";

// Attacks from the adversarial review of leases and the standing worker: each test states the promise it holds.

const flow = ticketsFlow();
const order = { show: "Hamlet", seats: 2 };

function runner(
  store: CheckpointStore,
  tools: Tools,
  lease?: { owner?: string; ms?: number },
  events?: EventSink,
): FlowRunner {
  return new FlowRunner(new Executor(tools.registry()), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(lease === undefined ? {} : { lease }),
    ...(events === undefined ? {} : { events }),
  });
}

/** A worker that dies inside `tool`: from then on its store hangs, so it renews and releases nothing. */
async function diesInside(data: MemoryData, tool: string, tools: Tools, owner: string, ms: number): Promise<void> {
  const dying = new DyingStore(new MemoryCheckpointStore({ data }), undefined);
  tools.hangInside = tool;
  void runner(dying, tools, { owner, ms })
    .run(flow, order, { runId: "r" })
    .catch(() => undefined);
  await until(() => tools.count(tool) === 1);
  dying.dead = true;
  tools.hangInside = undefined;
}

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

    // Promise: a run given up on a store error is claimable at once. Here b's lease keeper goes on renewing it
    // every 50 ms forever, so no other worker can ever claim the run while b's process lives.
    await sleep(400);
    expect(await base.leaseOf("r")).toBeUndefined();
    const c = runner(new MemoryCheckpointStore({ data }), tools, { owner: "c", ms: 150 });
    await expect(c.recover(flow, "r")).resolves.toMatchObject({ status: "done" });
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
    // Each worker's claim moves the latest step, which the other takes as "someone decided": they claim the run
    // from each other on every poll, writing a checkpoint and telling onStuck each time.
    expect(stuck.length, `onStuck was told ${stuck.length} times; the run is at step ${step}`).toBeLessThanOrEqual(2);
    expect(step).toBeLessThanOrEqual(4);
    expect(tools.count("charge_card")).toBe(1);
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

describe("one process, one lease owner: a run that runner.run() drives", () => {
  it("is not claimed by recover() of the same process (recover of a run this process drives is refused)", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    tools.hangInside = "charge_card";
    const a = runner(store, tools);
    void a.run(flow, order, { runId: "r" }).catch(() => undefined);
    await until(() => tools.count("charge_card") === 1);
    const before = (await store.latest("r")).step;
    // An operator's endpoint, or a retry, recovers the run by id: run() is alive and renewing, inside charge_card.
    const refused = await a.recover(flow, "r").catch((error: unknown) => error);
    // The recover got through to a claim: run() is fenced mid-tool, and the call is in doubt.
    expect((await store.latest("r")).step).toBe(before);
    expect(refused).toBeInstanceOf(Error);
    expect(String(refused)).toMatch(/drives the run already|held by/);
  });

  it("is not taken by a standing worker of the same process when a renewal comes late (lease lapsed, run() still alive)", async () => {
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
    // The worker of the same process and owner is refused the run that run() drives ("this process drives the run
    // already"): nothing is claimed, run() is not cut off, and charge_card is not in doubt.
    expect(stuck.map(String)).toEqual([]);
    expect(await base.latest("r")).toMatchObject({ segment: 0 });
    expect(w.status()).toMatchObject({ stuck: 0, waitingForDecision: 0, finished: 0 });
    expect(tools.count("charge_card")).toBe(1);
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
    // Promise: a run given up at stop is claimable at once. The abort came before #drive added its listener, so
    // nothing released the lease, and the claim's LeaseKeeper renews it every 100 ms for as long as the process lives.
    await sleep(500);
    expect(await store.leaseOf("r")).toBeUndefined();
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
    // The driver claims (saves step 1 with a new segment) and reads the log before it first looks at the signal.
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
    // The lease was released at the abort; yet the node went on and charged the card, for a run it had given up
    // (another worker may claim it meanwhile: the charge is then in doubt and waits for a decision).
    expect(charged).toBe(0);
  });
});
