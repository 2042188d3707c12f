import { describe, expect, it } from "vitest";
import {
  type DurableEvent,
  Executor,
  idempotencyKey,
  InvalidInput,
  NonRetryable,
  type ToolContext,
  ToolRegistry,
  ToolTimedOut,
} from "../src/index.js";
import { freshPlan, planReplay, readCallLog } from "../src/runner.js";
import { giveUpDuringWait, scopeFor, sealer, startRun } from "./helpers.js";

const fast = { attempts: 3, initialDelayMs: 20, factor: 2, jitter: 0 };

/** A tool that throws `failures` times, then returns what attempt it was; it notes what each attempt saw. */
function flaky(failures: number, error: () => unknown = () => new Error("ECONNRESET")) {
  const seen: Array<{ attempt: number; key: string; ctxKey: string }> = [];
  const fn = (_args: unknown, ctx: ToolContext) => {
    seen.push({ attempt: ctx.attempt, key: idempotencyKey(), ctxKey: ctx.idempotencyKey });
    if (seen.length <= failures) throw error();
    return { attempt: ctx.attempt };
  };
  return { fn, seen };
}

describe("tool retries", () => {
  it("retries a transient failure to success: every attempt is in the log, with one idempotency key", async () => {
    const { store, run } = await startRun();
    const tool = flaky(2);
    const registry = new ToolRegistry().tool("charge", tool.fn, { retry: fast });
    const events: DurableEvent[] = [];
    const outcome = await new Executor(registry).call(
      scopeFor(run, freshPlan(1), { events: (e) => void events.push(e) }),
      "pay",
      "charge",
      {},
    );
    expect(outcome).toEqual({ status: "ok", value: { attempt: 3 } });
    expect(tool.seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(new Set(tool.seen.flatMap((s) => [s.key, s.ctxKey])).size).toBe(1);
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => [r.kind, r.attempt, r.error])).toEqual([
      ["started", undefined, undefined],
      ["failed", 1, "Error: ECONNRESET"],
      ["started", 2, undefined],
      ["failed", 2, "Error: ECONNRESET"],
      ["started", 3, undefined],
      ["done", undefined, undefined],
    ]);
    const [first, second] = records.filter((r) => r.kind === "failed");
    expect(second!.retryAt! - first!.retryAt!).toBeGreaterThanOrEqual(40); // 20 ms, then 40 ms
    expect(events.map((e) => e.type)).toEqual([
      "call.started",
      "call.retrying",
      "call.started",
      "call.retrying",
      "call.started",
      "call.done",
    ]);
    expect(events[1]).toMatchObject({ attempt: 1, delayMs: 20, error: "Error: ECONNRESET" });
    expect(events[3]).toMatchObject({ attempt: 2, delayMs: 40 });
    expect(events[5]).toMatchObject({ attempt: 3 });
  });

  it("fails for good after the last attempt, with the error recorded and the attempts counted", async () => {
    const { store, run } = await startRun();
    const tool = flaky(5);
    const registry = new ToolRegistry().tool("charge", tool.fn, { retry: { ...fast, attempts: 2 } });
    const outcome = await new Executor(registry).call(scopeFor(run), "pay", "charge", {});
    expect(outcome).toMatchObject({ status: "error", error: "Error: ECONNRESET", attempts: 2 });
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => r.kind)).toEqual(["started", "failed", "started", "error"]);
    // Replayed, the failure is the call's outcome: no attempt runs, no decision is asked.
    const plan = planReplay("run-1", records, 1, registry);
    expect(plan.inDoubt.size).toBe(0);
    expect(await new Executor(registry).call(scopeFor(run, plan), "pay", "charge", {})).toEqual({
      status: "error",
      error: "Error: ECONNRESET",
      attempts: 2,
    });
    expect(tool.seen).toHaveLength(2);
  });

  it("fails at once on NonRetryable, or on an error retryIf turns down, whatever attempts are left", async () => {
    for (const [name, options, error] of [
      ["NonRetryable", fast, () => new NonRetryable("card declined")],
      ["retryIf", { ...fast, retryIf: (e: unknown) => !(e instanceof TypeError) }, () => new TypeError("bad input")],
      [
        "a retryIf that throws",
        {
          ...fast,
          retryIf: () => {
            throw new Error("oops");
          },
        },
        () => new Error("x"),
      ],
    ] as const) {
      const { store, run } = await startRun();
      const tool = flaky(5, error);
      const registry = new ToolRegistry().tool("charge", tool.fn, { retry: { ...options, attempts: 5 } });
      const outcome = await new Executor(registry).call(scopeFor(run), "pay", "charge", {});
      expect(outcome, name).toMatchObject({ status: "error", attempts: 1 });
      await run.flush();
      expect(tool.seen, name).toHaveLength(1);
      expect(
        (await readCallLog(store, sealer, "run-1", [])).map((r) => r.kind),
        name,
      ).toEqual(["started", "error"]);
    }
  });

  it("times an attempt of an idempotent tool out: its signal aborts with ToolTimedOut, the attempt is failed and retried, and a late result is never recorded", async () => {
    const { store, run } = await startRun();
    const reasons: unknown[] = [];
    let lateReturned = false;
    const registry = new ToolRegistry().tool(
      "fetch",
      async (_args: unknown, ctx: ToolContext) => {
        if (ctx.attempt === 1) {
          ctx.signal.addEventListener("abort", () => reasons.push(ctx.signal.reason));
          // Ignores its signal: it returns long after its timeout.
          await new Promise((resolve) => setTimeout(resolve, 120));
          lateReturned = true;
          return "late";
        }
        return "fresh";
      },
      { timeoutMs: 30, retry: { ...fast, attempts: 2 }, idempotent: true },
    );
    const outcome = await new Executor(registry).call(scopeFor(run), "get", "fetch", {});
    expect(outcome).toEqual({ status: "ok", value: "fresh" });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(ToolTimedOut);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(lateReturned).toBe(true);
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => [r.kind, r.result ?? r.error])).toEqual([
      ["started", undefined],
      ["failed", "ToolTimedOut: fetch did not finish within 30 ms."],
      ["started", undefined],
      ["done", "fresh"],
    ]);
  });

  it("goes on after a worker gave the run up during a wait: the next attempt, after what is left of the wait, not all of it", async () => {
    const { store, run } = await startRun();
    const tool = flaky(1);
    const registry = new ToolRegistry().tool("charge", tool.fn, {
      retry: { attempts: 3, initialDelayMs: 1_000, jitter: 0 },
    });
    // The first attempt failed and the wait began; 600 ms of it pass before the worker gives the run up.
    const records = await giveUpDuringWait(store, run, registry, 2, 600);
    expect(records.map((r) => r.kind)).toEqual(["started", "failed"]);
    const plan = planReplay("run-1", records, 1, registry);
    expect(plan.inDoubt.size).toBe(0);
    const retryAt = records[1]!.retryAt!;
    const started = Date.now();
    expect(await new Executor(registry).call(scopeFor(run, plan), "p", "charge", {})).toEqual({
      status: "ok",
      value: { attempt: 2 },
    });
    // The second attempt starts at the recorded time: about 400 ms after the recovery began, not a whole 1,000.
    expect(Date.now()).toBeGreaterThanOrEqual(retryAt);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(new Set(tool.seen.map((s) => s.key)).size).toBe(1);
  });

  it("a tool's retry and timeoutMs are checked when it is registered", () => {
    const bad = [
      [{ timeoutMs: 0 }, /timeoutMs must be a whole number of ms from 1 to 2147483647, not 0/],
      [{ retry: { attempts: 0 } }, /retry.attempts must be a whole number ≥ 1, not 0/],
      [{ retry: { factor: 0.5 } }, /retry.factor must be a number ≥ 1/],
      [{ retry: { jitter: 2 } }, /retry.jitter must be a number from 0 to 1/],
      [{ retry: { retryIf: "yes" } }, /retryIf must be a function/],
      [{ retry: 3 }, /retry must be an object/],
    ] as const;
    for (const [options, message] of bad) {
      expect(() => new ToolRegistry().tool("t", () => 1, options as never)).toThrow(InvalidInput);
      expect(() => new ToolRegistry().tool("t", () => 1, options as never)).toThrow(message);
    }
  });
});
