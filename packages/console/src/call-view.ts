import type { DurableEvent, JsonValue } from "@durable/core";
import {
  type BoundAnswer,
  type CallRecord,
  type CallRecordKind,
  type Classification,
  idempotencyKeyFor,
} from "@durable/core/runner";
import type { Waiting } from "./waiting.js";

/** What became of a call, in a word: its last record decides. */
export type CallState =
  | "done"
  | "error"
  | "denied"
  | "approved"
  | "in doubt"
  | "running"
  | "waiting on approval"
  | "retrying"
  | "to run again";

/** What happened to a call over the run's life. */
export type CallMark = "ran" | "replayed" | "rerun" | "decided" | "reopened";

/** An operator's decision on the call, as its `decided` record keeps it. */
export interface DecisionView {
  readonly decision: "rerun" | "result" | "error";
  readonly by: string;
  readonly at: string;
  readonly result?: JsonValue;
  readonly error?: string;
}

/** One call as a run's page shows it. */
export interface CallView {
  readonly callId: string;
  readonly tool: string;
  readonly round: number;
  readonly args: JsonValue;
  /** The key its tool got from `idempotencyKey()`: what an operator checks at the tool's system. */
  readonly idempotencyKey: string;
  readonly state: CallState;
  readonly marks: readonly CallMark[];
  readonly result?: JsonValue;
  readonly error?: string;
  /** Attempts that failed and were tried again (`failed` records): what each threw. */
  readonly failures: ReadonlyArray<{ readonly attempt: number; readonly error: string }>;
  /** Attempts started (across every segment). */
  readonly attempts: number;
  readonly decided?: DecisionView;
  /** Its records, oldest first. */
  readonly records: ReadonlyArray<{ readonly segment: number; readonly seq: number; readonly kind: CallRecordKind }>;
  /** How long each attempt ran, in ms, from the events (when an event log is given). */
  readonly durationsMs: readonly number[];
  /** Why it is in doubt (a call of the current round of a running run). */
  readonly inDoubt?: string;
}

/** What a call's state and marks are read against: the run's steps, its current round, the answers its envelope stores, what it waits for. */
export interface CallContext {
  /** A claim whose round is a call's, in a later segment than its outcome, replayed it. */
  readonly steps: ReadonlyArray<{ readonly segment: number; readonly round: number; readonly claim: boolean }>;
  readonly current: Classification;
  /** Answers stored and not yet spent: a pending call answered is approved or denied before a worker acts on it. */
  readonly answers: readonly BoundAnswer[];
  /** A call of the current round with no outcome is in doubt only while the run waits for a decision: under a worker's live lease it runs. */
  readonly waiting: Waiting | undefined;
}

/**
 * One view per call, in the order calls first appear in the log (a loop's
 * `model` records are not calls). Marks: `ran` once a `started` record
 * exists; `rerun` when it started in more than one segment (it ran again
 * after a claim); `replayed` when its outcome was stored before a claim that
 * reran its round (the result came from the log); `decided` and
 * `reopened` by their records. Its state says what it is now: a call of the
 * current round with no outcome is `in doubt` when the run waits for a
 * decision and `running` while a worker holds it; a pending call answered is
 * `approved` or `denied` before a worker spends the answer.
 */
export function callViews(
  runId: string,
  records: readonly CallRecord[],
  run: CallContext,
  events: readonly DurableEvent[],
): CallView[] {
  const byCall = new Map<string, CallRecord[]>();
  for (const record of records) {
    if (record.kind === "model") continue;
    const own = byCall.get(record.callId);
    if (own === undefined) byCall.set(record.callId, [record]);
    else own.push(record);
  }
  const durations = durationsByCall(events);
  return [...byCall].map(([callId, own]) => {
    const last = own.at(-1) as CallRecord;
    const started = own.filter((r) => r.kind === "started");
    const outcome = own.findLast(
      (r) => r.kind === "done" || r.kind === "error" || (r.kind === "decided" && r.decision !== "rerun"),
    );
    const decidedRecord = own.findLast((r) => r.kind === "decided");
    const doubt = run.current.inDoubt.get(callId);
    const marks: CallMark[] = [];
    if (started.length > 0) marks.push("ran");
    if (new Set(started.map((r) => r.segment)).size > 1) marks.push("rerun");
    if (
      outcome !== undefined &&
      run.steps.some((s) => s.claim && s.segment > outcome.segment && s.round === last.round)
    )
      marks.push("replayed");
    if (decidedRecord !== undefined) marks.push("decided");
    if (own.some((r) => r.kind === "reopened")) marks.push("reopened");
    const result = outcome?.kind === "done" || outcome?.decision === "result" ? outcome.result : undefined;
    const error = outcome?.kind === "error" || outcome?.decision === "error" ? outcome.error : undefined;
    return {
      callId,
      tool: last.tool,
      round: last.round,
      args: last.args,
      idempotencyKey: idempotencyKeyFor(runId, callId),
      state: stateOf(last, doubt !== undefined, run),
      marks,
      ...(result === undefined ? {} : { result }),
      ...(error === undefined ? {} : { error }),
      failures: own.filter((r) => r.kind === "failed").map((r) => ({ attempt: r.attempt ?? 1, error: r.error ?? "" })),
      attempts: started.length,
      ...(decidedRecord === undefined ? {} : { decided: decisionOf(decidedRecord) }),
      records: own.map(({ segment, seq, kind }) => ({ segment, seq, kind })),
      durationsMs: durations.get(callId) ?? [],
      ...(doubt === undefined || run.waiting?.for !== "decision" ? {} : { inDoubt: doubt.why }),
    };
  });
}

function stateOf(last: CallRecord, inDoubt: boolean, run: CallContext): CallState {
  if (inDoubt) return run.waiting?.for === "decision" ? "in doubt" : "running";
  switch (last.kind) {
    case "done":
      return "done";
    case "error":
      return "error";
    case "pending": {
      if (last.port === true) return "in doubt";
      const answer = run.answers.find((a) => a.callId === last.callId);
      return answer === undefined ? "waiting on approval" : answer.approved ? "approved" : "denied";
    }
    case "denied":
      return "denied";
    case "failed":
      return "retrying";
    case "decided":
      return last.decision === "result" ? "done" : last.decision === "error" ? "error" : "to run again";
    case "reopened":
      return "to run again";
    default:
      return "in doubt";
  }
}

function decisionOf(record: CallRecord): DecisionView {
  return {
    decision: record.decision ?? "rerun",
    by: record.by ?? "",
    at: record.at ?? "",
    ...(record.result === undefined ? {} : { result: record.result }),
    ...(record.error === undefined ? {} : { error: record.error }),
  };
}

/** Each call's attempt durations, in the order the events tell them. */
function durationsByCall(events: readonly DurableEvent[]): Map<string, number[]> {
  const byCall = new Map<string, number[]>();
  for (const event of events) {
    if (event.type !== "call.done" && event.type !== "call.failed" && event.type !== "call.retrying") continue;
    const list = byCall.get(event.call.callId) ?? [];
    list.push(event.durationMs);
    byCall.set(event.call.callId, list);
  }
  return byCall;
}
