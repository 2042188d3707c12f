import type { MemoryData } from "@durable/core/internal";
import { type CheckpointStore, type DurableEvent, Executor, MemoryCheckpointStore, startWorker } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { DyingStore } from "@durable/test-utils/stores";
import { Tools } from "@durable/test-utils/tools";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type LoopModel, type Message, type ModelReply, runToolLoop, servedToolLoops } from "../src/index.js";
import { orderTools } from "./programs.js";

// The standing worker serving tool loops (servedToolLoops): it takes a dead loop over once its lease runs out, and
// reports a loop in doubt once; and serving a flow and a tool loop of one name, where each run goes to its own kind.

const KEY = "loop-worker-tests-key-0123456789abcdef";

/** Holds and charges in its first reply, then says it is done; counts its replies. */
function orderModel() {
  const seen = { replies: 0 };
  const model: LoopModel = {
    async reply(messages: readonly Message[]): Promise<ModelReply> {
      seen.replies += 1;
      return messages.some((m) => m.role === "assistant")
        ? { text: "done", toolCalls: [] }
        : {
            text: "ordering",
            toolCalls: [
              { id: "h1", name: "hold", args: { seats: 2 } },
              { id: "c1", name: "charge", args: { cents: 4200 } },
            ],
          };
    },
  };
  return { model, seen };
}

const options = (checkpoints: CheckpointStore, owner: string, ms: number, events?: DurableEvent[]) => ({
  checkpoints,
  checkpointKey: KEY,
  name: "orders",
  lease: { owner, ms },
  ...(events === undefined ? {} : { events: (e: DurableEvent) => void events.push(e) }),
});

/** A loop run "r" whose worker dies inside `tool` (the other call of the round may finish). */
async function diesInside(data: MemoryData, tool: string, tools: Tools): Promise<void> {
  const dying = new DyingStore(new MemoryCheckpointStore({ data }), undefined);
  tools.hangInside = tool;
  void runToolLoop(orderModel().model, orderTools(tools), [{ role: "user", content: "two seats" }], {
    ...options(dying, "a", 100),
    runId: "r",
  }).catch(() => undefined);
  await until(() => tools.count(tool) === 1);
  await sleep(20);
  dying.dead = true;
  tools.hangInside = undefined;
}

describe("a standing worker serving tool loops", () => {
  it("takes a dead loop over once its lease runs out: the finished charge is replayed, the idempotent hold rerun", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold", tools);
    const store = new MemoryCheckpointStore({ data });
    const { model, seen } = orderModel();
    const w = startWorker({
      serve: [servedToolLoops(model, orderTools(tools), options(store, "b", 100))],
      pollMs: 10,
      stopOnSignals: false,
    });
    await until(async () => (await store.latest("r")).status === "done");
    await w.stop();
    expect(tools.count("charge")).toBe(1);
    expect(tools.count("hold")).toBe(2);
    expect(seen.replies).toBe(1);
    expect(w.status()).toMatchObject({ finished: 1, stuck: 0 });
  });

  it("tells onFailed of a loop it took over that then failed: a stream-only model, asked without streaming by the recovery", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold", tools);
    const store = new MemoryCheckpointStore({ data });
    const streamOnly: LoopModel = {
      async reply(_messages, _tools, replyOptions) {
        if (replyOptions?.onPart === undefined) throw new Error("Not implemented");
        return { text: "done", toolCalls: [] };
      },
    };
    const failed: Array<[string, unknown]> = [];
    const stuck: string[] = [];
    const w = startWorker({
      serve: [servedToolLoops(streamOnly, orderTools(tools), options(store, "b", 100))],
      pollMs: 10,
      stopOnSignals: false,
      onFailed: (runId, error) => failed.push([runId, error]),
      onStuck: (runId) => stuck.push(runId),
    });
    await until(() => failed.length > 0);
    await w.stop();
    expect((await store.latest("r")).status).toBe("failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]?.[0]).toBe("r");
    expect(String(failed[0]?.[1])).toMatch(/Not implemented/);
    expect(stuck).toEqual([]);
    expect(w.status()).toMatchObject({ finished: 1, stuck: 0 });
  });

  it("reports a loop whose charge is in doubt once and claims it once, however long it polls", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "charge", tools);
    const store = new MemoryCheckpointStore({ data });
    const events: DurableEvent[] = [];
    const stuck: string[] = [];
    const w = startWorker({
      serve: [servedToolLoops(orderModel().model, orderTools(tools), options(store, "b", 100, events))],
      pollMs: 10,
      maxPollMs: 10,
      stopOnSignals: false,
      onStuck: (runId, error) => stuck.push(`${runId}: ${(error as Error).name}`),
    });
    // Reported once the lease ran out and a poll took the run; then a few more polls must not report or claim it again.
    await until(() => stuck.length > 0);
    await sleep(300);
    await w.stop();
    expect(stuck).toEqual(["r: RecoveryNeedsDecision"]);
    expect(events.filter((e) => e.type === "run.needs-decision")).toHaveLength(1);
    expect(tools.count("charge")).toBe(1);
    expect(await store.leaseOf("r")).toBeUndefined();
  });
});

describe("a standing worker serving a flow and a tool loop of one name", () => {
  it("drives a dead loop's run with the loop, whichever is listed first", async () => {
    const data: MemoryData = new Map();
    const tools = new Tools();
    await diesInside(data, "hold", tools);
    const store = new MemoryCheckpointStore({ data });
    const flow = new Flow("orders", { state: z.object({ n: z.number() }) }).node("one", () => ({ n: 1 })).end("one");
    const runner = new FlowRunner(new Executor(orderTools(tools)), {
      checkpoints: store,
      checkpointKey: KEY,
      lease: { owner: "b", ms: 100 },
    });
    const w = startWorker({
      serve: [runner.served(flow), servedToolLoops(orderModel().model, orderTools(tools), options(store, "b", 100))],
      pollMs: 10,
      stopOnSignals: false,
    });
    await until(async () => (await store.latest("r")).status === "done").catch(() => undefined);
    await w.stop();
    // The flow's entry lists the loop's run (listings go by name, not kind), starts a recover that is refused with
    // CheckpointConflict ("the run belongs to loop") and counts it lost; meanwhile the loop's entry sees the run as
    // running and skips it. Every poll does the same, with no back-off: the loop run is never recovered.
    expect((await store.latest("r")).status, `lost ${w.status().lost} times`).toBe("done");
    expect(w.status().lost, "recoveries refused as another kind's run").toBeLessThanOrEqual(1);
  });
});
