import {
  CheckpointConflict,
  Executor,
  InvalidInput,
  MemoryCheckpointStore,
  runsByVersion,
  startWorker,
  ToolRegistry,
  VersionNotServed,
} from "@durable/core";
import { operatorMark, readEnvelope, readLatest, Sealer } from "@durable/core/runner";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowError, FlowRunner, type NodeFn, workflow } from "../src/index.js";

// Versions: each run records the version of the code that started it; only code of that version goes on with it, a
// worker serves several versions side by side, and an operator moves a run to another version. The verdict is what
// the tools did (each appends to `effects`), not what the store says.

const State = z.object({ n: z.number(), note: z.string().optional() });
type State = z.infer<typeof State>;

/** Version 1: a → b. Version 2 adds node c between them. Both call `work` with the node's name and version. */
function orders(version: number | undefined, added = false): Flow<State> {
  const flow = new Flow<State>("orders", { state: State, ...(version === undefined ? {} : { version }) });
  const node =
    (name: string): NodeFn<State> =>
    async (state, ctx) => {
      await ctx.call("work", { node: name, version: version ?? "none", n: state.n });
      return { n: state.n + 1 };
    };
  flow.node("a", node("a")).node("b", node("b"));
  if (added) flow.node("c", node("c")).edge("a", "c").edge("c", "b");
  else flow.edge("a", "b");
  return flow.end("b");
}

function setUp() {
  const store = new MemoryCheckpointStore();
  const effects: string[] = [];
  const registry = new ToolRegistry().tool("work", async (args: { node: string; version: unknown; n: number }) => {
    effects.push(`${args.version}:${args.node}`);
    return args.n;
  });
  const runner = new FlowRunner(new Executor(registry), { checkpoints: store, lease: { owner: "w", ms: 60_000 } });
  return { store, effects, runner };
}

/** A flow whose node `ask` waits for an approval, so its runs pause there; `first`: a node before it, so they pause in their second round. */
function asks(version: number, first = false): Flow<State> {
  const flow = new Flow<State>("asks", { state: State, version });
  const ask: NodeFn<State> = async (state, ctx) => {
    await ctx.call("approve_me", {});
    return { n: state.n + 1 };
  };
  if (!first) return flow.node("ask", ask).end("ask");
  return flow
    .node("a", async (state) => ({ n: state.n + 1 }))
    .node("ask", ask)
    .edge("a", "ask")
    .end("ask");
}

/** A store and a runner of `asks`: its tool `approve_me` waits for an approval. */
function setUpAsks() {
  const { store } = setUp();
  const registry = new ToolRegistry().tool("approve_me", async () => "ok", { approval: true });
  return { store, paused: new FlowRunner(new Executor(registry), { checkpoints: store }) };
}

async function versionOf(store: MemoryCheckpointStore, runId: string): Promise<unknown> {
  return readEnvelope(runId, (await readLatest(store, Sealer.unsigned(), runId)).data).version;
}

describe("versions", () => {
  it("seals the version a run starts on, and code of another version refuses it before writing anything", async () => {
    const { store, effects, runner } = setUp();
    const v1 = orders(1);
    const v2 = orders(2, true);
    await runner.start(v1, { n: 0 }, { runId: "r1" });
    expect(await versionOf(store, "r1")).toBe(1);
    const before = await store.latest("r1");
    const refused = await runner.recover(v2, "r1").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(VersionNotServed);
    expect(refused).toMatchObject({ code: "VERSION_NOT_SERVED", version: 1, served: 2, runId: "r1" });
    expect((refused as Error).message).toContain("migrateRun");
    expect(await store.latest("r1")).toEqual(before);
    expect(effects).toEqual([]);
    // Unversioned code does not take a versioned run either, nor versioned code an unversioned one.
    await expect(runner.recover(orders(undefined), "r1")).rejects.toBeInstanceOf(VersionNotServed);
    await runner.start(orders(undefined), { n: 0 }, { runId: "r0" });
    await expect(runner.recover(v1, "r0")).rejects.toBeInstanceOf(VersionNotServed);
    expect(await runner.recover(v1, "r1")).toMatchObject({ status: "done", state: { n: 2 } });
    expect(effects).toEqual(["1:a", "1:b"]);
  });

  it("a worker serving two versions side by side finishes each run on its own version's code", async () => {
    const { store, effects, runner } = setUp();
    const v1 = orders(1);
    const v2 = orders(2, true);
    for (let i = 0; i < 4; i += 1) await runner.start(v1, { n: 0 }, { runId: `old-${i}` });
    for (let i = 0; i < 4; i += 1) await runner.start(v2, { n: 0 }, { runId: `new-${i}` });
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner.served(v2), runner.served(v1)],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (runId) => void stuck.push(runId),
    });
    const ids = [0, 1, 2, 3].flatMap((i) => [`old-${i}`, `new-${i}`]);
    await until(async () => (await Promise.all(ids.map((id) => store.latest(id)))).every((r) => r.status === "done"));
    await w.stop();
    expect(stuck).toEqual([]);
    expect(effects.filter((e) => e.startsWith("1:")).sort()).toEqual([..."aaaabbbb"].map((n) => `1:${n}`));
    expect(effects.filter((e) => e.startsWith("2:")).sort()).toEqual([..."aaaabbbbcccc"].map((n) => `2:${n}`));
    expect(effects).toHaveLength(20);
  });

  it("a worker of one version leaves the other version's runs alone, without reporting them stuck", async () => {
    const { store, effects, runner } = setUp();
    await runner.start(orders(1), { n: 0 }, { runId: "old" });
    await runner.start(orders(2, true), { n: 0 }, { runId: "new" });
    const stuck: string[] = [];
    const w = startWorker({
      serve: [runner.served(orders(2, true))],
      pollMs: 10,
      maxPollMs: 20,
      stopOnSignals: false,
      onStuck: (runId) => void stuck.push(runId),
    });
    await until(async () => (await store.latest("new")).status === "done");
    await until(() => w.status().otherVersion === 1);
    expect((await store.latest("old")).step).toBe(0);
    expect(await runsByVersion("orders", { checkpoints: store })).toEqual([{ version: 1, runs: 1 }]);
    // Once a worker of its version finished it, the run is no longer counted (nor kept) as left.
    expect(await runner.recover(orders(1), "old")).toMatchObject({ status: "done" });
    await until(() => w.status().otherVersion === 0);
    await w.stop();
    expect(stuck).toEqual([]);
    expect(effects.filter((e) => e.startsWith("1:"))).toEqual(["1:a", "1:b"]);
    expect(await runsByVersion("orders", { checkpoints: store })).toEqual([]);
  });

  it("migrates a run to another version as a recorded decision, checked by that version's schema and graph", async () => {
    const { store, effects, runner } = setUp();
    const v1 = orders(1);
    const v2 = orders(2, true);
    await runner.start(v1, { n: 5 }, { runId: "m" });
    // A state the new schema refuses, or code without the node the run goes on with, writes nothing.
    await expect(runner.migrate(v2, "m", { by: "ops", state: { n: "five" } as never })).rejects.toBeInstanceOf(
      InvalidInput,
    );
    const elsewhere = new Flow<State>("orders", { state: State, version: 3 }).node("z", async () => ({})).end("z");
    await expect(runner.migrate(elsewhere, "m", { by: "ops" })).rejects.toThrow(/node "a"/);
    await expect(runner.migrate(orders(undefined), "m", { by: "ops" })).rejects.toBeInstanceOf(InvalidInput);
    await expect(runner.migrate(v2, "m", { by: "ops", expectStep: 3 })).rejects.toBeInstanceOf(CheckpointConflict);
    expect((await store.latest("m")).step).toBe(0);

    const step = await runner.migrate(v2, "m", { by: "ops", reason: "v1 retired", state: { n: 7, note: "moved" } });
    const latest = await readLatest(store, Sealer.unsigned(), "m");
    expect(step).toBe(latest.step);
    expect(operatorMark(latest.data)).toMatchObject({ action: "migrate", by: "ops", reason: "v1 retired" });
    expect(await versionOf(store, "m")).toBe(2);
    await expect(runner.recover(v1, "m")).rejects.toBeInstanceOf(VersionNotServed);
    expect(await runner.recover(v2, "m")).toMatchObject({ status: "done", state: { n: 10, note: "moved" } });
    expect(effects).toEqual(["2:a", "2:c", "2:b"]);
    // An ended run is not moved.
    await expect(runner.migrate(v1, "m", { by: "ops" })).rejects.toBeInstanceOf(CheckpointConflict);
  });

  it("a migrated paused run stays paused, and a run of another name is not migrated", async () => {
    const { store, paused } = setUpAsks();
    expect(await paused.run(asks(1), { n: 0 }, { runId: "p" })).toMatchObject({ status: "paused" });
    await paused.migrate(asks(2), "p", { by: "ops" });
    expect((await store.latest("p")).status).toBe("paused");
    await expect(paused.migrate(orders(2, true), "p", { by: "ops" })).rejects.toBeInstanceOf(CheckpointConflict);
    const resumed = await paused.resume(asks(2), "p", { [(await pendingOf(store, "p"))[0] as string]: true });
    expect(resumed).toMatchObject({ status: "done", state: { n: 1 } });
  });

  it("a handle given the new version's flow reads the result of a run that finished on the old one", async () => {
    const { runner } = setUp();
    await runner.run(orders(1), { n: 0 }, { runId: "h" });
    expect(await runner.handle(orders(2, true), "h").result({ timeoutMs: 1_000 })).toEqual({ n: 2 });
  });

  it("cancels a run of the old version through the new version's runner", async () => {
    const { store, effects, runner } = setUp();
    await runner.start(orders(1), { n: 0 }, { runId: "c" });
    expect(await runner.cancel(orders(2, true), "c", "no longer wanted")).toBe(1);
    expect((await store.latest("c")).status).toBe("failed");
    expect(effects).toEqual([]);
  });

  it("a fork goes on with the version it is forked with, checked by its graph", async () => {
    const { store, effects, runner } = setUp();
    await runner.run(orders(1), { n: 0 }, { runId: "f" });
    const elsewhere = new Flow<State>("orders", { state: State, version: 3 }).node("z", async () => ({})).end("z");
    await expect(runner.fork(elsewhere, "f", { fromStep: 1, runId: "f3", by: "ops" })).rejects.toThrow(/node "b"/);
    await expect(store.latest("f3")).rejects.toThrow(/No checkpoint/);
    const fork = await runner.fork(orders(2, true), "f", { fromStep: 1, runId: "f2", by: "ops" });
    expect(await versionOf(store, "f2")).toBe(2);
    await expect(runner.recover(orders(1), "f2")).rejects.toBeInstanceOf(VersionNotServed);
    expect(await runner.recover(orders(2, true), fork.runId)).toMatchObject({ status: "done", state: { n: 2 } });
    expect(effects).toEqual(["1:a", "1:b", "2:b"]);
  });

  it("a run keeps its version past its first superstep: its version's code resumes it, another's still refuses it", async () => {
    const { store, paused } = setUpAsks();
    // Paused in its second round: the checkpoints after the first superstep seal the version too.
    expect(await paused.run(asks(1, true), { n: 0 }, { runId: "s" })).toMatchObject({ status: "paused" });
    expect(await versionOf(store, "s")).toBe(1);
    const answers = { [(await pendingOf(store, "s"))[0] as string]: true };
    await expect(paused.resume(asks(2, true), "s", answers)).rejects.toBeInstanceOf(VersionNotServed);
    expect(await paused.resume(asks(1, true), "s", answers)).toMatchObject({ status: "done", state: { n: 2 } });
    expect(await versionOf(store, "s")).toBe(1);
  });

  it("a graph changed without a new version still fails with FlowError", async () => {
    const { runner } = setUp();
    await runner.start(orders(1), { n: 0 }, { runId: "g" });
    await expect(runner.recover(orders(1, true), "g")).rejects.toBeInstanceOf(FlowError);
  });

  it("refuses versions that are not 1 to 128 characters or a whole number ≥ 0", () => {
    for (const version of ["", "x".repeat(129), -1, 1.5, Number.NaN, true, {}, "a\u0000b"]) {
      expect(() => new Flow("f", { state: State, version: version as never })).toThrow(InvalidInput);
    }
    expect(() => workflow("w", { input: State, version: "x".repeat(129) }, async () => 1)).toThrow(InvalidInput);
    expect(new Flow("f", { state: State, version: "2026-12-05" }).version).toBe("2026-12-05");
  });
});

async function pendingOf(store: MemoryCheckpointStore, runId: string): Promise<string[]> {
  return readEnvelope(runId, (await readLatest(store, Sealer.unsigned(), runId)).data).pending.map((p) => p.callId);
}
