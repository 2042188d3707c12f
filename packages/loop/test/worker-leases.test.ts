import {
  type CheckpointStore,
  type DurableEvent,
  MemoryCheckpointStore,
  type MemoryData,
  startWorker,
} from "@durable/core";
import { DyingStore } from "@durable/test-utils/stores";
import { Tools } from "@durable/test-utils/tools";
import { describe, expect, it } from "vitest";
import { type LoopModel, type Message, type ModelReply, runToolLoop, servedToolLoops } from "../src/index.js";
import { orderTools } from "./programs.js";

// The standing worker serving tool loops (servedToolLoops), attacked by the review of leases.

const KEY = "loop-worker-tests-key-0123456789abcdef";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error("timed out waiting");
}

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
    await sleep(600);
    await w.stop();
    expect(stuck).toEqual(["r: RecoveryNeedsDecision"]);
    expect(events.filter((e) => e.type === "run.needs-decision")).toHaveLength(1);
    expect(tools.count("charge")).toBe(1);
    expect(await store.leaseOf("r")).toBeUndefined();
  });
});
