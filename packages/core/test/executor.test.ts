import { describe, expect, it } from "vitest";
import {
  CheckpointStoreCorrupt,
  DurableError,
  type DurableEvent,
  Executor,
  idempotencyKey,
  InvalidInput,
  ToolRegistry,
  UnrecordableResult,
} from "../src/index.js";
import {
  CallScope,
  canonicalJson,
  classifyCalls,
  type Classification,
  type DurableRun,
  freshPlan,
  leavesRunForRecovery,
  planReplay,
  readCallLog,
  type ReplayPlan,
} from "../src/runner.js";
import { MemoryCheckpointStore, sealer, startRun } from "./helpers.js";

function scopeFor(run: DurableRun, plan: ReplayPlan = freshPlan(1)) {
  return new CallScope({ kind: "flow", log: run.log, plan, identity: run.identity });
}

/** The id the first such call of round 1 gets. */
function idOf(run: DurableRun, within: string, tool: string, args: unknown): string {
  return scopeFor(run).nameCall(within, tool, canonicalJson(args));
}

describe("Executor", () => {
  it("stores the started record before the tool runs, then done with its result", async () => {
    const { store, run } = await startRun();
    let seenByTool: string[] = [];
    const registry = new ToolRegistry().tool("charge_card", async (args: { amount: number }) => {
      seenByTool = (await readCallLog(store, sealer, "run-1", [])).map((r) => r.kind);
      return { charged: args.amount };
    });
    const outcome = await new Executor(registry).call(scopeFor(run), "pay", "charge_card", { amount: 5 });
    expect(outcome).toEqual({ status: "ok", value: { charged: 5 } });
    expect(seenByTool).toEqual(["started"]);
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    const callId = idOf(run, "pay", "charge_card", { amount: 5 });
    expect(records.map((r) => [r.kind, r.callId, r.tool])).toEqual([
      ["started", callId, "charge_card"],
      ["done", callId, "charge_card"],
    ]);
    expect(records[1]?.result).toEqual({ charged: 5 });
  });

  it("replays a finished call without running the tool; with other arguments it is a new call, and the old one is unreplayed", async () => {
    const { store, run } = await startRun();
    let runs = 0;
    const registry = new ToolRegistry().tool("t", (args: { n: number }) => ++runs + args.n);
    const executor = new Executor(registry);
    await executor.call(scopeFor(run), "c", "t", { n: 10 });
    await run.flush();
    const plan = planReplay("run-1", await readCallLog(store, sealer, "run-1", []), 1, registry);

    const replay = scopeFor(run, plan);
    expect(await executor.call(replay, "c", "t", { n: 10 })).toEqual({ status: "ok", value: 11 });
    expect(runs).toBe(1);
    const first = idOf(run, "c", "t", { n: 10 });
    expect(replay.unreplayed).toEqual([]);

    const changed = scopeFor(run, plan);
    expect(await executor.call(changed, "c", "t", { n: 20 })).toEqual({ status: "ok", value: 22 });
    expect(changed.unreplayed).toEqual([{ callId: first, tool: "t" }]);
  });

  it("gives the same idempotencyKey() to the same call on two executors, and different keys to other calls and runs", async () => {
    const keys: string[] = [];
    const registry = new ToolRegistry().tool("t", () => {
      keys.push(idempotencyKey());
    });
    const store = new MemoryCheckpointStore();
    const { run } = await startRun(store, "run-1");
    const { run: other } = await startRun(store, "run-2");
    await new Executor(registry).call(scopeFor(run), "pay:0", "t", {});
    await new Executor(registry).call(scopeFor(run), "pay:0", "t", {});
    await new Executor(registry).call(scopeFor(run), "pay:1", "t", {});
    await new Executor(registry).call(scopeFor(other), "pay:0", "t", {});
    expect(keys[0]).toBe(keys[1]);
    expect(new Set(keys).size).toBe(3);
    expect(keys[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(() => idempotencyKey()).toThrow(InvalidInput);
  });

  it("refuses arguments that are not plain JSON before writing anything", async () => {
    const { store, run } = await startRun();
    const registry = new ToolRegistry().tool("t", () => 1);
    await expect(new Executor(registry).call(scopeFor(run), "c", "t", { at: new Date() })).rejects.toThrow(
      /arguments of t\.at/,
    );
    expect(await store.calls("run-1")).toEqual([]);
  });

  it("records a result that cannot be sealed as unrecordable: the call is then in doubt", async () => {
    const { store, run } = await startRun();
    const registry = new ToolRegistry().tool("send", () => ({ sentAt: new Date() }));
    await expect(new Executor(registry).call(scopeFor(run), "c", "send", {})).rejects.toThrow(
      /cannot be stored.*in doubt/,
    );
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => r.kind)).toEqual(["started", "unrecordable"]);
    expect(classifyCalls(records, 1).inDoubt.get(idOf(run, "c", "send", {}))?.why).toBe("result could not be recorded");
  });

  it("an unrecordable result is UnrecordableResult (UNRECORDABLE_RESULT), not InvalidInput: the tool ran, so the run is left for recovery", async () => {
    const { run } = await startRun();
    const registry = new ToolRegistry().tool("send", () => ({ sentAt: new Date() }));
    const error: unknown = await new Executor(registry).call(scopeFor(run), "c", "send", {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnrecordableResult);
    expect(error).toBeInstanceOf(DurableError);
    expect(error).not.toBeInstanceOf(InvalidInput);
    expect(error).toMatchObject({ code: "UNRECORDABLE_RESULT", tool: "send" });
    expect((error as Error).cause).toBeInstanceOf(InvalidInput);
    expect(leavesRunForRecovery(error)).toBe(true);
  });

  it("stores a tool's error as the call's outcome; replay gives the same error without running the tool", async () => {
    const { store, run } = await startRun();
    let runs = 0;
    const registry = new ToolRegistry().tool("t", () => {
      runs++;
      throw new TypeError("no seats left");
    });
    const events: DurableEvent[] = [];
    const executor = new Executor(registry);
    const scope = new CallScope({
      kind: "loop",
      log: run.log,
      plan: freshPlan(1),
      identity: {},
      events: (e) => void events.push(e),
    });
    const first = await executor.call(scope, "c", "t", {});
    expect(first).toMatchObject({ status: "error", error: "TypeError: no seats left", attempts: 1 });
    expect(first.status === "error" && first.cause).toBeInstanceOf(TypeError);
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => [r.kind, r.error])).toEqual([
      ["started", undefined],
      ["error", "TypeError: no seats left"],
    ]);
    expect(events.map((e) => e.type)).toEqual(["call.started", "call.failed"]);
    expect(events[1]).toMatchObject({ call: { tool: "t" }, error: "TypeError: no seats left", attempt: 1 });

    const plan = planReplay("run-1", records, 1, registry);
    expect(plan.inDoubt.size).toBe(0);
    expect(await executor.call(scopeFor(run, plan), "c", "t", {})).toEqual({
      status: "error",
      error: "TypeError: no seats left",
      attempts: 1,
    });
    expect(runs).toBe(1);
  });

  it("an error record without its error text is a corrupt log", async () => {
    const { store, run } = await startRun();
    await run.log.append({ round: 1, callId: "c", tool: "t", kind: "error", args: {} });
    await run.flush();
    await expect(readCallLog(store, sealer, "run-1", [])).rejects.toThrow(CheckpointStoreCorrupt);
  });

  it("a decided record without who decided, or with an unknown decision, is a corrupt log; so is a record after a decided outcome", async () => {
    const base = { round: 1, callId: "c", tool: "t", args: {} } as const;
    const at = new Date().toISOString();
    for (const bad of [
      { ...base, kind: "decided", decision: "rerun", at },
      { ...base, kind: "decided", decision: "maybe" as never, by: "ops", at },
      { ...base, kind: "decided", decision: "error", by: "ops", at },
    ] as const) {
      const { store, run } = await startRun();
      await run.log.append(bad);
      await expect(readCallLog(store, sealer, "run-1", [])).rejects.toThrow(CheckpointStoreCorrupt);
    }
    const { store, run } = await startRun();
    await run.log.append({ ...base, kind: "started" });
    await run.log.append({ ...base, kind: "decided", decision: "result", result: 7, by: "ops", at });
    expect((await readCallLog(store, sealer, "run-1", [])).map((r) => r.kind)).toEqual(["started", "decided"]);
    await run.log.append({ ...base, kind: "started" });
    await expect(readCallLog(store, sealer, "run-1", [])).rejects.toThrow(/after its outcome/);
  });

  it("pauses an approval call with a pending record, and runs it once a bound decision is given", async () => {
    const { store, run } = await startRun();
    let ran = 0;
    const registry = new ToolRegistry().tool("refund", () => ++ran, { approval: true });
    const executor = new Executor(registry);
    const scope = scopeFor(run);
    expect(await executor.call(scope, "c", "refund", { amount: 5 })).toEqual({ status: "pending" });
    const callId = idOf(run, "c", "refund", { amount: 5 });
    expect(scope.pending).toEqual([{ callId, tool: "refund", args: { amount: 5 } }]);

    const answers = new Map([[callId, { callId, argsText: '{"amount":5}', approved: true }]]);
    const approved = new CallScope({ ...scope.init, answers });
    expect(await executor.call(approved, "c", "refund", { amount: 5 })).toEqual({ status: "ok", value: 1 });
    // The answer is bound to its arguments: other arguments wait for a new one.
    expect(await executor.call(approved, "c", "refund", { amount: 500 })).toEqual({ status: "pending" });
    const kinds = (await readCallLog(store, sealer, "run-1", [])).map((r) => r.kind);
    expect(kinds).toEqual(["pending", "started", "done", "pending"]);
  });

  it("asks a synchronous approval port: while it waits the call is pending (in doubt if the worker dies); its denial is recorded, never in doubt", async () => {
    const { store, run } = await startRun();
    const registry = new ToolRegistry().tool("refund", () => "refunded", { approval: true });
    let waiting: Classification | undefined;
    const executor = new Executor(registry, {
      approvals: async () => {
        waiting = classifyCalls(await readCallLog(store, sealer, "run-1", []), 1);
        return { approved: false, reason: "too much" };
      },
    });
    expect(await executor.call(scopeFor(run), "c", "refund", {})).toEqual({ status: "denied", reason: "too much" });
    const callId = idOf(run, "c", "refund", {});
    expect(waiting?.inDoubt.get(callId)?.why).toBe("was waiting on an approval port");
    const log = await readCallLog(store, sealer, "run-1", []);
    expect(log.map((r) => [r.kind, r.reason])).toEqual([
      ["pending", undefined],
      ["denied", "too much"],
    ]);
    const denied = classifyCalls(log, 1);
    expect(denied.inDoubt.size).toBe(0);
    expect(denied.finished.get(callId)?.outcome).toEqual({ status: "denied", reason: "too much" });
  });
});
