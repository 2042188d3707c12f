import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type DurableEvent,
  Executor,
  InvalidInput,
  NonRetryable,
  type ToolContext,
  ToolRegistry,
  ToolTimedOut,
} from "../src/index.js";
import { type CallScope, freshPlan, planReplay, readCallLog } from "../src/runner.js";
import { giveUpDuringWait, scopeFor, sealer, sleep, startRun, until } from "./helpers.js";

// Attacks of the review of tool retries and timeouts (packages/core/src/calls/attempts.ts, retry.ts, replay.ts).
// Each test asserts a guarantee: a failing test is a hole.

const DAY = 86_400_000;

afterEach(() => {
  vi.restoreAllMocks();
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
});
