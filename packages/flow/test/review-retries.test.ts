import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointStore,
  Executor,
  MemoryCheckpointStore,
  StoreUnavailable,
  type ToolContext,
  ToolFailed,
  ToolRegistry,
  startWorker,
} from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { DyingStore, storeWith } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools, ticketsFlow } from "./helpers.js";

// Attacks of the review of tool retries and timeouts, the save/keeper lease rule and the worker.
// Each test asserts a guarantee: a failing test is a hole.

const forever = () => new Promise<never>(() => {});

function runner(store: CheckpointStore, registry: ToolRegistry, lease?: { owner: string; ms: number }): FlowRunner {
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(lease === undefined ? {} : { lease }),
  });
}

const State = z.object({ a: z.string().default(""), b: z.string().default("") });
/** prep (a tool that takes `prepMs`), then pay. */
const twoSteps = new Flow("two-steps", { state: State })
  .node("prep", new Call("prep", { args: () => ({}), into: "a" }))
  .node("pay", new Call("pay", { args: () => ({ cents: 100 }), into: "b" }))
  .edge("prep", "pay")
  .end("pay");

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

  it("survives a renewal outage (180 to 620 ms of a 600 ms lease) after a slow start save and a save just over a third in", async () => {
    // Start save sent at 0, applied at 150 (expires 750). Renewal at ~200 fails. The save of step 1 at ~290 is
    // 140 ms after the store set the lease: the store keeps it, but the keeper, counting from when the start
    // save was sent, takes it for a renewal and next renews at ~490 (fails), then ~690, applied ~790: lapsed at 750.
    const { stuck, latest, lease } = await attempt({ startSaveMs: 150, prepMs: 125 });
    expect(stuck).toEqual([]);
    expect(latest.segment).toBe(0);
    expect(lease).toMatchObject({ owner: "a" });
  });

  it("control: the same outage with a prompt start save (the save of step 1 renews) leaves the run with its worker", async () => {
    const { stuck, latest, lease } = await attempt({ startSaveMs: 0, prepMs: 280 });
    expect(stuck).toEqual([]);
    expect(latest.segment).toBe(0);
    expect(lease).toMatchObject({ owner: "a" });
  });
});

describe("the standing worker", () => {
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

  it("goes on with a call a dead worker left failed: the next attempt after what is left of its wait, nothing else rerun", async () => {
    const data: MemoryData = new Map();
    const attempts: Array<{ attempt: number; at: number }> = [];
    let prepped = 0;
    const registry = new ToolRegistry()
      .tool("prep", () => {
        prepped += 1;
        return "prepared";
      })
      .tool(
        "pay",
        (_args: unknown, ctx: ToolContext) => {
          attempts.push({ attempt: ctx.attempt, at: Date.now() });
          if (ctx.attempt === 1) throw new Error("503");
          return "paid";
        },
        { retry: { attempts: 3, initialDelayMs: 1_000, jitter: 0 } },
      );
    const dying = new DyingStore(new MemoryCheckpointStore({ data }), {
      op: "recordCall",
      kind: "failed",
      tool: "pay",
      when: "after",
    });
    void runner(dying, registry, { owner: "a", ms: 150 })
      .run(twoSteps, {}, { runId: "r" })
      .catch(() => undefined);
    await until(() => dying.dead);
    const base = new MemoryCheckpointStore({ data });
    const sealer = Sealer.withKeys(KEY);
    const failed = (await readCallLog(base, sealer, "r", [])).find((r) => r.kind === "failed");
    const w = startWorker({
      serve: [runner(base, registry, { owner: "b", ms: 150 }).served(twoSteps)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await until(async () => (await base.latest("r")).status === "done");
    await w.stop();
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(attempts[1]!.at).toBeGreaterThanOrEqual(failed!.retryAt!);
    expect(attempts[1]!.at - failed!.retryAt!).toBeLessThan(200); // not a whole second more
    expect(prepped).toBe(1);
  });

  it("a flow node that catches ToolFailed gets the same error on recovery after a crash, without the tool running again", async () => {
    const data: MemoryData = new Map();
    let charged = 0;
    const registry = new ToolRegistry().tool(
      "charge",
      () => {
        charged += 1;
        throw new Error("card declined");
      },
      { retry: { attempts: 2, initialDelayMs: 10, jitter: 0 } },
    );
    const caught = new Flow("caught", { state: State })
      .node("pay", async (_state, ctx) => {
        try {
          return { a: String(await ctx.call("charge", { cents: 1 })) };
        } catch (error) {
          return { a: error instanceof ToolFailed ? `failed after ${error.attempts}: ${error.error}` : "other" };
        }
      })
      .end("pay");
    // The worker dies right before the superstep's save: the error record is the only trace.
    const dying = new DyingStore(new MemoryCheckpointStore({ data }), { op: "save", step: 1, when: "before" });
    void runner(dying, registry, { owner: "a", ms: 100 })
      .run(caught, {}, { runId: "r" })
      .catch(() => undefined);
    await until(() => dying.dead);
    await sleep(150);
    const result = await runner(new MemoryCheckpointStore({ data }), registry, { owner: "b", ms: 100 }).recover(
      caught,
      "r",
    );
    expect(result).toMatchObject({ status: "done", state: { a: "failed after 2: Error: card declined" } });
    expect(charged).toBe(2);
  });
});
