import { type CheckpointStore, Executor, sendEvent, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";
import { latencyOf, round } from "./stats.js";
import { KEY } from "./workload.js";
import { orDash, textTable } from "./table.js";

/** What delivering events costs one store. */
export interface EventFigures {
  readonly store: string;
  /** How many runs waited, each sent one event. */
  readonly sends: number;
  /** Calls of the store's API per `sendEvent` (median): each is one round trip to a server store. */
  readonly callsPerSend: number;
  /** Round trips to the server per `sendEvent` (median), where the target counts them (statements, for PostgreSQL). */
  readonly tripsPerSend?: number;
  readonly sendMsP50: number;
  readonly sendMsP99: number;
  /** From `sendEvent` resolving to the waiting run's first call after its wait, with a worker polling every 100 ms. */
  readonly wakeLagP50Ms: number;
  readonly wakeLagP99Ms: number;
}

/** A run that waits for `paid`, then notes when it woke. */
function paymentFlow(woke: Map<string, number>) {
  const registry = new ToolRegistry().tool("woke", (_args: unknown, ctx) => void woke.set(ctx.runId, Date.now()));
  const flow = new Flow("payments", { state: z.object({}) })
    .node("wait", async (_state, ctx) => {
      await ctx.waitForEvent("paid");
      await ctx.call("woke", {});
    })
    .end("wait");
  return { registry, flow };
}

/** `store` with a count of the calls made to its methods. */
function counted(store: CheckpointStore): { store: CheckpointStore; calls: () => number } {
  let calls = 0;
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls += 1;
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls: () => calls };
}

/**
 * Puts `count` runs to wait for an event on a fresh store, with a worker
 * (64 at once, polling every 100 ms) serving them; sends each its event, one
 * after another, counting the store calls (and the server's round trips,
 * where the target counts them) and timing each send; then the lag from each
 * send to its run's first call after the wait.
 */
export async function measureEvents(
  name: string,
  store: () => Promise<CheckpointStore>,
  count: number,
  countTrips?: () => () => number,
): Promise<EventFigures> {
  const woke = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const { registry, flow } = paymentFlow(woke);
  const checkpoints = await store();
  try {
    const runner = new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY });
    const runIds = Array.from({ length: count }, (_, i) => `waits-${i}`);
    for (const runId of runIds) await runner.run(flow, {}, { runId });
    const worker = startWorker({
      serve: [runner.served(flow)],
      concurrency: 64,
      pollMs: 100,
      maxPollMs: 100,
      stopOnSignals: false,
    });
    const calls: number[] = [];
    const trips: number[] = [];
    const walls: number[] = [];
    try {
      for (const runId of runIds) {
        const { store: counting, calls: made } = counted(checkpoints);
        const tripsOf = countTrips?.();
        const started = performance.now();
        await sendEvent({ checkpoints: counting, checkpointKey: KEY, runId, name: "paid", payload: { runId } });
        walls.push(performance.now() - started);
        sentAt.set(runId, Date.now());
        calls.push(made());
        if (tripsOf !== undefined) trips.push(tripsOf());
      }
      const deadline = Date.now() + 120_000;
      while (woke.size < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await worker.stop();
    }
    if (woke.size < count) throw new Error(`${count - woke.size} of ${count} runs did not wake within 2 minutes`);
    const send = latencyOf(walls);
    const lag = latencyOf(runIds.map((runId) => (woke.get(runId) ?? 0) - (sentAt.get(runId) ?? 0)));
    return {
      store: name,
      sends: count,
      callsPerSend: latencyOf(calls).p50,
      ...(trips.length === 0 ? {} : { tripsPerSend: latencyOf(trips).p50 }),
      sendMsP50: round(send.p50, 2),
      sendMsP99: round(send.p99, 2),
      wakeLagP50Ms: Math.round(lag.p50),
      wakeLagP99Ms: Math.round(lag.p99),
    };
  } finally {
    await checkpoints.close();
  }
}

/** The figures as a table: what one `sendEvent` costs, and how soon the run it wakes goes on. */
export function eventsTable(figures: readonly EventFigures[]): string[] {
  return textTable(figures, (f) => f.store, [
    ["sends", (f) => String(f.sends)],
    ["calls/send", (f) => String(f.callsPerSend)],
    ["trips/send", (f) => orDash(f.tripsPerSend)],
    ["send ms p50", (f) => f.sendMsP50.toFixed(2)],
    ["send ms p99", (f) => f.sendMsP99.toFixed(2)],
    ["wake lag p50 ms", (f) => String(f.wakeLagP50Ms)],
    ["wake lag p99 ms", (f) => String(f.wakeLagP99Ms)],
  ]);
}
