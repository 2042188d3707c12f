import { describe, expect, it } from "vitest";
import { RecoveryNeedsDecision, ToolRegistry } from "../src/index.js";
import { type CallRecord, classifyCalls, idempotencyKeyFor, planReplay } from "../src/runner.js";

let seq = 0;
const rec = (callId: string, kind: CallRecord["kind"], extra: Partial<CallRecord> = {}): CallRecord => ({
  runId: "r",
  segment: 0,
  seq: seq++,
  round: 1,
  callId,
  tool: `tool_${callId}`,
  kind,
  args: { id: callId },
  ...extra,
});

const registry = new ToolRegistry()
  .tool("tool_a", () => null)
  .tool("tool_b", () => null)
  .tool("tool_idem", () => null, { idempotent: true })
  .tool("tool_c", () => null);

describe("classifying the calls of a cut-short round", () => {
  it("replays a call with a done record", () => {
    const done = rec("a", "done", { result: { ok: 1 } });
    const { finished, inDoubt } = classifyCalls([rec("a", "started"), done], 1);
    expect(finished.get("a")).toEqual({
      callId: "a",
      tool: "tool_a",
      argsText: '{"id":"a"}',
      outcome: { status: "ok", value: { ok: 1 } },
      // Where the outcome is in the log: an operator's wake ends the sleeps recorded before a place.
      at: { segment: 0, seq: done.seq },
    });
    expect(inDoubt.size).toBe(0);
  });

  it("replays a call with an error record as its error, not in doubt", () => {
    const { finished, inDoubt } = classifyCalls(
      [rec("a", "started"), rec("a", "error", { error: "TypeError: no seats" })],
      1,
    );
    expect(finished.get("a")?.outcome).toEqual({ status: "error", error: "TypeError: no seats", attempts: 1 });
    expect(inDoubt.size).toBe(0);
  });

  it("puts every in-doubt case of the spec in doubt, with its reason", () => {
    const { inDoubt, pending } = classifyCalls(
      [
        rec("a", "started"),
        rec("b", "started"),
        rec("b", "unrecordable", { reason: "a Date" }),
        rec("c", "pending", { port: true }),
      ],
      1,
    );
    expect([...inDoubt.values()].map((c) => [c.callId, c.why])).toEqual([
      ["a", "started with no result"],
      ["b", "result could not be recorded"],
      ["c", "was waiting on an approval port"],
    ]);
    expect(pending.size).toBe(0);
  });

  it("replays a denied approval as its denial, never in doubt, even after a wait on the port", () => {
    const { finished, inDoubt, next } = classifyCalls(
      [rec("a", "pending", { port: true }), rec("a", "denied", { reason: "too much" })],
      1,
    );
    expect(finished.get("a")?.outcome).toEqual({ status: "denied", reason: "too much" });
    expect([inDoubt.size, next.size]).toEqual([0, 0]);
  });

  it("makes a rerun of a call that never started afresh, so it asks its approval again; a started one goes on with its attempt", () => {
    const decided = { by: "ops", at: "2026-01-01T00:00:00.000Z", decision: "rerun" } as const;
    const {
      next,
      inDoubt,
      decided: decisions,
    } = classifyCalls(
      [
        rec("a", "pending", { port: true }),
        rec("b", "started", { attempt: 2 }),
        rec("a", "decided", decided),
        rec("b", "decided", decided),
      ],
      1,
    );
    expect(next.has("a")).toBe(false);
    expect(next.get("b")).toEqual({ attempt: 2 });
    expect([inDoubt.size, [...decisions.keys()]]).toEqual([0, ["a", "b"]]);
  });

  it("keeps a call waiting on an approval of a paused run out of doubt", () => {
    const { inDoubt, pending } = classifyCalls([rec("a", "pending")], 1);
    expect(inDoubt.size).toBe(0);
    expect(pending.get("a")).toEqual({ callId: "a", tool: "tool_a", args: { id: "a" } });
  });

  it("lets the last record decide across segments: a rerun that finished replays", () => {
    const records = [
      rec("a", "started"),
      rec("a", "started", { segment: 1 }),
      rec("a", "done", { segment: 1, result: 7 }),
    ];
    const { finished, inDoubt } = classifyCalls(records, 1);
    expect(finished.get("a")?.outcome).toEqual({ status: "ok", value: 7 });
    expect(inDoubt.size).toBe(0);
  });

  it("ignores the calls of other rounds", () => {
    const { inDoubt, finished } = classifyCalls([rec("a", "started", { round: 0 }), rec("b", "done", { round: 2 })], 1);
    expect(inDoubt.size + finished.size).toBe(0);
  });
});

describe("planning a replay", () => {
  const inDoubt = [
    rec("a", "started"),
    rec("idem", "started"),
    rec("b", "done", { result: 1 }),
    rec("c", "pending", { port: true }),
  ];

  it("raises RecoveryNeedsDecision naming each non-idempotent call in doubt: id, tool, arguments, idempotency key, why", () => {
    let error: unknown;
    try {
      planReplay("r", inDoubt, 1, registry);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect((error as RecoveryNeedsDecision).code).toBe("RECOVERY_NEEDS_DECISION");
    expect((error as RecoveryNeedsDecision).calls).toEqual([
      {
        callId: "a",
        tool: "tool_a",
        args: { id: "a" },
        idempotencyKey: idempotencyKeyFor("r", "a"),
        why: "started with no result",
      },
      {
        callId: "c",
        tool: "tool_c",
        args: { id: "c" },
        idempotencyKey: idempotencyKeyFor("r", "c"),
        why: "was waiting on an approval port",
      },
    ]);
    expect((error as Error).message).toMatch(
      /tool_a \(started with no result\), tool_c \(was waiting on an approval port\)/,
    );
  });

  it("lets in-doubt calls of idempotent tools rerun with no decision", () => {
    const plan = planReplay("r", [rec("idem", "started"), rec("b", "done", { result: 1 })], 1, registry);
    expect([...plan.inDoubt.keys()]).toEqual(["idem"]);
    expect([...plan.finished.keys()]).toEqual(["b"]);
  });

  it("reruns every call in doubt when the caller says so", () => {
    const plan = planReplay("r", inDoubt, 1, registry, { rerunInDoubt: true });
    expect([...plan.inDoubt.keys()]).toEqual(["a", "idem", "c"]);
  });
});
