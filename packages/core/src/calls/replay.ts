import { canonicalJson } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import type { CallRecord } from "../log/call-log.js";
import { RecoveryNeedsDecision, type InDoubtCall } from "../base/errors.js";
import type { CallRef } from "../log/events.js";
import { idempotencyKeyFor } from "./idempotency.js";
import type { ToolRegistry } from "./tools.js";
import type { CallPosition } from "../store/contract.js";

/** What a finished call ended with: its result, the error its tool threw, or its approval's denial, as recorded. */
export type FinishedOutcome =
  | {
      readonly status: "ok";
      readonly value: JsonValue;
      /** The value is plain JSON decided without the run's codec: it goes through the codec as a tool's result does. */
      readonly plain?: true;
    }
  | {
      readonly status: "error";
      readonly error: string;
      /** How many attempts were made. */
      readonly attempts: number;
      /** What the tool threw, on the worker where it happened (not recorded). */
      readonly cause?: unknown;
    }
  | { readonly status: "denied"; readonly reason?: string };

/** A call of the cut-short round whose outcome is in the log. */
export interface FinishedCall {
  readonly callId: string;
  readonly tool: string;
  /** Canonical JSON of the arguments it ran with. */
  readonly argsText: string;
  readonly outcome: FinishedOutcome;
  /** Where the record of its outcome is in the log (absent for a call a drive finished itself). */
  readonly at?: CallPosition;
}

/** A call waiting on an approval of a paused run. */
export interface PendingCall {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
}

/** Where a call of the cut-short round that has not finished goes on: with which attempt, and not before when. */
export interface NextAttempt {
  readonly attempt: number;
  /** After a failed attempt: when the next may start (ms since the epoch, the failed worker's clock). */
  readonly notBefore?: number;
}

/** Every call of one round, by what recovery does with it. */
export interface Classification {
  readonly finished: ReadonlyMap<string, FinishedCall>;
  readonly inDoubt: ReadonlyMap<string, InDoubtCall>;
  readonly pending: ReadonlyMap<string, PendingCall>;
  /** Calls that started and did not finish (in doubt, decided to run again, or waiting between attempts), by call id. */
  readonly next: ReadonlyMap<string, NextAttempt>;
  /** Calls of the round an operator decided on (a `decided` record), by call id. */
  readonly decided: ReadonlyMap<string, CallRef>;
  /** Every call of the round with a record in the log, call id → tool: where each part of the round had come to. */
  readonly recorded: ReadonlyMap<string, string>;
}

/** What the executor does with the calls of the round it reruns. */
export interface ReplayPlan extends Classification {
  readonly round: number;
}

/** The plan of a round with nothing in its log: every call runs. */
export function freshPlan(round: number): ReplayPlan {
  const none = () => new Map();
  return { round, finished: none(), inDoubt: none(), pending: none(), next: none(), decided: none(), recorded: none() };
}

/**
 * Classifies the calls of one round from the log, across every segment: the
 * last record of a call decides (a loop's `model` records are not calls).
 * `done`, `error` and `denied` replay; `started` with no result,
 * `unrecordable`, and `pending` on a synchronous approval port are in doubt
 * (a rerun repeats the attempt that started; a call that never started asks
 * its approval again); `failed` goes on with the next attempt, no sooner
 * than the time it recorded; `pending` on an approval of a paused run waits
 * for its answer.
 */
export function classifyCalls(records: readonly CallRecord[], round: number): Classification {
  const last = new Map<string, CallRecord>();
  const attempts = new Map<string, number>();
  for (const record of records) {
    if (record.round !== round || record.kind === "model") continue;
    last.delete(record.callId); // keep log order by the last record of each call
    last.set(record.callId, record);
    if (record.kind === "started") attempts.set(record.callId, record.attempt ?? 1);
    // A retry of the failed run starts the call's attempts over.
    if (record.kind === "reopened") attempts.delete(record.callId);
  }
  const finished = new Map<string, FinishedCall>();
  const inDoubt = new Map<string, InDoubtCall>();
  const pending = new Map<string, PendingCall>();
  const next = new Map<string, NextAttempt>();
  const decided = new Map<string, CallRef>();
  for (const [callId, record] of last) {
    const attempt = attempts.get(callId) ?? 1;
    if (record.kind === "failed") next.set(callId, { attempt: attempt + 1, notBefore: record.retryAt ?? 0 });
    else if (record.kind === "started" || record.kind === "unrecordable") next.set(callId, { attempt });
    // A rerun goes on from the attempt that started; a call that never started (it waited on an approval port) is
    // made afresh, and asks its approval again.
    else if (record.decision === "rerun" && attempts.has(callId)) next.set(callId, { attempt });
    else if (record.kind === "reopened") next.set(callId, { attempt: 1 });
    const { tool, args } = record;
    if (record.kind === "decided") decided.set(callId, { callId, tool });
    const doubt = (why: InDoubtCall["why"]) =>
      inDoubt.set(callId, { callId, tool, args, idempotencyKey: idempotencyKeyFor(record.runId, callId), why });
    const finish = (outcome: FinishedOutcome) =>
      finished.set(callId, {
        callId,
        tool,
        argsText: canonicalJson(args),
        outcome,
        at: { segment: record.segment, seq: record.seq },
      });
    switch (record.kind) {
      case "done":
        finish({ status: "ok", value: record.result ?? null });
        break;
      case "error":
        finish({ status: "error", error: record.error ?? "", attempts: record.attempt ?? attempt });
        break;
      case "decided":
        // "rerun" goes on as `next` says; a decided result or error is the call's outcome.
        if (record.decision === "result")
          finish({ status: "ok", value: record.result ?? null, ...(record.plain === true ? { plain: true } : {}) });
        else if (record.decision === "error") finish({ status: "error", error: record.error ?? "", attempts: attempt });
        break;
      case "denied":
        finish({ status: "denied", ...(record.reason === undefined ? {} : { reason: record.reason }) });
        break;
      case "started":
        doubt("started with no result");
        break;
      case "unrecordable":
        doubt("result could not be recorded");
        break;
      case "pending":
        if (record.port === true) doubt("was waiting on an approval port");
        else pending.set(callId, { callId, tool, args });
        break;
    }
  }
  const recorded = new Map([...last].map(([callId, record]) => [callId, record.tool]));
  return { finished, inDoubt, pending, next, decided, recorded };
}

/**
 * Plans the rerun of a cut-short round. In-doubt calls of idempotent tools may
 * run again; any other in-doubt call makes `RecoveryNeedsDecision`, raised
 * before any call runs, unless `rerunInDoubt` is set.
 */
export function planReplay(
  runId: string,
  records: readonly CallRecord[],
  round: number,
  registry: ToolRegistry,
  options: { readonly rerunInDoubt?: boolean; readonly forkedFrom?: CopiedFrom | undefined } = {},
): ReplayPlan {
  const classified = classifyCalls(records, round);
  if (options.rerunInDoubt !== true) {
    // A call in doubt copied into a fork was made under its original's idempotency key: a rerun under the fork's is
    // a new call to the tool's system, so even an idempotent tool's waits for a decision, told the original's key.
    const copied = copiedInDoubt(records, classified.inDoubt, options.forkedFrom);
    const blocking = [...classified.inDoubt.values()]
      .filter((call) => copied.has(call.callId) || !(registry.has(call.tool) && registry.get(call.tool).idempotent))
      .map((call) => (copied.has(call.callId) ? { ...call, idempotencyKey: copied.get(call.callId) as string } : call));
    if (blocking.length > 0) throw new RecoveryNeedsDecision(runId, blocking);
  }
  return { round, ...classified };
}

/** Where a fork's records came from: its original, and the fork's first segment of its own (`ForkedFrom`). */
interface CopiedFrom {
  readonly runId: string;
  readonly segment?: number | undefined;
}

/**
 * The calls in doubt a fork copied from its original (their last record of a
 * segment below the fork's own), each with the original's idempotency key.
 */
function copiedInDoubt(
  records: readonly CallRecord[],
  inDoubt: ReadonlyMap<string, InDoubtCall>,
  forkedFrom: CopiedFrom | undefined,
): ReadonlyMap<string, string> {
  const copied = new Map<string, string>();
  const below = forkedFrom?.segment;
  if (forkedFrom === undefined || below === undefined) return copied;
  const last = new Map<string, number>();
  for (const record of records) last.set(record.callId, record.segment);
  for (const callId of inDoubt.keys())
    if ((last.get(callId) ?? below) < below) copied.set(callId, idempotencyKeyFor(forkedFrom.runId, callId));
  return copied;
}
