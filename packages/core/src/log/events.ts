import type { InDoubtCall } from "../base/errors.js";
import type { RunKind, RunStatus } from "../store/contract.js";

/** A call as events name it. */
export interface CallRef {
  readonly callId: string;
  readonly tool: string;
}

/** Where a tool loop's checkpoint was taken. */
export type LoopStage = "start" | "model-reply" | "tool-results";

interface EventBase {
  readonly runId: string;
  readonly kind: RunKind;
  /** ISO 8601 time the event was made. */
  readonly at: string;
}

/** A checkpoint was stored. */
export interface CheckpointSaved extends EventBase {
  readonly type: "checkpoint.saved";
  readonly step: number;
  readonly status: RunStatus;
  /** The run's name (flows). */
  readonly name?: string;
  /** The loop's stage (tool loops). */
  readonly stage?: LoopStage;
  /** `done` records of the round this checkpoint completes that no call of the round claimed (its code made other calls, e.g. with changed arguments). */
  readonly unreplayed: readonly CallRef[];
}

/**
 * A worker claimed a cut-short run and goes on with it. Emitted right after
 * the claim, once the call log is read and the round is planned, so the lists
 * are the plan: what the log holds for the round the recovery reruns. Both
 * are empty when the run was cut short between rounds (a flow's checkpoint
 * after a superstep, a loop's `start` or `tool-results`).
 */
export interface RunRecovered extends EventBase {
  readonly type: "run.recovered";
  /** The step the claim was saved as. */
  readonly step: number;
  /** The drive that claimed the run: the owner of its lease, `<worker id>#<suffix>`. */
  readonly owner: string;
  /**
   * Finished calls of the rerun round: their results (or recorded errors)
   * come from the log, the tool does not run again. A listed call the round
   * no longer makes (its arguments changed) is reported again, as
   * `unreplayed`, by the round's `checkpoint.saved`.
   */
  readonly replayed: readonly CallRef[];
  /** Calls in doubt that the round runs again: of idempotent tools, or every one with `rerunInDoubt`. */
  readonly rerun: readonly CallRef[];
  /** The claim woke a run asleep or waiting for an event: no worker died, the run's time came (or its event). */
  readonly woke?: true;
  /** Calls of the round an operator decided on (`decide`, `decideCalls`): run again, or given an outcome. */
  readonly decided: readonly CallRef[];
}

/**
 * A recovery (or a resume) claimed a run but stopped before running anything:
 * calls of its round are in doubt and their tools are not idempotent. The run
 * is saved waiting for an operator (claimable listings leave it out): check
 * each call at its system (by its idempotency key), then decide
 * (`decideInDoubt`) or recover with `rerunInDoubt`. `RecoveryNeedsDecision`
 * is thrown with the same calls.
 */
export interface RunNeedsDecision extends EventBase {
  readonly type: "run.needs-decision";
  /** The step the run was saved at, waiting for a decision (the claim's, when that save did not land): an operator's `expectStep`. */
  readonly step: number;
  readonly calls: readonly InDoubtCall[];
}

/** A tool call's `started` record is stored and the tool is about to run. */
export interface CallStarted extends EventBase {
  readonly type: "call.started";
  readonly call: CallRef;
  /** Which attempt, from 1. */
  readonly attempt: number;
}

/** A tool call finished and its result is recorded: it lands with the run's next commit (see docs/protocol.md, Commits). */
export interface CallDone extends EventBase {
  readonly type: "call.done";
  readonly call: CallRef;
  /** The attempt that succeeded, from 1. */
  readonly attempt: number;
  /** How long that attempt ran, in ms. */
  readonly durationMs: number;
}

/** An attempt of a tool threw or timed out, and another follows after `delayMs`: the failure is stored. */
export interface CallRetrying extends EventBase {
  readonly type: "call.retrying";
  readonly call: CallRef;
  /** The error as text: `<name>: <message>`. */
  readonly error: string;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** How long it ran, in ms. */
  readonly durationMs: number;
  /** The wait before the next attempt, in ms. */
  readonly delayMs: number;
}

/** A tool threw (on its last attempt, or an error not worth retrying), and its error is recorded as the call's outcome (it lands with the run's next commit). */
export interface CallFailed extends EventBase {
  readonly type: "call.failed";
  readonly call: CallRef;
  /** The error as text: `<name>: <message>`. */
  readonly error: string;
  /** How many attempts were made. */
  readonly attempt: number;
  /** How long the last attempt ran, in ms. */
  readonly durationMs: number;
}

/** A run paused for approvals. */
export interface RunPaused extends EventBase {
  readonly type: "run.paused";
  readonly step: number;
  readonly approvals: readonly CallRef[];
}

/** A run was saved asleep (`ctx.sleep`): a worker wakes it once `until` (ms since the epoch) passed. */
export interface RunAsleep extends EventBase {
  readonly type: "run.asleep";
  readonly step: number;
  readonly until: number;
  /** The events it waits for (`waitForEvent`), when it waits for any: the next one sent wakes it before `until`. */
  readonly waitsFor?: readonly string[];
}

/** A run ended. */
export interface RunEnded extends EventBase {
  readonly type: "run.done" | "run.failed";
  readonly step: number;
  readonly error?: string;
}

/** A run was cancelled: saved `failed` with `Cancelled: <reason>`; a worker that drove it is fenced. */
export interface RunCancelled extends EventBase {
  readonly type: "run.cancelled";
  readonly step: number;
  readonly reason: string;
}

/** Every event @durable emits. */
export type DurableEvent =
  | CheckpointSaved
  | RunRecovered
  | RunNeedsDecision
  | CallStarted
  | CallDone
  | CallRetrying
  | CallFailed
  | RunPaused
  | RunAsleep
  | RunEnded
  | RunCancelled;

/** Receives events. A sink that throws or rejects never stops a run; the failure is a process warning. */
export type EventSink = (event: DurableEvent) => void | Promise<void>;

/** An event as a runner makes it: the sink receives it with its time, `at`, added. */
export type EventInput = DurableEvent extends infer E ? (E extends DurableEvent ? Omit<E, "at"> : never) : never;

/** Sends an event to a sink, if any. The run never waits on a failing sink. */
export async function emit(sink: EventSink | undefined, event: EventInput): Promise<void> {
  if (sink === undefined) return;
  try {
    await sink({ ...event, at: new Date().toISOString() } as DurableEvent);
  } catch (error) {
    process.emitWarning(`@durable: an event sink failed on ${event.type}: ${String(error)}`);
  }
}

/** One kind of event, by its type: `EventOf<"run.recovered">`. */
export type EventOf<T extends DurableEvent["type"]> = Extract<DurableEvent, { readonly type: T }>;
