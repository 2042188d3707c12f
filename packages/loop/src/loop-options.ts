import type {
  ApprovalAnswers,
  ApprovalPort,
  EventSink,
  Identity,
  InDoubtDecisions,
  LeaseOptions,
  RunVersion,
  ValueCodec,
} from "@durable/core";
import {
  type OptionTable,
  type QueueStart,
  RECOVER_OPTIONS,
  RUNNER_OPTIONS,
  type RunnerOptions,
} from "@durable/core/runner";
import type { EventToolOptions } from "./event-tool.js";
import type { LoopStopCondition } from "./loop-program.js";

/** What every entry point takes. */
export interface LoopStoreOptions extends RunnerOptions {
  /** The loop's name in the store (its "flow"); default `"tool-loop"`. */
  readonly name?: string;
  /**
   * The version of this loop's code (`"2026-12-05"` or a number): every run records the version it started on, and
   * only a worker given that version goes on with it (see docs/protocol.md, "Versions").
   */
  readonly version?: RunVersion;
  /** The end user, thread and principal; sealed in, and checked on recovery and resume. */
  readonly ctx?: Identity;
  readonly events?: EventSink;
  /** This worker's leases on the loops it drives: its id (default `workerId()`) and their length (default 30 s). */
  readonly lease?: LeaseOptions;
  /**
   * How tool results that are not plain JSON (a `Date`, a `Map`, a `BigInt`) are stored, e.g. superjson's
   * `serialize`/`deserialize`; the same on every worker. The model gets the decoded result as JSON text.
   */
  readonly codec?: ValueCodec;
  /** A synchronous approval port for `approval: true` tools, instead of pausing. */
  readonly approvals?: ApprovalPort;
  /** Run calls in doubt again instead of raising `RecoveryNeedsDecision`. */
  readonly rerunInDoubt?: boolean;
  /** Claim the loop even while another worker's lease on it is live (that worker is fenced): for operators who know it is gone. */
  readonly takeOver?: boolean;
  /**
   * What a tool that throws (on its last attempt) does. Its error is stored
   * as the call's outcome either way, so replay gives the same error and the
   * tool does not run again. `"model"` (the default) gives it to the model as
   * the tool's result (`error: <name>: <message>`, `isError: true`); `"fail"`
   * fails the run with `ToolFailed`, as in a flow.
   */
  readonly toolErrors?: "model" | "fail";
  /**
   * Ends a turn before the model is asked again once any condition holds,
   * checked after each tool round with the turn's steps (AI SDK's
   * `stepCountIs(n)` and `hasToolCall(name)` work). The same on every worker.
   */
  readonly stopWhen?: LoopStopCondition | readonly LoopStopCondition[];
  /**
   * Gives the model a tool of this name (letters, digits, `_` and `-`, not a
   * registered tool's) that waits, durably: `{ "seconds": n }` or `{ "until":
   * "<ISO 8601 time>" }`. The loop is saved asleep with the call pinned, a
   * worker wakes it then, and the call's result says until when it slept.
   * Every worker serving the loop must be given the same name.
   */
  readonly sleepTool?: string;
  /**
   * Gives the model tools that wait, durably, for an event sent to the run
   * (`sendEvent`), by tool name (as `sleepTool` is named, and no other
   * tool's): `{ await_payment: { event: "paid", timeoutMs: 3_600_000 } }`
   * waits for `paid`; `{ wait_for_event: { events: ["paid", "shipped"] } }`
   * waits for the one the model names (`{ "event": "paid" }`). The loop is
   * saved waiting with the call pinned, the event (or the timeout) wakes it,
   * and the call's result is the event's payload, or `timed out after <n> s`.
   * The store must take events. Every worker serving the loop must be given
   * the same tools.
   */
  readonly eventTools?: Readonly<Record<string, EventToolOptions>>;
}

/** Options of `runToolLoop`. */
export interface ToolLoopOptions extends LoopStoreOptions {
  /** Default `newRunId()`. With the id of a stored loop, goes on with it: `answers` for a pause, `messages` for a conversation's next turn. */
  readonly runId?: string;
  /**
   * Model calls allowed per turn, across recoveries (a run of one turn: over
   * the whole run); default 20. A conversation's next message may set a new one.
   */
  readonly maxSteps?: number;
  /** Answers to the pending approvals of a paused loop, by call id. */
  readonly answers?: ApprovalAnswers;
  /**
   * A conversation: when a turn stops, the run waits for the next user
   * message (result `awaiting-user`, saved paused) instead of ending; give it
   * with `runToolLoop(model, registry, [message], { runId })`. Sealed with the run.
   */
  readonly conversation?: boolean;
}

/** Options of `startToolLoop`. */
export interface StartToolLoopOptions extends LoopStoreOptions, QueueStart {
  /** Default `newRunId()`. */
  readonly runId?: string;
  /** Model calls allowed per turn, across recoveries; default 20. */
  readonly maxSteps?: number;
  /** A conversation (`ToolLoopOptions.conversation`): its handle's `result()` waits until the run ends, not for a turn. */
  readonly conversation?: boolean;
  /**
   * What a run id that exists already gives: its handle when it is a loop of
   * this name (`"handle"`, the default: a retried start starts nothing new),
   * or `CheckpointConflict` always (`"error"`).
   */
  readonly ifExists?: "handle" | "error";
}

/** Options of `recoverToolLoop`, `retryToolLoop` and `streamRecoveredToolLoop`. */
export interface RecoverToolLoopOptions extends LoopStoreOptions {
  /**
   * Decisions on calls in doubt, by call id (`RecoveryNeedsDecision.calls`),
   * recorded in the call log with `by` before anything acts on them.
   */
  readonly decide?: InDoubtDecisions;
  /** Who decides, recorded with each decision (default: the worker's lease owner). */
  readonly by?: string;
  /** Gives the loop up when aborted: its lease is released, and it stops before its next save. */
  readonly signal?: AbortSignal;
}

/** Options of `recoverAllToolLoops`. */
export interface RecoverAllToolLoopsOptions extends LoopStoreOptions {
  /** How many loops are recovered at once (default 8). */
  readonly concurrency?: number;
}

// Each entry point's options, each listed once (`toolErrors`, `stopWhen` and `maxSteps` are checked by their readers).
const LOOP_STORE_OPTIONS: OptionTable<LoopStoreOptions> = {
  ...RUNNER_OPTIONS,
  name: "string",
  version: true,
  ctx: true,
  approvals: "function",
  rerunInDoubt: "boolean",
  takeOver: "boolean",
  toolErrors: true,
  stopWhen: true,
  sleepTool: "string",
  eventTools: "object",
};
const TOOL_LOOP_OPTIONS: OptionTable<ToolLoopOptions> = {
  ...LOOP_STORE_OPTIONS,
  runId: "string",
  maxSteps: true,
  answers: "object",
  conversation: "boolean",
};
const START_TOOL_LOOP_OPTIONS: OptionTable<StartToolLoopOptions> = {
  ...LOOP_STORE_OPTIONS,
  runId: "string",
  maxSteps: true,
  conversation: "boolean",
  ifExists: "string",
  queue: "object",
  priority: true,
  concurrencyKey: true,
};
const RECOVER_TOOL_LOOP_OPTIONS: OptionTable<RecoverToolLoopOptions> = { ...LOOP_STORE_OPTIONS, ...RECOVER_OPTIONS };
const RECOVER_ALL_OPTIONS: OptionTable<RecoverAllToolLoopsOptions> = { ...LOOP_STORE_OPTIONS, concurrency: true };

/** An entry point of the loop, named as its messages name it. */
export type LoopEntry =
  | "runToolLoop"
  | "streamToolLoop"
  | "startToolLoop"
  | "recoverToolLoop"
  | "retryToolLoop"
  | "streamRecoveredToolLoop"
  | "recoverAllToolLoops"
  | "cancelToolLoop"
  | "servedToolLoops"
  | "readToolLoop"
  | "followToolLoop";

/** The options each entry point of the loop takes, by its name (each takes what every entry point does, at least). */
export const LOOP_ENTRIES: Readonly<Record<LoopEntry, OptionTable<LoopStoreOptions>>> = {
  runToolLoop: TOOL_LOOP_OPTIONS,
  streamToolLoop: TOOL_LOOP_OPTIONS,
  startToolLoop: START_TOOL_LOOP_OPTIONS,
  recoverToolLoop: RECOVER_TOOL_LOOP_OPTIONS,
  retryToolLoop: RECOVER_TOOL_LOOP_OPTIONS,
  streamRecoveredToolLoop: RECOVER_TOOL_LOOP_OPTIONS,
  recoverAllToolLoops: RECOVER_ALL_OPTIONS,
  cancelToolLoop: LOOP_STORE_OPTIONS,
  servedToolLoops: LOOP_STORE_OPTIONS,
  readToolLoop: LOOP_STORE_OPTIONS,
  // Its own options (`from`, `pollMs`, `signal`) are taken off before the rest is checked.
  followToolLoop: LOOP_STORE_OPTIONS,
};
