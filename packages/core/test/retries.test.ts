import { describe, expect, it, vi } from "vitest";
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
import { type CallScope, freshPlan, planReplay, readCallLog } from "../src/runner.js";
import { sleepUntil } from "../src/calls/retry.js";
import { giveUpDuringWait, scopeFor, sealer, sleep, startRun, until } from "./helpers.js";

const fast = { attempts: 3, initialDelayMs: 20, factor: 2, jitter: 0 };
const DAY = 86_400_000;

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

describe("a retry wait longer than one timer holds (2^31 - 1 ms, about 24.8 days)", () => {
  it("is InvalidInput when the tool is registered: Node would fire such a timer at once, and retryAt would leave the safe integers", () => {
    for (const retry of [
      { attempts: 2, initialDelayMs: 30 * DAY, maxDelayMs: 30 * DAY },
      { attempts: 2, initialDelayMs: Number.MAX_SAFE_INTEGER, maxDelayMs: Number.MAX_SAFE_INTEGER },
    ])
      expect(() => new ToolRegistry().tool("t", () => 1, { retry })).toThrow(InvalidInput);
    expect(() => new ToolRegistry().tool("t", () => 1, { timeoutMs: 30 * DAY })).toThrow(InvalidInput);
    expect(() =>
      new ToolRegistry().tool("t", () => 1, { retry: { initialDelayMs: 2_147_483_647, maxDelayMs: 2_147_483_647 } }),
    ).not.toThrow();
  });
});

describe("the log the executor writes", () => {
  it("keeps attempt numbers right across a give-up in the second wait: the recovery makes attempt 3 at the recorded time", async () => {
    const { store, run } = await startRun();
    const attempts: number[] = [];
    const registry = new ToolRegistry().tool(
      "charge",
      (_args: unknown, ctx: ToolContext) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt < 3) throw new Error("ECONNRESET");
        return { attempt: ctx.attempt };
      },
      { retry: { attempts: 4, initialDelayMs: 50, factor: 10, jitter: 0 } },
    );
    // started, failed(1), started(2), failed(2): then the 500 ms wait before attempt 3, 350 ms of it before the give-up.
    const records = await giveUpDuringWait(store, run, registry, 4, 350);
    expect(records.map((r) => [r.kind, r.attempt])).toEqual([
      ["started", undefined],
      ["failed", 1],
      ["started", 2],
      ["failed", 2],
    ]);
    const plan = planReplay("run-1", records, 1, registry);
    expect(plan.inDoubt.size).toBe(0);
    expect(plan.next.get(records[0]!.callId)).toEqual({ attempt: 3, notBefore: records[3]!.retryAt });
    const begun = Date.now();
    expect(await new Executor(registry).call(scopeFor(run, plan), "p", "charge", {})).toEqual({
      status: "ok",
      value: { attempt: 3 },
    });
    expect(Date.now()).toBeGreaterThanOrEqual(records[3]!.retryAt!);
    expect(Date.now() - begun).toBeLessThan(500); // what was left of the 500 ms (about 150), not all of it
    expect(attempts).toEqual([1, 2, 3]);
    await run.flush();
    expect((await readCallLog(store, sealer, "run-1", [])).slice(4).map((r) => [r.kind, r.attempt])).toEqual([
      ["started", 3],
      ["done", undefined],
    ]);
  });
});

describe("a tool that ignores its signal after a timeout", () => {
  it("never gets its late result recorded, on its last attempt either: the call's error stays its last record", async () => {
    const { store, run } = await startRun();
    let late = false;
    const registry = new ToolRegistry().tool(
      "slow",
      async () => {
        await sleep(80);
        late = true;
        return "late";
      },
      { timeoutMs: 20, idempotent: true },
    );
    const outcome = await new Executor(registry).call(scopeFor(run), "n", "slow", {});
    expect(outcome).toMatchObject({ status: "error", attempts: 1 });
    expect((outcome as { cause: unknown }).cause).toBeInstanceOf(ToolTimedOut);
    await until(() => late);
    await sleep(20);
    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => r.kind)).toEqual(["started", "error"]);
    // Replayed: the error, no attempt.
    const plan = planReplay("run-1", records, 1, registry);
    expect(await new Executor(registry).call(scopeFor(run, plan), "n", "slow", {})).toMatchObject({
      status: "error",
    });
  });

  it("is not started again while its timed-out attempt still runs: a tool that is not idempotent is left in doubt", async () => {
    const { store, run } = await startRun();
    let running = 0;
    let overlapped = 0;
    let effects = 0;
    const registry = new ToolRegistry().tool(
      "transfer",
      async () => {
        running += 1;
        if (running > 1) overlapped += 1;
        await sleep(60); // a slow bank: it ignores the signal and completes the transfer anyway
        effects += 1;
        running -= 1;
        return "sent";
      },
      { timeoutMs: 30, retry: { attempts: 2, initialDelayMs: 0, jitter: 0 } },
    );
    const call = new Executor(registry).call(scopeFor(run), "n", "transfer", { cents: 100 });
    await expect(call).rejects.toThrow(ToolTimedOut);
    await sleep(100);
    const records = await readCallLog(store, sealer, "run-1", []);
    expect(records.map((r) => r.kind)).toEqual(["started"]);
    expect(() => planReplay("run-1", records, 1, registry)).toThrow(/transfer \(started with no result\)/);
    expect(overlapped).toBe(0);
    expect(effects).toBe(1);
  });
});

describe("concurrent calls of one round (Promise.all), retries and a give-up", () => {
  it("replay the finished ones and go on with the waiting one: no finished call runs again", async () => {
    const { store, run } = await startRun();
    const ran = new Map<string, number>();
    const registry = new ToolRegistry()
      .tool(
        "flaky",
        (_args: unknown, ctx: ToolContext) => {
          ran.set("flaky", (ran.get("flaky") ?? 0) + 1);
          if (ctx.attempt === 1) throw new Error("busy");
          return "flaky ok";
        },
        { retry: { attempts: 3, initialDelayMs: 300, jitter: 0 } },
      )
      .tool("once", (args: { n: number }) => {
        ran.set(`once${args.n}`, (ran.get(`once${args.n}`) ?? 0) + 1);
        return `once ${args.n}`;
      })
      .tool("bad", () => {
        ran.set("bad", (ran.get("bad") ?? 0) + 1);
        throw new NonRetryable("declined");
      });
    const node = async (scope: CallScope) => {
      const executor = new Executor(registry);
      return Promise.all([
        executor.call(scope, "n", "once", { n: 1 }),
        executor.call(scope, "n", "flaky", {}),
        executor.call(scope, "n", "once", { n: 1 }), // identical: occurrence 1
        executor.call(scope, "n", "bad", {}),
      ]);
    };
    const giveUp = new AbortController();
    const first = node(scopeFor(run, freshPlan(1), { signal: giveUp.signal }));
    void first.catch(() => undefined);
    await until(async () => (await store.calls("run-1")).some((row) => row.sealed.includes('"kind":"failed"')));
    await sleep(20);
    giveUp.abort(new Error("shutting down"));
    await first.catch(() => undefined);

    await run.flush();
    const records = await readCallLog(store, sealer, "run-1", []);
    const plan = planReplay("run-1", records, 1, registry);
    expect(plan.inDoubt.size).toBe(0);
    const events: DurableEvent[] = [];
    const outcomes = await node(scopeFor(run, plan, { events: (e) => void events.push(e) }));
    expect(outcomes).toEqual([
      { status: "ok", value: "once 1" },
      { status: "ok", value: "flaky ok" },
      { status: "ok", value: "once 1" },
      { status: "error", error: "NonRetryable: declined", attempts: 1 },
    ]);
    expect(Object.fromEntries(ran)).toEqual({ once1: 2, flaky: 2, bad: 1 });
    expect(events.filter((e) => e.type === "call.started")).toHaveLength(1);
    await run.flush();
    await expect(readCallLog(store, sealer, "run-1", [])).resolves.toHaveLength(records.length + 2);
  });

  it("waits between attempts until the wall clock reached retryAt, however early its timer fires by it", async () => {
    // The timers run and the wall clock stands still: a wait on a timer alone would end 1,005 ms short.
    let wall = 1_000;
    const now = vi.spyOn(Date, "now").mockImplementation(() => wall);
    try {
      let woke = false;
      const waiting = sleepUntil(1_005, undefined).then(() => {
        woke = true;
      });
      await sleep(40);
      expect(woke).toBe(false);
      wall = 1_005;
      await waiting;
      expect(woke).toBe(true);
      const giveUp = new AbortController();
      giveUp.abort(new Error("given up"));
      await expect(sleepUntil(0, giveUp.signal)).rejects.toThrow("given up");
    } finally {
      now.mockRestore();
    }
  });
});
