import type { RunKind, RunStatus } from "./store.js";

/** A call as events name it. */
export interface CallRef {
  readonly callId: string;
  readonly tool: string;
}

/** Where a tool loop's checkpoint was taken. */
export type LoopStage = "start" | "model-reply" | "tool-results" | "resume";

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
  /** The flow's name (flows). */
  readonly flow?: string;
  /** The loop's stage (tool loops). */
  readonly stage?: LoopStage;
  /** `done` records of the round this checkpoint completes that no call of the round claimed (its code made other calls, e.g. with changed arguments). */
  readonly unreplayed: readonly CallRef[];
}

/** A worker claimed a cut-short run and went on with it. */
export interface RunRecovered extends EventBase {
  readonly type: "run.recovered";
  /** The step the claim was saved as. */
  readonly step: number;
  /** Calls whose results came from the log. */
  readonly replayed: readonly CallRef[];
  /** Calls in doubt that ran again (idempotent tools, or `rerunInDoubt`). */
  readonly rerun: readonly CallRef[];
}

/** A tool call's `started` record is stored and the tool is about to run. */
export interface CallStarted extends EventBase {
  readonly type: "call.started";
  readonly call: CallRef;
}

/** A tool call finished and its result is stored. */
export interface CallDone extends EventBase {
  readonly type: "call.done";
  readonly call: CallRef;
}

/** A run paused for approvals. */
export interface RunPaused extends EventBase {
  readonly type: "run.paused";
  readonly step: number;
  readonly approvals: readonly CallRef[];
}

/** A run ended. */
export interface RunEnded extends EventBase {
  readonly type: "run.done" | "run.failed";
  readonly step: number;
  readonly error?: string;
}

/** Every event @durable emits. */
export type DurableEvent = CheckpointSaved | RunRecovered | CallStarted | CallDone | RunPaused | RunEnded;

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
