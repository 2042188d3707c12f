import {
  CheckpointConflict,
  type CheckpointStore,
  Executor,
  LeaseHeld,
  MemoryCheckpointStore,
  ToolRegistry,
  VersionNotServed,
} from "@durable/core";
import { readEnvelope, readLatest, Sealer } from "@durable/core/runner";
import { storeWith } from "@durable/test-utils/stores";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner, type NodeFn } from "../src/index.js";
import { KEY } from "./helpers.js";

// Versions, migrations and forks attacked: each test here failed when it was written.

const State = z.object({ n: z.number() });
type State = z.infer<typeof State>;

/** a → b, each calling `work` with the code's label: `version` undefined is code that names none. */
function twoSteps(label: string, version: number | undefined): Flow<State> {
  const flow = new Flow<State>("two", { state: State, ...(version === undefined ? {} : { version }) });
  const node =
    (name: string): NodeFn<State> =>
    async (state, ctx) => {
      await ctx.call("work", { line: `${label}:${name}:${state.n}` });
      return { n: state.n + 1 };
    };
  return flow.node("a", node("a")).node("b", node("b")).edge("a", "b").end("b");
}

function setUp(store: CheckpointStore = new MemoryCheckpointStore()) {
  const effects: string[] = [];
  const registry = new ToolRegistry().tool("work", (args: { line: string }) => void effects.push(args.line));
  const runner = new FlowRunner(new Executor(registry), { checkpoints: store, lease: { owner: "w", ms: 60_000 } });
  return { store, effects, runner, registry };
}

describe("a fork goes on with the code it is forked with", () => {
  it("a fork made with code that names no version is not driven by the original's version-1 code", async () => {
    const { store, effects, runner } = setUp();
    const v1 = twoSteps("v1", 1);
    expect(await runner.run(v1, { n: 0 }, { runId: "orig" })).toMatchObject({ status: "done" });
    // The same graph (same digest), new node code, and no version named: the code the fork should go on with.
    const unversioned = twoSteps("new", undefined);
    // Step 0: the one row that still holds the version (see the round-over test below).
    await runner.fork(unversioned, "orig", { fromStep: 0, runId: "fork", by: "ops" });
    const sealed = readEnvelope("fork", (await readLatest(store, Sealer.unsigned(), "fork")).data).version;
    // The fork's version is the forking code's (none), as FlowRunner.fork documents: "its version the flow's".
    expect(sealed).toBeUndefined();
    // So the v1 code must refuse it…
    await expect(runner.recover(v1, "fork")).rejects.toBeInstanceOf(VersionNotServed);
    expect(effects.filter((line) => line.startsWith("v1")).length).toBe(2);
  });
});

describe("a run keeps its version from round to round", () => {
  it("a version-1 run past its first round is still a version-1 run: its code goes on with it, code of no version does not", async () => {
    const { store, effects, runner } = setUp();
    // a → b, b sleeps an hour: the run is asleep in its second round (step 1 on).
    const sleepy = (label: string, version: number | undefined) =>
      new Flow<State>("sleepy", { state: State, ...(version === undefined ? {} : { version }) })
        .node("a", async (state, ctx) => {
          await ctx.call("work", { line: `${label}:a` });
          return { n: state.n + 1 };
        })
        .node("b", async (state, ctx) => {
          await ctx.sleep(3_600_000);
          await ctx.call("work", { line: `${label}:b` });
          return { n: state.n + 1 };
        })
        .edge("a", "b")
        .end("b");
    expect(await runner.run(sleepy("v1", 1), { n: 0 }, { runId: "r" })).toMatchObject({ status: "asleep" });
    const latest = await readLatest(store, Sealer.unsigned(), "r");
    expect(latest.step).toBeGreaterThan(0);
    expect(readEnvelope("r", latest.data).version).toBe(1);
    // Its own code goes on with it; code that names no version (same graph) refuses it.
    expect(await runner.recover(sleepy("v1", 1), "r")).toMatchObject({ status: "asleep" });
    await expect(runner.recover(sleepy("none", undefined), "r")).rejects.toBeInstanceOf(VersionNotServed);
    expect(effects).toEqual(["v1:a"]);
  });
});

describe("a migration never takes a run from a live drive", () => {
  it("a migration that read the sleep's lease before a worker woke the run is refused (LeaseHeld), not a take-over", async () => {
    const base = new MemoryCheckpointStore();
    const effects: string[] = [];
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const registry = new ToolRegistry().tool(
      "work",
      async (args: { line: string }) => {
        started = true;
        effects.push(args.line);
        await blocked;
      },
      { idempotent: true },
    );
    const sleeper = (version: number) =>
      new Flow<State>("sleeper", { state: State, version })
        .node("a", async (state, ctx) => {
          await ctx.sleep(20);
          await ctx.call("work", { line: `v${version}:a` });
          return { n: state.n + 1 };
        })
        .end("a");
    const worker = new FlowRunner(new Executor(registry), {
      checkpoints: base,
      checkpointKey: KEY,
      lease: { owner: "w", ms: 60_000 },
    });
    expect(await worker.run(sleeper(1), { n: 0 }, { runId: "r" })).toMatchObject({ status: "asleep" });
    await new Promise((resolve) => setTimeout(resolve, 40));
    let driving: Promise<unknown> | undefined;
    // The operator's store: right after it read the run asleep, a worker wakes it and goes into its tool.
    const racing = storeWith(base, {
      latest: async (runId) => {
        const row = await base.latest(runId);
        if (driving === undefined) {
          driving = worker.recover(sleeper(1), "r").catch((error: unknown) => error);
          await until(() => started);
        }
        return row;
      },
    });
    const operator = new FlowRunner(new Executor(registry), { checkpoints: racing, checkpointKey: KEY });
    const migrated = operator.migrate(sleeper(2), "r", { by: "ops" });
    // It claims the step it read asleep, which the worker's claim took: refused, the live drive not fenced.
    await expect(migrated).rejects.toSatisfy(
      (error) => error instanceof LeaseHeld || error instanceof CheckpointConflict,
    );
    release();
    expect(await driving).toMatchObject({ status: "done" });
    expect(effects).toEqual(["v1:a"]);
  });
});
