import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointStore,
  CheckpointStoreCorrupt,
  InvalidInput,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  forkRun,
  sendEvent,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import type { MemoryData } from "@durable/core/internal";
import { openHistory, readEnvelope, Sealer } from "@durable/core/runner";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { DyingStore, KEY, runnerOn, settle, storeWith } from "./helpers.js";

// Forks (`runner.fork`, core's `forkRun`): a new run whose history up to a step is the original's, going on from
// there with a change. The story on a SQLite file is in apps/durability/test/fork.test.ts.

const State = z.object({ note: z.string(), count: z.number().int() });
type State = z.infer<typeof State>;
const START: State = { note: "first", count: 0 };

/** Five supersteps, one node each, each calling `effect` once with a line that says which code wrote it. */
function fiveSteps(version: string) {
  const node = (n: number) => async (state: State, ctx: { call<T>(tool: string, args: unknown): Promise<T> }) => {
    await ctx.call("effect", { line: `${version} s${n} ${state.note}` });
    return { count: state.count + 1 };
  };
  return new Flow("five", { state: State })
    .node("s1", node(1))
    .node("s2", node(2))
    .node("s3", node(3))
    .node("s4", node(4))
    .node("s5", node(5))
    .edge("s1", "s2")
    .edge("s2", "s3")
    .edge("s3", "s4")
    .edge("s4", "s5")
    .end("s5");
}

/** A registry whose tools append to `effects`, a place outside the store: `a` and `b` too, for a round of two. */
function effecting() {
  const effects: string[] = [];
  const registry = new ToolRegistry()
    .tool("effect", (args: { line: string }) => void effects.push(args.line))
    .tool("a", () => void effects.push("a"))
    .tool("b", () => void effects.push("b"));
  return { effects, registry };
}

/** Every row and record of a run as the store gives them back. */
async function stored(store: CheckpointStore, runId: string) {
  return { rows: (await store.history?.(runId)) ?? [], calls: await store.calls(runId) };
}

const sealer = Sealer.withKeys(KEY);
const operator = (store: CheckpointStore) => ({ checkpoints: store, checkpointKey: KEY, by: "dev@example.com" });

/** The five-step run, done, on a memory store whose rows the test holds. */
async function doneRun() {
  const data: MemoryData = new Map();
  const store = new MemoryCheckpointStore({ data });
  const { effects, registry } = effecting();
  const runner = runnerOn(store, registry);
  expect(await runner.run(fiveSteps("v1"), START, { runId: "orig" })).toMatchObject({ status: "done", step: 5 });
  return { data, store, effects, runner, before: await stored(store, "orig") };
}

describe("a fork of a five-step run from step 2, with a changed state and changed code", () => {
  it("replays steps 0–2, runs steps 3–5 on the new code, ends done with the change, and leaves the original as it was", async () => {
    const { store, effects, runner, before } = await doneRun();
    const v2 = fiveSteps("v2");
    const handle = await runner.fork(v2, "orig", {
      fromStep: 2,
      runId: "fork",
      state: (state) => ({ ...state, note: "changed" }),
      by: "dev@example.com",
      reason: "try another note",
    });
    expect(handle.runId).toBe("fork");
    expect(await handle.status()).toMatchObject({ status: "running", step: 3 });
    expect(await runner.recover(v2, "fork")).toMatchObject({
      status: "done",
      step: 7,
      state: { note: "changed", count: 5 },
    });
    // Supersteps 1 and 2 are the original's: no tool of theirs ran again.
    expect(effects).toEqual([
      ...["v1 s1 first", "v1 s2 first", "v1 s3 first", "v1 s4 first", "v1 s5 first"],
      ...["v2 s3 changed", "v2 s4 changed", "v2 s5 changed"],
    ]);
    expect(await stored(store, "orig")).toEqual(before);

    const rows = openHistory(sealer, "fork", (await stored(store, "fork")).rows);
    const original = openHistory(sealer, "orig", before.rows);
    expect(rows.slice(0, 3).map((row) => row.data)).toEqual(original.slice(0, 3).map((row) => row.data));
    const claim = rows[3]!;
    expect(claim).toMatchObject({ runId: "fork", segment: 1, status: "running", calls: [4, 0] });
    expect(readEnvelope("fork", claim.data).forkedFrom).toMatchObject({ runId: "orig", step: 2 });
    expect(claim.data).toMatchObject({
      operator: { action: "fork", by: "dev@example.com", reason: "try another note" },
    });
    // The fork says where it came from to its end, and tells no parent.
    expect(readEnvelope("fork", rows.at(-1)!.data).forkedFrom).toMatchObject({ runId: "orig", step: 2 });
    const calls = (await stored(store, "fork")).calls;
    expect(calls.slice(0, 4).map((call) => [call.runId, call.segment, call.seq])).toEqual([
      ["fork", 0, 0],
      ["fork", 0, 1],
      ["fork", 0, 2],
      ["fork", 0, 3],
    ]);
    // The worker that claimed the fork wrote the rest: supersteps 3–5, under segment 2.
    expect(calls.slice(4).map((call) => call.segment)).toEqual([2, 2, 2, 2, 2, 2]);
  });

  it("is taken by a worker serving the flow, as a run started for the fleet", async () => {
    const { runner, effects } = await doneRun();
    const v2 = fiveSteps("v2");
    const handle = await runner.fork(v2, "orig", { fromStep: 3, by: "dev@example.com" });
    const worker = startWorker({ serve: [runner.served(v2)], pollMs: 20, maxPollMs: 20, stopOnSignals: false });
    try {
      expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ note: "first", count: 5 });
    } finally {
      await worker.stop();
    }
    expect(effects.slice(5)).toEqual(["v2 s4 first", "v2 s5 first"]);
  });

  it("is a run of its own: listed by its name, deleted apart from the original and the reverse", async () => {
    const { store, runner, before } = await doneRun();
    await runner.fork(fiveSteps("v2"), "orig", { fromStep: 2, runId: "fork", by: "dev@example.com" });
    const listed = await store.listRuns({ name: "five" });
    expect(listed.runs.map((run) => run.runId).sort()).toEqual(["fork", "orig"]);
    const fork = await stored(store, "fork");
    await store.delete("orig");
    expect(await stored(store, "fork")).toEqual(fork);
    await store.delete("fork");
    expect(await store.history("fork")).toEqual([]);
    expect(before.rows).toHaveLength(6);
  });

  it.each([
    ["the original's row of the claim's step in place of the fork's", 3, "swap"],
    ["the original's row of the fork step in place of the fork's", 2, "swap"],
    ["one byte of the claim's sealed row altered", 3, "byte"],
  ] as const)("is CheckpointStoreCorrupt on recover with %s", async (_, step, how) => {
    const { data, runner } = await doneRun();
    const v2 = fiveSteps("v2");
    await runner.fork(v2, "orig", { fromStep: 2, runId: "fork", by: "dev@example.com" });
    const rows = data.get("fork")!.checkpoints;
    const row = rows[step]!;
    const sealed =
      how === "swap" ? data.get("orig")!.checkpoints[step]!.sealed : row.sealed.replace('"fork"', '"forK"');
    expect(sealed).not.toBe(row.sealed);
    rows[step] = { ...row, sealed };
    await expect(runner.recover(v2, "fork")).rejects.toBeInstanceOf(CheckpointStoreCorrupt);
  });

  it("refuses an ended row, a step past the latest or not whole, a taken id and a state the schema refuses, writing nothing", async () => {
    const { store, runner, before } = await doneRun();
    const v2 = fiveSteps("v2");
    const fork = (fromStep: number, more: object = {}) =>
      runner.fork(v2, "orig", { fromStep, runId: "f", by: "dev@example.com", ...more });
    await expect(fork(5)).rejects.toThrow(/ended it \(done\): fork from an earlier step/);
    await expect(fork(5)).rejects.toBeInstanceOf(InvalidInput);
    await expect(fork(6)).rejects.toThrow(/past run orig's latest step \(5\)/);
    await expect(fork(1.5)).rejects.toBeInstanceOf(InvalidInput);
    await expect(fork(2, { state: { note: 3, count: 0 } })).rejects.toBeInstanceOf(InvalidInput);
    await expect(store.latest("f")).rejects.toBeInstanceOf(CheckpointNotFound);
    await expect(runner.fork(v2, "orig", { fromStep: 2, runId: "orig", by: "x" })).rejects.toBeInstanceOf(
      CheckpointConflict,
    );
    await runner.fork(v2, "orig", { fromStep: 2, runId: "f", by: "x" });
    const made = await stored(store, "f");
    await expect(fork(1)).rejects.toBeInstanceOf(CheckpointConflict);
    expect(await stored(store, "f")).toEqual(made);
    expect(await stored(store, "orig")).toEqual(before);
    const other = new Flow("other", { state: State }).node("s1", () => ({})).end("s1");
    await expect(runner.fork(other, "orig", { fromStep: 2, by: "x" })).rejects.toThrow(/not of flow "other"/);
    const bare = { ...operator(store), checkpoints: withoutHistory(store) };
    await expect(forkRun("orig", { ...bare, fromStep: 2 })).rejects.toThrow(/no inspection capability/);
  });
});

describe("a fork the store fails halfway", () => {
  it("leaves nothing: what landed is deleted, and the original is as it was", async () => {
    const { store, before } = await doneRun();
    let records = 0;
    const failing = storeWith(store, {
      async recordCall(runId, segment, seq, sealed) {
        if (++records === 3) throw new StoreUnavailable("the database went away");
        return store.recordCall(runId, segment, seq, sealed);
      },
    });
    const fork = forkRun("orig", { ...operator(failing), fromStep: 2, runId: "half" });
    await expect(fork).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(store.latest("half")).rejects.toBeInstanceOf(CheckpointNotFound);
    expect(await store.calls("half")).toEqual([]);
    expect(await stored(store, "orig")).toEqual(before);
  });
});

/** `store` without its inspection capability. */
function withoutHistory(store: MemoryCheckpointStore): CheckpointStore {
  return Object.assign(Object.create(store) as object, { history: undefined, listRuns: undefined }) as CheckpointStore;
}

describe("a fork of a run killed between two calls of a superstep, from its latest step", () => {
  it("replays the finished call, and leaves the one in doubt in doubt: its recovery fails closed", async () => {
    const store = new MemoryCheckpointStore();
    const { effects, registry } = effecting();
    const flow = new Flow("two-calls", { state: State })
      .node("first", async (state, ctx) => {
        await ctx.call("effect", { line: "first" });
        return { count: state.count + 1 };
      })
      .node("both", async (state, ctx) => {
        await ctx.call("a", {});
        await ctx.call("b", {});
        return { count: state.count + 1 };
      })
      .edge("first", "both")
      .end("both");
    const dying = new DyingStore(store, { op: "recordCall", kind: "started", tool: "b", when: "after" });
    void runnerOn(dying, registry).run(flow, START, { runId: "killed" });
    await settle();
    expect(dying.dead).toBe(true);
    expect(effects).toEqual(["first", "a"]);
    const latest = await store.latest("killed");
    const runner = runnerOn(store, registry);
    await runner.fork(flow, "killed", { fromStep: latest.step, runId: "fork", by: "dev@example.com" });
    const recovered = runner.recover(flow, "fork");
    await expect(recovered).rejects.toBeInstanceOf(RecoveryNeedsDecision);
    const error = (await recovered.catch((e: unknown) => e)) as RecoveryNeedsDecision;
    expect(error.calls.map((call) => call.tool)).toEqual(["b"]);
    expect(effects).toEqual(["first", "a"]);
    expect(await runner.recover(flow, "fork", { rerunInDoubt: true })).toMatchObject({ status: "done" });
    // `a` replayed; `b`, in doubt, ran again only once the fork was told to rerun it.
    expect(effects).toEqual(["first", "a", "b"]);
  });
});

describe("a fork of a run that took events", () => {
  it("copies the events its history took, so its waits replay; the ones after them it waits for anew", async () => {
    const store = new MemoryCheckpointStore();
    const { effects, registry } = effecting();
    const waiting = (node: string) => async (state: State, ctx: { waitForEvent(name: string): Promise<unknown> }) => {
      const got = (await ctx.waitForEvent("go")) as { payload: string };
      return { note: `${state.note} ${node}:${got.payload}` };
    };
    const flow = new Flow("gated", { state: State })
      .node("one", waiting("one"))
      .node("two", waiting("two"))
      .edge("one", "two")
      .end("two");
    const runner = runnerOn(store, registry);
    await runner.start(flow, START, { runId: "gated" });
    for (const payload of ["x", "y"]) await sendEvent({ ...send(store), runId: "gated", name: "go", payload });
    expect(await runner.recover(flow, "gated")).toMatchObject({ status: "done", state: { note: "first one:x two:y" } });
    // Step 2: superstep one took event x.
    await runner.fork(flow, "gated", { fromStep: 2, runId: "fork", by: "dev@example.com" });
    expect((await store.inbox("fork")).map((event) => event.seq)).toEqual([0]);
    expect(await runner.recover(flow, "fork")).toMatchObject({ status: "asleep" });
    await sendEvent({ ...send(store), runId: "fork", name: "go", payload: "z" });
    expect(await runner.recover(flow, "fork")).toMatchObject({ status: "done", state: { note: "first one:x two:z" } });
    expect(effects).toEqual([]);
  });
});

describe("a fork of a parent run", () => {
  it("shares the children its history started: cancelling the fork cancels none of the original's", async () => {
    const store = new MemoryCheckpointStore();
    const { registry } = effecting();
    const child = new Flow("child", { state: State })
      .node("wait", async (_state, ctx) => void (await ctx.waitForEvent("go")))
      .end("wait");
    const parent = new Flow("parent", { state: State })
      .node("start", async (_state, ctx) => void (await ctx.startChild(child, START, { runId: "kid" })))
      .end("start");
    const runner = runnerOn(store, registry);
    expect(await runner.run(parent, START, { runId: "orig" })).toMatchObject({ status: "asleep" });
    const { step } = await store.latest("orig");
    const fork = await runner.fork(parent, "orig", { fromStep: step, runId: "fork", by: "dev@example.com" });
    await fork.cancel("not this one");
    expect((await store.latest("fork")).status).toBe("failed");
    expect((await store.latest("kid")).status).toBe("running");
    await runner.cancel(parent, "orig", "this one");
    expect((await store.latest("kid")).status).toBe("failed");
  });
});

const send = (store: CheckpointStore) => ({ checkpoints: store, checkpointKey: KEY });
