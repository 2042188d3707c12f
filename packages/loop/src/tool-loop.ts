import {
  type ApprovalPort,
  CheckpointNotFound,
  type Decisions,
  type EventSink,
  Executor,
  type Identity,
  InvalidInput,
  type LeaseOptions,
  type PausedResult,
  type StorageOptions,
  InvalidToolArgs,
  ToolFailed,
  type ToolRegistry,
  type ValueCodec,
} from "@durable/core";
import {
  type CallRecord,
  type CallOutcome,
  type CallScope,
  canonicalCopy,
  faultPoint,
  leaseTerms,
  RunDriver,
  type RunProgram,
  runStorage,
  type StepContext,
  type StepOutcome,
} from "@durable/core/runner";
import { checkLoopArgs, readInputMessages } from "./check-args.js";
import { toolSpecs } from "./tool-specs.js";
import { loopDataJson, readLoopData, type LoopData } from "./loop-data.js";
import { readMessage, type LoopModel, type Message, type ModelReply, type ToolSpec } from "./model.js";

/** A tool loop that is done. */
export interface LoopDone {
  readonly status: "done";
  readonly runId: string;
  readonly step: number;
  readonly messages: readonly Message[];
  /** The model's last text. */
  readonly text: string;
  /** `final`: the model answered with no tool call; `max-steps`: it was called `maxSteps` times. */
  readonly stopped: "final" | "max-steps";
}

/** Where a tool loop stands when it returns. */
export type LoopResult = LoopDone | PausedResult;

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
}

/** Options of `runToolLoop`. */
export interface ToolLoopOptions extends LoopStoreOptions {
  /** Default `newRunId()`. With the id of a paused loop, resumes it with `decisions`. */
  readonly runId?: string;
  /** Model calls allowed over the whole run, across recoveries; default 20. */
  readonly maxSteps?: number;
  /** Decisions for the pending approvals of a paused loop, by call id. */
  readonly decisions?: Decisions;
}

/**
 * Runs an LLM tool loop durably. The history is saved after each model reply
 * (its tool calls are pinned: recovery never asks the model again for a saved
 * reply) and after the tool results. A reply's tool calls run concurrently,
 * each through the call log. With the `runId` of a stored loop, resumes it
 * with `decisions` instead.
 */
export async function runToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  messages: readonly Message[],
  options: ToolLoopOptions,
): Promise<LoopResult> {
  const driver = loopDriver("runToolLoop", model, registry, options);
  const history = readInputMessages("runToolLoop", messages);
  const stored =
    options.runId === undefined ? undefined : await driver.open(options.runId, options.ctx).catch(ifNotFound);
  if (stored !== undefined) return driver.resume(stored, options.decisions ?? {}, options);
  const maxSteps = options.maxSteps ?? 20;
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1)
    throw new InvalidInput(`maxSteps must be a whole number ≥ 1, not ${maxSteps}.`);
  return driver.start({ messages: history, stage: "start", modelCalls: 0, maxSteps }, options);
}

/** Goes on with a tool loop from its last checkpoint on any worker; a paused loop comes back paused. */
export async function recoverToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  options: LoopStoreOptions,
): Promise<LoopResult> {
  return loopDriver("recoverToolLoop", model, registry, options).recover(runId, options);
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
  return loopDriver("retryToolLoop", model, registry, options).retry(runId, options);
}

/** Cancels a tool loop that has not ended, even one a worker drives (it is fenced); returns the step it was saved as. */
export async function cancelToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  reason: string,
  options: LoopStoreOptions,
): Promise<number> {
  return loopDriver("cancelToolLoop", model, registry, options).cancel(runId, reason, options);
}

/** Recovers every claimable tool loop of the name (`options.name`; never one another worker holds), mapping each run id to its result or to the error that stopped it. */
export async function recoverAllToolLoops(
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions & { readonly concurrency?: number },
): Promise<Map<string, LoopResult | Error>> {
  return loopDriver("recoverAllToolLoops", model, registry, options).recoverAll(options);
}

/** The tool loops of the name (`options.name`) as a `Worker` serves them: their driver. */
export function servedToolLoops(
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions,
): RunDriver<LoopData, LoopDone> {
  return loopDriver("servedToolLoops", model, registry, options);
}

function ifNotFound(error: unknown): undefined {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
}

/**
 * The driver of one loop, its arguments checked for `where` first (`InvalidInput` before anything is read):
 * one step is a model reply, or the tool round of the last reply.
 */
function loopDriver(
  where: string,
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions,
): RunDriver<LoopData, LoopDone> {
  checkLoopArgs(where, model, registry, options);
  const toModel = (options.toolErrors ?? "model") === "model";
  const executor = new Executor(registry, options.approvals === undefined ? {} : { approvals: options.approvals });
  const specs = toolSpecs(registry);
  const program: RunProgram<LoopData, LoopDone> = {
    kind: "loop",
    name: options.name ?? "tool-loop",
    registry,
    read: readLoopData,
    write: loopDataJson,
    claimed: withModelCalls,
    step: (data, context) =>
      data.stage === "model-reply"
        ? toolRound(executor, data, context.scope, toModel)
        : modelReply(model, specs, data, context),
    result: (data, { runId, step }) => {
      const last = data.messages.findLast((m) => m.role === "assistant");
      return {
        status: "done",
        runId,
        step,
        messages: data.messages,
        text: last?.content ?? "",
        stopped: data.stopped ?? "final",
      };
    },
    saved: (data) => ({ stage: data.stage }),
  };
  return new RunDriver(program, {
    ...runStorage("tool loop", options),
    events: options.events,
    lease: leaseTerms("tool loop", options.lease),
    codec: options.codec,
  });
}

/**
 * The loop's data with every model call the log records counted: a worker
 * that died while the model answered made a call its checkpoint never saw.
 */
function withModelCalls(data: LoopData, records: readonly CallRecord[]): LoopData {
  const made = records.filter((record) => record.kind === "model").length;
  return made > data.modelCalls ? { ...data, modelCalls: made } : data;
}

/** Asks the model for its next reply, which opens the round; a reply with no tool call ends the loop, as does `maxSteps`. */
async function modelReply(
  model: LoopModel,
  specs: readonly ToolSpec[],
  data: LoopData,
  { log, round }: StepContext,
): Promise<StepOutcome<LoopData>> {
  if (data.modelCalls >= data.maxSteps)
    return { paused: false, data: { ...data, stopped: "max-steps" }, roundOver: false, done: true };
  // Stored before the model is asked, so maxSteps bounds the calls made, crashes included.
  await log.append({ round, callId: `model:${data.modelCalls + 1}`, tool: "model", kind: "model", args: null });
  faultPoint("model.before-call");
  const message = pinned(await model.reply(data.messages, specs));
  const next: LoopData = {
    ...data,
    messages: [...data.messages, message],
    modelCalls: data.modelCalls + 1,
    stage: "model-reply",
  };
  if (message.role !== "assistant" || message.toolCalls === undefined)
    return { paused: false, data: { ...next, stopped: "final" }, roundOver: false, done: true };
  return { paused: false, data: next, roundOver: false, done: false };
}

/** The model's reply as the history keeps it (plain JSON, as replay gives it); a reply of another shape is `InvalidInput`. */
function pinned(reply: ModelReply): Message {
  const calls: unknown = reply?.toolCalls;
  const said = {
    role: "assistant",
    content: reply?.text,
    ...(Array.isArray(calls) && calls.length > 0 ? { toolCalls: calls } : {}),
  };
  const message = Array.isArray(calls) ? readMessage(canonicalCopy(said, "the model's reply")) : undefined;
  if (message === undefined)
    throw new InvalidInput(
      "The model's reply must be { text: string, toolCalls: [{ id: string, name: string, args }] }.",
    );
  return message;
}

/**
 * Runs the pinned tool calls of the last reply concurrently, each through the
 * call log; pauses when one waits on an approval. A denial, an unknown tool
 * and (with `toolErrors: "model"`) a tool's error go back to the model as the
 * call's result.
 */
async function toolRound(
  executor: Executor,
  data: LoopData,
  scope: CallScope,
  errorsToModel: boolean,
): Promise<StepOutcome<LoopData>> {
  const last = data.messages.at(-1);
  const calls = last?.role === "assistant" ? (last.toolCalls ?? []) : [];
  const round = Promise.all(
    calls.map(async (call): Promise<Message | undefined> => {
      const reply = (content: string, isError = false): Message => ({
        role: "tool",
        toolCallId: call.id,
        name: call.name,
        content,
        ...(isError ? { isError } : {}),
      });
      if (!executor.registry.has(call.name))
        return reply(`error: there is no tool named ${JSON.stringify(call.name)}`, true);
      let outcome: CallOutcome;
      try {
        outcome = await executor.call(scope, call.id, call.name, call.args);
      } catch (error) {
        // Arguments the tool's schema refuses: nothing ran or was recorded, and the model is told why.
        if (error instanceof InvalidToolArgs) return reply(`error: ${error.message}`, true);
        throw error;
      }
      switch (outcome.status) {
        case "pending":
          return undefined;
        case "denied":
          return reply(`denied${outcome.reason === undefined ? "" : `: ${outcome.reason}`}`);
        case "error":
          if (!errorsToModel)
            throw new ToolFailed(call.name, outcome.error, outcome.attempts, { cause: outcome.cause });
          return reply(`error: ${outcome.error}`, true);
        case "ok":
          return reply(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value));
      }
    }),
  );
  let results: Awaited<typeof round>;
  try {
    results = await round;
  } finally {
    await scope.settled(); // a call left running when another threw lands first
  }
  if (!results.every((result) => result !== undefined)) return { paused: true };
  return {
    paused: false,
    data: { ...data, messages: [...data.messages, ...results], stage: "tool-results" },
    roundOver: true,
    done: false,
  };
}
