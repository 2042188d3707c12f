import { type CheckpointStore, StoreUnavailable } from "@durable/core";
import { DurableRun, Sealer } from "@durable/core/runner";
import { Flow } from "@durable/flow";
import { z } from "zod";
import { latencyOf, round, timed } from "./stats.js";
import { KEY, cutAtSave, fanFlow, runner } from "./workload.js";

/** How large each sweep goes; the heavy stores take smaller sizes so `pnpm bench` stays short. */
export interface SweepSizes {
  readonly stateBytes: readonly number[];
  readonly callsPerSuperstep: readonly number[];
  /** Calls replayed by a recovery; the log holds two records (started, done) per call. */
  readonly recoveredCalls: readonly number[];
  readonly unfinishedRuns: readonly number[];
}

export const FULL_SIZES: SweepSizes = {
  stateBytes: [200, 10_000, 100_000, 1_000_000],
  callsPerSuperstep: [1, 10, 100],
  recoveredCalls: [5, 50, 500, 5_000],
  unfinishedRuns: [1_000, 10_000],
};

export interface SweepFigures {
  readonly stateSize: Array<{ bytes: number; saveMs: number }>;
  readonly callsPerSuperstep: Array<{ calls: number; runMs: number; perCallUs: number }>;
  readonly recovery: Array<{ records: number; recoverMs: number; perRecordUs: number }>;
  /** `recoverEach`, streaming: peak heap above the start while it runs (garbage included); what stays after a collection (with --expose-gc). */
  readonly recoverEach: Array<{
    runs: number;
    seconds: number;
    perRunUs: number;
    peakHeapMb: number;
    retainedBytesPerRun: number;
  }>;
}

const sealer = Sealer.withKeys(KEY);

/** How the cost grows with state size, calls per superstep, log length and the number of unfinished runs. */
export async function sweep(store: () => Promise<CheckpointStore>, sizes: SweepSizes): Promise<SweepFigures> {
  return {
    stateSize: await stateSizes(await store(), sizes.stateBytes),
    callsPerSuperstep: await superstepCalls(await store(), sizes.callsPerSuperstep),
    recovery: await recoveries(await store(), sizes.recoveredCalls),
    recoverEach: await recoverEaches(store, sizes.unfinishedRuns),
  };
}

async function stateSizes(store: CheckpointStore, sizes: readonly number[]) {
  const out = [];
  for (const bytes of sizes) {
    const data = { blob: "x".repeat(bytes) };
    const { run } = await DurableRun.start({
      store,
      sealer,
      runId: `state-${bytes}`,
      name: "state",
      kind: "flow",
      identity: {},
      data,
    });
    const samples = await timed(bytes >= 1_000_000 ? 5 : 20, () => run.save("running", data));
    // Released, so its lease keeper stops: a keeper renewing after the store closed would open it again.
    await run.giveUp();
    out.push({ bytes, saveMs: round(latencyOf(samples).p50, 3) });
  }
  await store.close();
  return out;
}

async function superstepCalls(store: CheckpointStore, sizes: readonly number[]) {
  const out = [];
  for (const calls of sizes) {
    const flow = fanFlow(calls);
    const worker = runner(store);
    const samples = await timed(calls >= 100 ? 5 : 20, (i) =>
      worker.run(flow, { n: 0 }, { runId: `fan-${calls}-${i}` }),
    );
    const runMs = latencyOf(samples).p50;
    out.push({ calls, runMs: round(runMs, 3), perCallUs: round((runMs * 1000) / calls, 0) });
  }
  await store.close();
  return out;
}

/** A run cut off after its superstep's calls finished and before its save: recovery replays every call from the log. */
async function recoveries(store: CheckpointStore, sizes: readonly number[]) {
  const out = [];
  for (const calls of sizes) {
    const flow = fanFlow(calls);
    const times: number[] = [];
    for (let i = 0; i < (calls >= 500 ? 1 : 5); i++)
      times.push(await recoverOnce(store, flow, `recover-${calls}-timed-${i}`));
    const recoverMs = latencyOf(times).p50;
    out.push({
      records: calls * 2,
      recoverMs: round(recoverMs, 2),
      perRecordUs: round((recoverMs * 1000) / (calls * 2), 1),
    });
  }
  await store.close();
  return out;
}

async function recoverOnce(store: CheckpointStore, flow: Flow<{ n: number }>, runId: string): Promise<number> {
  await cutOff(runner(cutAtSave(store, 2)).run(flow, { n: 0 }, { runId }));
  const start = performance.now();
  await runner(store).recover(flow, runId);
  return performance.now() - start;
}

const one = new Flow("one", { state: z.object({ n: z.number() }) })
  .node("work", async (s, ctx) => ({ n: s.n + Number(await ctx.call("work", { i: s.n })) }))
  .end("work");

/** `recoverEach` over runs cut off after their one call, 8 at once: time, and the heap's peak above where it started. */
async function recoverEaches(store: () => Promise<CheckpointStore>, sizes: readonly number[]) {
  const out = [];
  for (const runs of sizes) {
    const own = await store();
    for (let i = 0; i < runs; i += 32) {
      await Promise.all(
        Array.from({ length: Math.min(32, runs - i) }, (_, j) =>
          cutOff(runner(cutAtSave(own, 2)).run(one, { n: 1 }, { runId: `u-${i + j}` })),
        ),
      );
    }
    collectGarbage();
    const base = process.memoryUsage().heapUsed;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 10);
    const start = performance.now();
    let recovered = 0;
    for await (const settled of runner(own).recoverEach(one)) {
      if (!settled.ok) throw new Error(`recoverEach failed run ${settled.item}: ${String(settled.error)}`);
      recovered += 1;
    }
    const seconds = (performance.now() - start) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    if (recovered !== runs) throw new Error(`recoverEach recovered ${recovered} of ${runs} runs`);
    // What stays once garbage is collected: nothing of the runs, since no result is held.
    collectGarbage();
    const retained = process.memoryUsage().heapUsed - base;
    out.push({
      runs,
      seconds: round(seconds, 2),
      perRunUs: round((seconds * 1e6) / runs, 0),
      peakHeapMb: round((peak - base) / 2 ** 20, 1),
      retainedBytesPerRun: round(retained / runs, 0),
    });
    await own.close();
  }
  return out;
}

async function cutOff(run: Promise<unknown>): Promise<void> {
  try {
    await run;
  } catch (error) {
    if (error instanceof StoreUnavailable) return;
    throw error;
  }
  throw new Error("the run was not cut off");
}

/** Collects garbage when node runs with --expose-gc (as `pnpm bench` does), so heap figures hold live objects only. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
