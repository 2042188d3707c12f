import {
  type ApprovalPort,
  CheckpointNotFound,
  type ApprovalAnswers,
  type EventSink,
  Executor,
  type Identity,
  InvalidInput,
  type LeaseOptions,
  newRunId,
  type StorageOptions,
  type ToolRegistry,
  type ValueCodec,
} from "@durable/core";
import { leaseTerms, RunDriver, runStorage, type OpenedRun } from "@durable/core/runner";
import { checkLoopArgs, readInputMessages } from "./check-args.js";
import type { LoopData } from "./loop-data.js";
import { loopProgram, type LoopStopCondition } from "./loop-program.js";
import type { LoopAwaitingUser, LoopDone, LoopResult } from "./loop-result.js";
import type { Message } from "./message.js";
import type { LoopModel } from "./model.js";
import type { PartSink } from "./stream-parts.js";

/** What every entry point takes. */
export interface LoopStoreOptions extends StorageOptions {
  /** The loop's name in the store (its "flow"); default `"tool-loop"`. */
  readonly name?: string;
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

/**
 * Runs an LLM tool loop durably. The history is saved after each model reply
 * (its tool calls are pinned: recovery never asks the model again for a saved
 * reply) and after the tool results. A reply's tool calls run concurrently,
 * each through the call log. With the `runId` of a stored loop, resumes it:
 * a loop paused for approvals with `answers`, a conversation that awaits
 * the user with `messages` (its next turn, same run id and history).
 */
export function runToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  messages: readonly Message[],
  options: ToolLoopOptions,
): Promise<LoopResult> {
  return startOrContinue("runToolLoop", model, registry, messages, options, undefined);
}

/** `runToolLoop` for `where`, its stream parts to `sink`. */
export async function startOrContinue(
  where: string,
  model: LoopModel,
  registry: ToolRegistry,
  messages: readonly Message[],
  options: ToolLoopOptions,
  sink: PartSink,
): Promise<LoopResult> {
  const driver = loopDriver(where, model, registry, options, sink);
  const history = readInputMessages(where, messages);
  const maxSteps = readMaxSteps(where, options.maxSteps);
  const stored =
    options.runId === undefined ? undefined : await driver.open(options.runId, options.ctx).catch(ifNotFound);
  if (stored !== undefined) return goOn(where, driver, stored, history, maxSteps, options);
  const runId = options.runId ?? newRunId();
  sink?.({ type: "run-start", runId, recovered: false, messages: history });
  const data: LoopData = {
    messages: history,
    stage: "start",
    modelCalls: 0,
    maxSteps: maxSteps ?? 20,
    steps: [],
    turn: 1,
    turnStart: 0,
    conversation: options.conversation === true,
  };
  return driver.start(data, { ...options, runId });
}

/** A stored loop goes on: a paused one with answers, a conversation that awaits the user with its next messages. */
function goOn(
  where: string,
  driver: LoopDriver,
  stored: OpenedRun<LoopData>,
  history: readonly Message[],
  maxSteps: number | undefined,
  options: ToolLoopOptions,
): Promise<LoopResult> {
  const { latest, envelope } = stored;
  const data = envelope.program;
  const awaitsUser = latest.status === "paused" && envelope.pending.length === 0;
  if (!awaitsUser) {
    if (history.length > 0)
      throw new InvalidInput(
        `${where}: run ${JSON.stringify(latest.runId)} is ${latest.status === "paused" ? "paused for approvals: resume it with answers" : "not waiting for a message"}, and messages are given; its history is its own.`,
      );
    return driver.resume(stored, options.answers ?? {}, options);
  }
  if (history.length === 0)
    throw new InvalidInput(
      `${where}: conversation ${JSON.stringify(latest.runId)} awaits the next user message: give it in messages.`,
    );
  if (options.answers !== undefined && Object.keys(options.answers).length > 0)
    throw new InvalidInput(`${where}: conversation ${JSON.stringify(latest.runId)} has no approvals to answer.`);
  const { stopped: _stopped, ...rest } = data;
  const next: LoopData = {
    ...rest,
    messages: [...data.messages, ...history],
    stage: "start",
    maxSteps: maxSteps ?? data.maxSteps,
    turn: data.turn + 1,
    turnStart: data.modelCalls,
  };
  return driver.resume(stored, {}, options, next);
}

function readMaxSteps(where: string, maxSteps: unknown): number | undefined {
  if (maxSteps === undefined) return undefined;
  if (typeof maxSteps !== "number" || !Number.isSafeInteger(maxSteps) || maxSteps < 1)
    throw new InvalidInput(`${where}: maxSteps must be a whole number ≥ 1, not ${String(maxSteps)}.`);
  return maxSteps;
}

/** Goes on with a tool loop from its last checkpoint on any worker; a paused loop comes back paused. */
export async function recoverToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  options: LoopStoreOptions,
): Promise<LoopResult> {
  return loopDriver("recoverToolLoop", model, registry, options, undefined).recover(runId, options);
}

/**
 * Goes on with a failed tool loop (a model that threw, a tool error with
 * `toolErrors: "fail"`) from its last checkpoint: the failed tool calls run
 * again, the rest replays. `CheckpointConflict` for a loop that did not fail,
 * or was cancelled.
 */
export async function retryToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  options: LoopStoreOptions,
): Promise<LoopResult> {
  return loopDriver("retryToolLoop", model, registry, options, undefined).retry(runId, options);
}

/** Cancels a tool loop that has not ended, even one a worker drives (it is fenced); returns the step it was saved as. */
export async function cancelToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  reason: string,
  options: LoopStoreOptions,
): Promise<number> {
  return loopDriver("cancelToolLoop", model, registry, options, undefined).cancel(runId, reason, options);
}

/** Recovers every claimable tool loop of the name (`options.name`; never one another worker holds), mapping each run id to its result or to the error that stopped it. */
export async function recoverAllToolLoops(
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions & { readonly concurrency?: number },
): Promise<Map<string, LoopResult | Error>> {
  return loopDriver("recoverAllToolLoops", model, registry, options, undefined).recoverAll(options);
}

/** The tool loops of the name (`options.name`) as a `Worker` serves them: their driver. */
export function servedToolLoops(model: LoopModel, registry: ToolRegistry, options: LoopStoreOptions): LoopDriver {
  return loopDriver("servedToolLoops", model, registry, options, undefined);
}

function ifNotFound(error: unknown): undefined {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
}

type LoopDriver = RunDriver<LoopData, LoopDone | LoopAwaitingUser>;

/**
 * The driver of one loop, its arguments checked for `where` first (`InvalidInput` before anything is read);
 * its stream parts go to `sink`.
 */
export function loopDriver(
  where: string,
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions,
  sink: PartSink,
): LoopDriver {
  checkLoopArgs(where, model, registry, options);
  const { stopWhen = [] } = options;
  const program = loopProgram({
    name: options.name ?? "tool-loop",
    model,
    registry,
    executor: new Executor(registry, options.approvals === undefined ? {} : { approvals: options.approvals }),
    errorsToModel: (options.toolErrors ?? "model") === "model",
    stopWhen: typeof stopWhen === "function" ? [stopWhen] : stopWhen,
    sink,
    // A claim by runToolLoop resumes a pause or a conversation; any other claim recovers a cut-short run.
    recovering: where !== "runToolLoop" && where !== "streamToolLoop",
  });
  return new RunDriver(program, {
    ...runStorage("tool loop", options),
    events: options.events,
    lease: leaseTerms("tool loop", options.lease),
    codec: options.codec,
  });
}
