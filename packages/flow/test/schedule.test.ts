import type { MemoryData } from "@durable/core/internal";
import {
  Executor,
  InvalidInput,
  MemoryCheckpointStore,
  type RunWorker,
  type ScheduleOptions,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { forever } from "@durable/test-utils/stores";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY } from "./helpers.js";
import { Cuttable } from "./workers.js";

// Schedules with flows: workers of one process on one memory store, each with its own runner and its own schedule
// of the same name, as a fleet's workers would be. Across processes: apps/durability, test/schedule.test.ts.

const EVERY = 50;
/** Once a year, on January 1st (UTC): a test never sees two of its ticks, and its latest has always come. */
const YEARLY = "0 0 1 1 *";

/** One `beat` call per run, with the run's tick: what each worker's tool really did. */
interface Beat {
  readonly tick: string;
  readonly worker: string;
}

const beatFlow = new Flow("beat", { state: z.object({ tick: z.string() }) })
  .node("beat", async (state, ctx) => {
    await ctx.call("beat", { tick: state.tick });
  })
  .end("beat");

/** A worker's runner on `store`, whose `beat` tool records into `beats` (or hangs, as in a worker that died inside it). */
function runnerOf(store: MemoryCheckpointStore, worker: string, beats: Beat[], hang = false): FlowRunner {
  const registry = new ToolRegistry().tool(
    "beat",
    async (args: { tick: string }) => {
      beats.push({ tick: args.tick, worker });
      if (hang) await forever();
    },
    { idempotent: true },
  );
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    lease: { owner: worker, ms: 200 },
  });
}

const tickInput = (tick: Date) => ({ tick: tick.toISOString() });

const workers: RunWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});

/** A worker serving only `schedule`s of the beat flow. */
function serving(runner: FlowRunner, options: Omit<ScheduleOptions, "start"> & { start?: ScheduleOptions["start"] }) {
  const schedule = runner.schedule(beatFlow, { start: tickInput, ...options });
  const stuck: string[] = [];
  const w = startWorker({
    schedules: [schedule],
    pollMs: 20,
    maxPollMs: 100,
    stopDeadlineMs: 0,
    stopOnSignals: false,
    onStuck: (runId, error) => stuck.push(`${runId}: ${(error as Error).name}`),
  });
  workers.push(w);
  return { worker: w, stuck };
}

describe("schedules", () => {
  it("two workers of one schedule start each tick's run once: no tick missed, none twice, each run done", async () => {
    const data: MemoryData = new Map();
    const store = new MemoryCheckpointStore({ data });
    const beats: Beat[] = [];
    const a = serving(runnerOf(new MemoryCheckpointStore({ data }), "a", beats), { name: "beat", every: EVERY });
    const b = serving(runnerOf(new MemoryCheckpointStore({ data }), "b", beats), { name: "beat", every: EVERY });
    await until(() => beats.length >= 20);
    await Promise.all([a.worker.stop(), b.worker.stop()]);

    const ticks = beats.map((beat) => Date.parse(beat.tick)).sort((x, y) => x - y);
    expect(new Set(ticks).size).toBe(ticks.length);
    // One run per tick of every tick from the first to the last: each `EVERY` ms after the one before.
    for (const [index, tick] of ticks.entries()) if (index > 0) expect(tick - (ticks[index - 1] as number)).toBe(EVERY);
    expect(ticks.every((tick) => tick % EVERY === 0)).toBe(true);
    // Both took part, and together they started each tick's run once.
    const [sa, sb] = [a.worker.status().schedules[0], b.worker.status().schedules[0]];
    expect(sa?.started).toBeGreaterThan(0);
    expect(sb?.started).toBeGreaterThan(0);
    expect((sa?.started ?? 0) + (sb?.started ?? 0)).toBe(ticks.length);
    expect(sa?.startedElsewhere).toBeGreaterThan(0);
    // The store holds those runs, under ids derived from the ticks, each done.
    const { runs } = await store.listRuns({ runIdPrefix: "beat@", limit: 500 });
    expect(runs.map((run) => run.runId).sort()).toEqual(ticks.map((tick) => `beat@${new Date(tick).toISOString()}`));
    expect(runs.every((run) => run.status === "done")).toBe(true);
    expect([...a.stuck, ...b.stuck]).toEqual([]);
  });

  it('catchUp "once" starts the latest tick that came before the worker did, once in the fleet; "skip" waits for the next', async () => {
    const data: MemoryData = new Map();
    const beats: Beat[] = [];
    const latest = new Date(Date.UTC(new Date().getUTCFullYear(), 0, 1)).toISOString();
    const skip = serving(runnerOf(new MemoryCheckpointStore({ data }), "s", beats), { name: "new-year", cron: YEARLY });
    const once = serving(runnerOf(new MemoryCheckpointStore({ data }), "a", beats), {
      name: "new-year",
      cron: YEARLY,
      catchUp: "once",
    });
    await until(() => beats.length === 1);
    expect(beats).toEqual([{ tick: latest, worker: "a" }]);
    // Another worker that comes later finds that tick's run started: it starts none.
    const again = serving(runnerOf(new MemoryCheckpointStore({ data }), "b", beats), {
      name: "new-year",
      cron: YEARLY,
      catchUp: "once",
    });
    await until(() => again.worker.status().schedules[0]?.startedElsewhere === 1);
    await sleep(100);
    expect(beats).toHaveLength(1);
    const next = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1));
    expect(skip.worker.status().schedules).toEqual([{ name: "new-year", next, started: 0, startedElsewhere: 0 }]);
    expect(once.worker.status().schedules).toEqual([{ name: "new-year", next, started: 1, startedElsewhere: 0 }]);
  });

  it("a tick's run whose worker died is recovered by a worker that serves only the schedule", async () => {
    const data: MemoryData = new Map();
    const beats: Beat[] = [];
    const dying = new Cuttable(data);
    serving(runnerOf(dying, "a", beats, true), { name: "new-year", cron: YEARLY, catchUp: "once" });
    await until(() => beats.length === 1);
    // Worker a dies inside the tool: it renews and writes nothing more, and its lease runs out.
    dying.cut = true;
    const b = serving(runnerOf(new MemoryCheckpointStore({ data }), "b", beats), {
      name: "new-year",
      cron: YEARLY,
      catchUp: "once",
    });
    const store = new MemoryCheckpointStore({ data });
    const runId = `new-year@${new Date(Date.UTC(new Date().getUTCFullYear(), 0, 1)).toISOString()}`;
    await until(async () => (await store.latest(runId)).status === "done");
    // Its call was in doubt; the tool is idempotent, so b ran it again.
    expect(beats.map((beat) => beat.worker)).toEqual(["a", "b"]);
    expect(b.worker.status()).toMatchObject({ finished: 1, schedules: [{ started: 0, startedElsewhere: 1 }] });
  });

  it("a tick whose input is refused, or whose start throws, is reported through onStuck and not started; the next ticks are", async () => {
    const data: MemoryData = new Map();
    const store = new MemoryCheckpointStore({ data });
    let calls = 0;
    const broken = serving(runnerOf(new MemoryCheckpointStore({ data }), "a", []), {
      name: "broken",
      every: EVERY,
      // Every other tick: a start that throws, then an input the flow's schema refuses.
      start: () => {
        calls += 1;
        if (calls % 2 === 1) throw new Error("no input today");
        return { tick: 5 };
      },
    });
    await until(() => broken.stuck.length >= 4);
    await broken.worker.stop();
    // Each tick is reported once its own reads settle, so two ticks' reports may come in either order: by tick, once
    // every tick taken has been reported, they alternate as the start's calls did.
    const byTick = [...broken.stuck].sort().map((line) => line.replace(/^broken@\S+: /, ""));
    expect(byTick).toEqual(byTick.map((_, index) => (index % 2 === 0 ? "Error" : "InvalidInput")));
    expect(byTick.length).toBeGreaterThanOrEqual(4);
    expect(new Set(broken.stuck.map((line) => line.split(": ")[0])).size).toBe(broken.stuck.length);
    expect((await store.listRuns({ runIdPrefix: "broken@" })).runs).toEqual([]);
  });

  it("a schedule's options are checked when it is made, and the worker's with them", () => {
    const runner = runnerOf(new MemoryCheckpointStore(), "a", []);
    expect(() => runner.schedule(beatFlow, { name: "x", cron: "*/5 * * *", start: tickInput })).toThrow(InvalidInput);
    const schedule = runner.schedule(beatFlow, { name: "x", every: 1_000, start: tickInput });
    expect(() => startWorker({ schedules: [schedule, schedule], stopOnSignals: false })).toThrow(
      'startWorker: two schedules are named "x"; a name makes its runs\' ids, so each must be its own.',
    );
    expect(() => startWorker({ schedules: [{ name: "x" }] as never, stopOnSignals: false })).toThrow(
      "startWorker: schedules must list schedules, each runner.schedule(flow, …).",
    );
    expect(() => startWorker({ stopOnSignals: false })).toThrow(
      "startWorker: give it something to serve: serve (runner.served(flow), servedToolLoops(…)) or schedules (runner.schedule(flow, …)).",
    );
  });
});
