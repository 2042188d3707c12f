import type { ParentRef } from "../calls/child-runs.js";
import { CheckpointStoreCorrupt } from "../base/errors.js";
import type { BoundAnswer } from "../calls/approvals.js";
import {
  isArrayOf,
  isCount,
  isJsonObject,
  isRecordOf,
  isString,
  type JsonObject,
  type JsonValue,
} from "../base/json.js";
import type { PendingCall } from "../calls/replay.js";
import type { CallPosition, QueuePlace } from "../store/contract.js";
import { checkQueuePlace, queuePlaceJson } from "../store/queues.js";
import { isRunVersion, type RunVersion } from "./versions.js";
import { isRunTrace, runTraceJson, type RunTrace } from "../telemetry/tracing.js";

/**
 * What every checkpoint of a flow or a tool loop seals as its `data`: the
 * driver's part, the same for both, and the program's own (`program`).
 */
export interface RunEnvelope<P = JsonObject> {
  /**
   * The round the next step works in, from 1: its calls are logged under it.
   * A flow's next superstep; a tool loop's current round (the model reply that
   * opens it, then that reply's tool calls).
   */
  readonly round: number;
  /**
   * Where the round's call records begin in the log (sealed under the key
   * `roundStart`): a recovery reads the log from there. Absent on round 1 and
   * on runs saved by an earlier version: the log is read from its start.
   */
  readonly roundStart?: CallPosition;
  /** Calls waiting on an approval's answer (paused checkpoints). */
  readonly pending: readonly PendingCall[];
  /** Approval answers stored by a resume, spent by the calls of the round (sealed under the key `decisions`). */
  readonly answers: readonly BoundAnswer[];
  /** Why the run failed (failed checkpoints). */
  readonly error?: string;
  /** The run was cancelled (a failed checkpoint that a retry does not go on from). */
  readonly cancelled?: true;
  /**
   * The run sleeps until then (ms since the epoch, by the clock of the worker
   * that put it to sleep): the earliest wake time of its round's sleeps. The
   * store holds its lease for the sleep (`ASLEEP`) until about then.
   */
  readonly asleep?: number;
  /**
   * With `asleep`: the names of the events the round waits for (until
   * `asleep`, its earliest timeout): the store holds the lease for the wait
   * (`WAITING`), and the next event sent releases it.
   */
  readonly waitsFor?: readonly string[];
  /**
   * How many events of each name the run's rounds so far took, by name:
   * those of a name are always its earliest in the inbox, so a wait skips
   * that many. Absent until a round took one.
   */
  readonly taken?: Readonly<Record<string, number>>;
  /**
   * On a child run (`startChild`): its parent's run id and the event its end
   * is sent to the parent as, before the child is saved `done` or `failed`.
   */
  readonly parent?: ParentRef;
  /**
   * Set by an operator's wake (`wakeRun`) on the claim that woke the run: the
   * round's sleeps and wait deadlines recorded before this place in the log
   * are over. Gone when the round is over.
   */
  readonly wokenBefore?: CallPosition;
  /** On a run started on a queue: its place and its queue's limits, as its step-0 row gave them to the store. */
  readonly queue?: QueuePlace;
  /** The version of the code that started the run (or that an operator moved it to: `migrateRun`); absent when that code named none. */
  readonly version?: RunVersion;
  /**
   * On a fork (`forkRun`), from the row that began it on: the run and the
   * step whose history it took up to there.
   */
  readonly forkedFrom?: ForkedFrom;
  /**
   * The run's trace (OpenTelemetry): its start span's context, which parents
   * every attempt, and the latest attempt's, which the next links to. Absent
   * when no SDK recorded its start.
   */
  readonly trace?: RunTrace;
  /** The program's own data: a flow's state and frontier, a loop's history. */
  readonly program: P;
}

/** Where a fork's history comes from: the original run, and its last step the fork took. */
export interface ForkedFrom {
  readonly runId: string;
  readonly step: number;
  /**
   * The fork's first segment of its own: its records of lower segments were
   * copied from the original, so a call in doubt among them was made under
   * the original's idempotency key, and no rerun under the fork's goes on
   * without a decision. Absent on forks an earlier version made.
   */
  readonly segment?: number;
}

/**
 * Reads the envelope out of a verified checkpoint's data, checking every
 * field. Data of another shape (a checkpoint written by an earlier version)
 * is `CheckpointStoreCorrupt`, never misread.
 */
export function readEnvelope(runId: string, data: JsonValue): RunEnvelope {
  const fields = isJsonObject(data) ? data : {};
  const {
    round,
    roundStart,
    pending,
    decisions: answers,
    error,
    cancelled,
    asleep,
    waitsFor,
    taken,
    parent,
    wokenBefore,
    queue,
    version,
    forkedFrom,
    trace,
    program,
  } = fields;
  const ok =
    isCount(round) &&
    round >= 1 &&
    (roundStart === undefined || isPosition(roundStart)) &&
    isArrayOf(pending, isPendingCall) &&
    isArrayOf(answers, isBoundAnswer) &&
    (error === undefined || isString(error)) &&
    (cancelled === undefined || cancelled === true) &&
    (asleep === undefined || isCount(asleep)) &&
    (waitsFor === undefined || isArrayOf(waitsFor, isString)) &&
    (taken === undefined || isRecordOf(taken, isCount)) &&
    (parent === undefined || isParent(parent)) &&
    (wokenBefore === undefined || isPosition(wokenBefore)) &&
    (queue === undefined || isQueuePlace(queue)) &&
    (version === undefined || isRunVersion(version)) &&
    (forkedFrom === undefined || isForkedFrom(forkedFrom)) &&
    (trace === undefined || isRunTrace(trace)) &&
    isJsonObject(program);
  if (!ok)
    throw new CheckpointStoreCorrupt(
      runId,
      "the checkpoint's data is not a run envelope of this version (a run saved by an earlier version? finish it with that version).",
    );
  return {
    round,
    ...(roundStart === undefined ? {} : { roundStart }),
    pending,
    answers,
    ...(error === undefined ? {} : { error }),
    ...(cancelled === true ? { cancelled } : {}),
    ...(asleep === undefined ? {} : { asleep }),
    ...(waitsFor === undefined ? {} : { waitsFor }),
    ...(taken === undefined ? {} : { taken }),
    ...(parent === undefined ? {} : { parent }),
    ...(wokenBefore === undefined ? {} : { wokenBefore }),
    ...(queue === undefined ? {} : { queue }),
    ...(version === undefined ? {} : { version }),
    ...(forkedFrom === undefined ? {} : { forkedFrom }),
    ...(trace === undefined ? {} : { trace }),
    program,
  };
}

/** The envelope as sealed: plain JSON. */
export function envelopeJson(envelope: RunEnvelope): JsonObject {
  const { round, roundStart, pending, answers, error, cancelled, asleep, waitsFor, taken, parent } = envelope;
  const { wokenBefore, queue, version, forkedFrom, trace, program } = envelope;
  return {
    round,
    ...(roundStart === undefined ? {} : { roundStart: { segment: roundStart.segment, seq: roundStart.seq } }),
    pending: pending.map(({ callId, tool, args }) => ({ callId, tool, args })),
    decisions: answers.map(({ callId, argsText, approved, reason }) => ({
      callId,
      argsText,
      approved,
      ...(reason === undefined ? {} : { reason }),
    })),
    ...(error === undefined ? {} : { error }),
    ...(cancelled === true ? { cancelled } : {}),
    ...(asleep === undefined ? {} : { asleep }),
    ...(waitsFor === undefined ? {} : { waitsFor: [...waitsFor] }),
    ...(taken === undefined ? {} : { taken: { ...taken } }),
    ...(parent === undefined ? {} : { parent: { runId: parent.runId, event: parent.event } }),
    ...(wokenBefore === undefined ? {} : { wokenBefore: { segment: wokenBefore.segment, seq: wokenBefore.seq } }),
    ...(queue === undefined ? {} : { queue: queuePlaceJson(queue) }),
    ...(version === undefined ? {} : { version }),
    ...(forkedFrom === undefined ? {} : { forkedFrom: forkedFromJson(forkedFrom) }),
    ...(trace === undefined ? {} : { trace: runTraceJson(trace) }),
    program,
  };
}

function isQueuePlace(value: JsonValue): value is JsonObject & QueuePlace {
  try {
    checkQueuePlace(value as unknown as QueuePlace);
    return isJsonObject(value);
  } catch {
    return false;
  }
}

function isForkedFrom(value: JsonValue): value is JsonObject & ForkedFrom {
  const segment = isJsonObject(value) ? value["segment"] : undefined;
  return (
    isJsonObject(value) &&
    isString(value["runId"]) &&
    isCount(value["step"]) &&
    (segment === undefined || isCount(segment))
  );
}

function forkedFromJson({ runId, step, segment }: ForkedFrom): JsonObject {
  return { runId, step, ...(segment === undefined ? {} : { segment }) };
}

function isParent(value: JsonValue): value is JsonObject & ParentRef {
  return isJsonObject(value) && isString(value["runId"]) && isString(value["event"]);
}

function isPosition(value: JsonValue): value is JsonObject & CallPosition {
  return isJsonObject(value) && isCount(value["segment"]) && isCount(value["seq"]);
}

function isPendingCall(value: JsonValue): value is JsonObject & PendingCall {
  return isJsonObject(value) && isString(value["callId"]) && isString(value["tool"]) && value["args"] !== undefined;
}

function isBoundAnswer(value: JsonValue): value is JsonObject & BoundAnswer {
  return (
    isJsonObject(value) &&
    isString(value["callId"]) &&
    isString(value["argsText"]) &&
    typeof value["approved"] === "boolean" &&
    (value["reason"] === undefined || isString(value["reason"]))
  );
}

/** What a new run's step 0 records besides its program's data: a child's parent, a queued run's place, its code's version, its trace. */
export interface FirstTerms {
  readonly parent?: ParentRef | undefined;
  readonly queue?: QueuePlace | undefined;
  readonly version?: RunVersion | undefined;
  readonly trace?: RunTrace | undefined;
}

/** The envelope of a new run's step 0: round 1, nothing pending or answered, and what `terms` give. */
export function firstEnvelope<P>(program: P, { parent, queue, version, trace }: FirstTerms = {}): RunEnvelope<P> {
  return {
    round: 1,
    pending: [],
    answers: [],
    ...(parent === undefined ? {} : { parent }),
    ...(queue === undefined ? {} : { queue }),
    ...(version === undefined ? {} : { version }),
    ...(trace === undefined ? {} : { trace }),
    program,
  };
}
