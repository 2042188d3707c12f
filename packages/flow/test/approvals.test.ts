import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ApprovalDenied,
  CheckpointConflict,
  type CheckpointStore,
  type DurableEvent,
  Executor,
  IdentityMismatch,
  InvalidInput,
  RecoveryNeedsDecision,
  ToolRegistry,
} from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { Call, Flow, FlowRunner } from "../src/index.js";
import { DyingStore, KEY, MemoryCheckpointStore, forever, runnerOn, settle, storeWith } from "./helpers.js";

const State = z.object({ amount: z.number(), note: z.string() });
const flow = new Flow("refunds", { state: State })
  .node("check", new Call("lookup", { args: (s) => ({ amount: s.amount }) }))
  .node("refund", new Call("refund", { args: (s) => ({ amount: s.amount }), into: "note" }))
  .edge("check", "refund")
  .end("refund");
const INPUT = { amount: 50, note: "" };
const CALL = callIdOf(2, "refund", "refund", { amount: 50 });

function setup() {
  const ran = { lookup: 0, refund: 0 };
  const registry = new ToolRegistry()
    .tool("lookup", () => ++ran.lookup)
    .tool(
      "refund",
      (a: { amount: number }) => {
        ran.refund++;
        return `refunded ${a.amount}`;
      },
      { approval: true },
    );
  return { ran, registry, store: new MemoryCheckpointStore() };
}

describe("approvals", () => {
  it("pause the run; resume spends the decision; a second resume of the same pause is CheckpointConflict", async () => {
    const { ran, registry, store } = setup();
    const runner = runnerOn(store, registry);
    const paused = await runner.run(flow, INPUT, { runId: "r", ctx: { user: "ada" } });
    expect(paused).toEqual({
      status: "paused",
      runId: "r",
      step: 2,
      approvals: [{ callId: CALL, tool: "refund", args: { amount: 50 } }],
    });
    expect((await store.latest("r")).status).toBe("paused");
    expect(await runner.recover(flow, "r")).toEqual(paused);

    const results = await Promise.allSettled([
      runner.resume(flow, "r", { [CALL]: true }),
      runnerOn(store, registry).resume(flow, "r", { [CALL]: true }),
    ]);
    expect(
      results.filter((r) => r.status === "fulfilled").map((r) => (r as PromiseFulfilledResult<unknown>).value),
    ).toEqual([{ status: "done", runId: "r", step: 4, state: { amount: 50, note: "refunded 50" } }]);
    expect(results.find((r) => r.status === "rejected")?.reason).toBeInstanceOf(CheckpointConflict);
    expect(ran).toEqual({ lookup: 1, refund: 1 });
    await expect(runner.resume(flow, "r", { [CALL]: true })).rejects.toThrow(CheckpointConflict);
  });

  it("a denied call stops the run with ApprovalDenied, saved as failed", async () => {
    const { ran, registry, store } = setup();
    const runner = runnerOn(store, registry);
    await runner.run(flow, INPUT, { runId: "r" });
    await expect(runner.resume(flow, "r", { [CALL]: { approved: false, reason: "too much" } })).rejects.toThrow(
      ApprovalDenied,
    );
    expect((await store.latest("r")).status).toBe("failed");
    expect(ran.refund).toBe(0);
  });

  it("refuses a decision for a call that is not pending, and a ctx for someone else", async () => {
    const { registry, store } = setup();
    const runner = runnerOn(store, registry);
    await runner.run(flow, INPUT, { runId: "r", ctx: { user: "ada" } });
    await expect(runner.resume(flow, "r", { "9:nope:0": true })).rejects.toThrow(InvalidInput);
    await expect(runner.resume(flow, "r", { [CALL]: true }, { ctx: { user: "eve" } })).rejects.toThrow(
      IdentityMismatch,
    );
    expect((await store.latest("r")).status).toBe("paused");
  });

  it("a worker that dies before the decision is saved leaves the run paused and resumable", async () => {
    const { ran, registry, store } = setup();
    await runnerOn(store, registry).run(flow, INPUT, { runId: "r" });
    void runnerOn(new DyingStore(store, { op: "save", step: 3, when: "before" }), registry).resume(flow, "r", {
      [CALL]: true,
    });
    await settle();
    expect((await store.latest("r")).status).toBe("paused");
    expect(await runnerOn(store, registry).resume(flow, "r", { [CALL]: true })).toMatchObject({ status: "done" });
    expect(ran.refund).toBe(1);
  });

  it("a worker that dies after the decision is saved is recovered by spending the stored decision", async () => {
    const { ran, registry, store } = setup();
    await runnerOn(store, registry).run(flow, INPUT, { runId: "r" });
    void runnerOn(new DyingStore(store, { op: "save", step: 3, when: "after" }), registry).resume(flow, "r", {
      [CALL]: true,
    });
    await settle();
    expect((await store.latest("r")).status).toBe("running");
    expect(await runnerOn(store, registry).recover(flow, "r")).toMatchObject({
      status: "done",
      state: { note: "refunded 50" },
    });
    expect(ran).toEqual({ lookup: 1, refund: 1 });
  });

  it("a decision is bound to its arguments: changed arguments wait for a new approval", async () => {
    const { registry, store } = setup();
    let amount = 50;
    const bound = new Flow("bound", { state: State })
      .node("refund", async (_, ctx) => ({ note: String(await ctx.call("refund", { amount })) }))
      .end("refund");
    const runner = runnerOn(store, registry);
    const first = await runner.run(bound, INPUT, { runId: "r" });
    expect(first).toMatchObject({ status: "paused", approvals: [{ args: { amount: 50 } }] });
    amount = 5000;
    const asked = first.status === "paused" ? first.approvals[0]!.callId : "";
    const second = await runner.resume(bound, "r", { [asked]: true });
    expect(second).toMatchObject({ status: "paused", approvals: [{ args: { amount: 5000 } }] });
  });

  it("a synchronous approval port is awaited in process; a worker dying while it waits leaves the call in doubt", async () => {
    const { ran, registry, store } = setup();
    const withPort = (port: () => Promise<{ approved: boolean }>, on: CheckpointStore = store) =>
      new FlowRunner(new Executor(registry, { approvals: port }), { checkpoints: on, checkpointKey: KEY });
    expect(await withPort(async () => ({ approved: true })).run(flow, INPUT, { runId: "ok" })).toMatchObject({
      status: "done",
    });

    // The first worker on a connection of its own, as another process would be.
    void withPort(forever, storeWith(store, {})).run(flow, INPUT, { runId: "r" });
    await settle();
    // Its lease is live (it is alive in this process, waiting): the recovery takes the run over.
    const error = await withPort(async () => ({ approved: true }))
      .recover(flow, "r", { takeOver: true })
      .catch((e: unknown) => e);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([
      { tool: "refund", why: "was waiting on an approval port" },
    ]);
    const result = await withPort(async () => ({ approved: true })).recover(flow, "r", { rerunInDoubt: true });
    expect(result).toMatchObject({ status: "done", state: { note: "refunded 50" } });
    expect(ran.refund).toBe(2);
  });
});

describe("a call waiting on an approval", () => {
  it("pauses the run even when the node's own try/catch swallows the wait", async () => {
    const store = new MemoryCheckpointStore();
    let refunds = 0;
    const registry = new ToolRegistry().tool("refund", () => ++refunds, { approval: true });
    const State = z.object({ note: z.string().default("") });
    const flow = new Flow("careful", { state: State })
      .node("refund", async (_s, ctx) => {
        try {
          await ctx.call("refund", { amount: 50 });
          return { note: "refunded" };
        } catch {
          return { note: "refund did not go through" };
        }
      })
      .end("refund");
    const result = await runnerOn(store, registry).run(flow, {}, { runId: "careful-1" });
    expect(result.status).toBe("paused");
    if (result.status !== "paused") return;
    const done = await runnerOn(store, registry).resume(flow, "careful-1", { [result.approvals[0]!.callId]: true });
    expect(done).toMatchObject({ status: "done", state: { note: "refunded" } });
    expect(refunds).toBe(1);
  });
});

describe("a resume whose round holds a call in doubt (a node swallowed an unrecordable result, then waited on an approval)", () => {
  it("stores the decision with its claim, stops with RecoveryNeedsDecision and run.needs-decision; a second resume is refused; the recovery that reruns the call spends the decision once", async () => {
    const store = new MemoryCheckpointStore();
    const ran = { lookup: 0, refund: 0 };
    const registry = new ToolRegistry()
      .tool("lookup", () => {
        ran.lookup++;
        // Its first result cannot be stored; the rerun's can (a round left with a call in doubt never settles).
        return { at: ran.lookup === 1 ? new Date() : "today" };
      })
      .tool("refund", () => ++ran.refund, { approval: true });
    const flow = new Flow("refunds", { state: z.object({ note: z.string() }) })
      .node("refund", async (_s, ctx) => {
        await ctx.call("lookup", { order: 7 }).catch(() => undefined);
        return { note: `refund ${String(await ctx.call("refund", { order: 7 }))}` };
      })
      .end("refund");
    const events: DurableEvent[] = [];
    const worker = new FlowRunner(new Executor(registry), {
      checkpoints: store,
      checkpointKey: KEY,
      events: (e) => void events.push(e),
    });
    const paused = await worker.run(flow, { note: "" }, { runId: "r" });
    if (paused.status !== "paused") throw new Error("expected a pause");
    const refund = paused.approvals[0]!.callId;
    const error = await worker.resume(flow, "r", { [refund]: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([
      { tool: "lookup", why: "result could not be recorded" },
    ]);
    const claim = await store.latest("r");
    expect(events.at(-1)).toMatchObject({ type: "run.needs-decision", step: claim.step, calls: [{ tool: "lookup" }] });
    await expect(worker.resume(flow, "r", { [refund]: false })).rejects.toThrow(CheckpointConflict);
    expect(await worker.recover(flow, "r", { rerunInDoubt: true })).toMatchObject({
      status: "done",
      state: { note: "refund 1" },
    });
    expect(ran).toEqual({ lookup: 2, refund: 1 });
  });
});
