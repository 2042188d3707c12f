/**
 * What the lease, worker and give-up tests share: the tickets flow and an order for it, a runner with a lease,
 * and workers that die, hang or are cut off from their store inside a tool.
 */
import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointStore,
  type EventSink,
  Executor,
  MemoryCheckpointStore,
  StoreUnavailable,
  type ToolRegistry,
} from "@durable/core";
import type { LateTimers } from "@durable/test-utils/late-timers";
import { DyingStore } from "@durable/test-utils/stores";
import { until } from "@durable/test-utils/waiting";
import type { TestContext } from "vitest";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";
import { KEY, Tools, ticketsFlow } from "./helpers.js";

export const flow = ticketsFlow();
export const order = { show: "Hamlet", seats: 2 };

/** A runner of `tools` on `store`, with the lease and the event sink given, if any. */
export function runner(
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
export async function unjudgedIfStalled(
  ctx: TestContext,
  timers: LateTimers,
  from: number,
  marginMs: number,
): Promise<void> {
  await timers.settled();
  const stall = timers.longestWithin(from, performance.now());
  timers.stop();
  if (stall > marginMs)
    ctx.skip(`this process stalled ${Math.round(stall)} ms, more than the ${marginMs} ms its lease leaves`);
}

/** Worker "a" drives run `runId` into `tool`, where it hangs; with `die`, its store hangs from then on (a dead worker). */
export async function inside(
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

/** A worker that dies inside `tool`: from then on its store hangs, so it renews and releases nothing. */
export async function diesInside(
  data: MemoryData,
  tool: string,
  tools: Tools,
  owner: string,
  ms: number,
): Promise<void> {
  const dying = new DyingStore(new MemoryCheckpointStore({ data }), undefined);
  tools.hangInside = tool;
  void runner(dying, tools, { owner, ms })
    .run(flow, order, { runId: "r" })
    .catch(() => undefined);
  await until(() => tools.count(tool) === 1);
  dying.dead = true;
  tools.hangInside = undefined;
}

/** A connection to a shared memory store that can be cut: from then on every call fails as a dead network would. */
export class Cuttable extends MemoryCheckpointStore {
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

/** A runner leased to `owner` for `ms`. */
export function worker(store: CheckpointStore, owner: string, tools: Tools, ms = 5_000): FlowRunner {
  return new FlowRunner(new Executor(tools.registry()), {
    checkpoints: store,
    checkpointKey: KEY,
    lease: { owner, ms },
  });
}

/** Worker A starts a run and is inside `tool` (it hangs there); returns A's connection. */
export async function insideTool(data: MemoryData, tool: string, tools: Tools, ms: number): Promise<Cuttable> {
  const store = new Cuttable(data);
  tools.hangInside = tool;
  void worker(store, "a", tools, ms)
    .run(flow, order, { runId: "r" })
    .catch(() => undefined);
  await until(() => tools.count(tool) === 1);
  tools.hangInside = undefined;
  return store;
}

const State = z.object({ a: z.string().default(""), b: z.string().default("") });
/** prep (a tool that takes `prepMs`), then pay. */
export const twoSteps = new Flow("two-steps", { state: State })
  .node("prep", new Call("prep", { args: () => ({}), into: "a" }))
  .node("pay", new Call("pay", { args: () => ({ cents: 100 }), into: "b" }))
  .edge("prep", "pay")
  .end("pay");
