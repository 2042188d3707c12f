import { type CheckpointStore, Executor, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";
import { latencyOf, round } from "./stats.js";
import { KEY } from "./workload.js";
import { orDash, textTable } from "./table.js";

/** What sleeping runs cost one store. */
export interface SleeperFigures {
  readonly store: string;
  /** How many runs slept while the polls were timed. */
  readonly sleepers: number;
  /** A worker's poll (the claimable listing, drained) with no run asleep, and with `sleepers` asleep: median ms. */
  readonly pollMsEmpty: number;
  readonly pollMsAsleep: number;
  /** CPU ms of this process per poll, likewise (median). */
  readonly pollCpuMsEmpty: number;
  readonly pollCpuMsAsleep: number;
  /** Round trips to the server per poll with the runs asleep, where the target counts them. */
  readonly pollTrips?: number;
  /** How many runs were due at once, and their wake-up lag (ms from the wake time to the tool after the sleep). */
  readonly due: number;
  readonly lagP50Ms: number;
  readonly lagP99Ms: number;
}

const POLLS = 21;
/** How many runs are put to sleep at once. */
const AT_ONCE = 16;

/** A run that sleeps until `until` (ms since the epoch), then notes when it woke. */
function napFlow(woke: Map<string, number>) {
  const registry = new ToolRegistry().tool("woke", (_args: unknown, ctx) => void woke.set(ctx.runId, Date.now()));
  const flow = new Flow("naps", { state: z.object({ until: z.number() }) })
    .node("nap", async ({ until }, ctx) => {
      await ctx.sleepUntil(until);
      await ctx.call("woke", {});
    })
    .end("nap");
  return { registry, flow };
}

/** Puts `count` runs to sleep until `until`, `AT_ONCE` at a time. */
async function putToSleep(
  runner: FlowRunner,
  flow: Flow<{ until: number }>,
  prefix: string,
  count: number,
  until: number,
) {
  for (let from = 0; from < count; from += AT_ONCE) {
    const batch = Array.from({ length: Math.min(AT_ONCE, count - from) }, (_, i) => `${prefix}-${from + i}`);
    await Promise.all(batch.map((runId) => runner.run(flow, { until }, { runId })));
  }
}

/** The median wall and CPU ms of a worker's poll: the claimable listing of `name`, drained. */
async function pollCost(store: CheckpointStore, name: string): Promise<{ ms: number; cpuMs: number }> {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < POLLS; i++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for await (const _ of store.listUnfinished(name, { claimable: true }));
    walls.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000);
  }
  return { ms: latencyOf(walls).p50, cpuMs: latencyOf(cpus).p50 };
}

/**
 * Puts `sleepers` runs to sleep for an hour on a fresh store and times a
 * worker's poll with none and with them asleep (constant cost: the listing
 * reads the due runs only); then `due` runs sleep until one instant and a
 * worker (64 at once, polling every 100 ms) wakes them: the lag from that
 * instant to each run's first call after its sleep.
 */
export async function measureSleepers(
  name: string,
  store: () => Promise<CheckpointStore>,
  sleepers: number,
  due: number,
  countTrips?: () => () => number,
): Promise<SleeperFigures> {
  const woke = new Map<string, number>();
  const { registry, flow } = napFlow(woke);
  const checkpoints = await store();
  try {
    const runner = new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY });
    const empty = await pollCost(checkpoints, flow.name);
    await putToSleep(runner, flow, "asleep", sleepers, Date.now() + 3_600_000);
    const asleep = await pollCost(checkpoints, flow.name);
    const counting = countTrips?.();
    for await (const _ of checkpoints.listUnfinished(flow.name, { claimable: true }));
    const pollTrips = counting?.();
    // Due a little after the last is asleep, so every one of them sleeps first.
    const at = Date.now() + 2_000 + due * 20;
    await putToSleep(runner, flow, "due", due, at);
    if (Date.now() >= at) throw new Error(`putting ${due} runs to sleep took past their wake time: lower --due`);
    const worker = startWorker({
      serve: [runner.served(flow)],
      concurrency: 64,
      pollMs: 100,
      maxPollMs: 100,
      stopOnSignals: false,
    });
    try {
      const deadline = at + 120_000;
      while (woke.size < due && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await worker.stop();
    }
    if (woke.size < due) throw new Error(`${due - woke.size} of ${due} runs did not wake within 2 minutes`);
    const lag = latencyOf([...woke.values()].map((when) => when - at));
    return {
      store: name,
      sleepers,
      pollMsEmpty: round(empty.ms, 2),
      pollMsAsleep: round(asleep.ms, 2),
      pollCpuMsEmpty: round(empty.cpuMs, 2),
      pollCpuMsAsleep: round(asleep.cpuMs, 2),
      ...(pollTrips === undefined ? {} : { pollTrips }),
      due,
      lagP50Ms: Math.round(lag.p50),
      lagP99Ms: Math.round(lag.p99),
    };
  } finally {
    await checkpoints.close();
  }
}

/** The figures as a table: a poll's cost with none and with every run asleep (should be alike), and the wake-up lag. */
export function sleepersTable(figures: readonly SleeperFigures[]): string[] {
  return textTable(figures, (f) => f.store, [
    ["asleep", (f) => String(f.sleepers)],
    ["poll ms (none)", (f) => f.pollMsEmpty.toFixed(2)],
    ["poll ms (asleep)", (f) => f.pollMsAsleep.toFixed(2)],
    ["cpu ms (none)", (f) => f.pollCpuMsEmpty.toFixed(2)],
    ["cpu ms (asleep)", (f) => f.pollCpuMsAsleep.toFixed(2)],
    ["trips/poll", (f) => orDash(f.pollTrips)],
    ["due at once", (f) => String(f.due)],
    ["lag p50 ms", (f) => String(f.lagP50Ms)],
    ["lag p99 ms", (f) => String(f.lagP99Ms)],
  ]);
}
