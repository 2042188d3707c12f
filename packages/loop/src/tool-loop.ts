import {
  CheckpointConflict,
  CheckpointNotFound,
  Executor,
  InvalidInput,
  newRunId,
  type ToolRegistry,
} from "@durable/core";
import { driverOptions, RunDriver, type OpenedRun } from "@durable/core/runner";
import { checkLoopArgs, readInputMessages } from "./check-args.js";
import type { LoopData } from "./loop-data.js";
import { loopProgram } from "./loop-program.js";
import { waitTools } from "./wait-tool.js";
import type {
  LoopEntry,
  LoopStoreOptions,
  RecoverAllToolLoopsOptions,
  RecoverToolLoopOptions,
  ToolLoopOptions,
} from "./loop-options.js";
import type { LoopAwaitingUser, LoopDone, LoopResult } from "./loop-result.js";
import type { Message } from "./message.js";
import type { LoopModel } from "./model.js";
import type { PartSink } from "./stream-parts.js";

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
  where: "runToolLoop" | "streamToolLoop",
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
    options.runId === undefined
      ? undefined
      : await driver.open(options.runId, options.ctx).catch(async (error: unknown) => {
          if (history.length > 0) await refuseEndedMessage(where, driver, error);
          return ifNotFound(error);
        });
  if (stored !== undefined) return goOn(where, driver, stored, history, maxSteps, options);
  const runId = options.runId ?? newRunId();
  sink?.({ type: "run-start", runId, recovered: false, messages: history });
  return driver.start(firstLoopData(history, maxSteps, options.conversation), { ...options, runId });
}

/** What step 0 of a new loop holds: its first messages, and the turn's model calls allowed (default 20). */
export function firstLoopData(history: Message[], maxSteps: number | undefined, conversation?: boolean): LoopData {
  return {
    messages: history,
    stage: "start",
    modelCalls: 0,
    maxSteps: maxSteps ?? 20,
    steps: [],
    turn: 1,
    turnStart: 0,
    conversation: conversation === true,
  };
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

export function readMaxSteps(where: string, maxSteps: unknown): number | undefined {
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
  options: RecoverToolLoopOptions,
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
  options: RecoverToolLoopOptions,
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
  options: RecoverAllToolLoopsOptions,
): Promise<Map<string, LoopResult | Error>> {
  return loopDriver("recoverAllToolLoops", model, registry, options, undefined).recoverAll(options);
}

/** The tool loops of the name (`options.name`) as a `Worker` serves them: their driver. */
export function servedToolLoops(model: LoopModel, registry: ToolRegistry, options: LoopStoreOptions): LoopDriver {
  return loopDriver("servedToolLoops", model, registry, options, undefined);
}

/**
 * A next message to a loop that ended `done` (one not started as a
 * conversation ends after its first turn): `CheckpointConflict` saying how to
 * start a conversation, instead of only that the run ended.
 */
async function refuseEndedMessage(where: string, driver: LoopDriver, error: unknown): Promise<void> {
  if (!(error instanceof CheckpointConflict)) return;
  // The row `open` just verified: read again for its plain columns, to tell an ended loop of this name from another refusal.
  const latest = await driver.store.latest(error.runId).catch(() => undefined);
  if (latest?.status !== "done" || latest.kind !== "loop" || latest.name !== driver.name) return;
  throw new CheckpointConflict(
    error.runId,
    `the run ended (done), so ${where} cannot give it a next message: a loop takes messages turn after turn only when it was started with \`conversation: true\`. Start one that way, or start a new run for this message.`,
  );
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
  where: LoopEntry,
  model: LoopModel,
  registry: ToolRegistry,
  options: LoopStoreOptions,
  sink: PartSink,
): LoopDriver {
  checkLoopArgs(where, model, registry, options);
  const { stopWhen = [] } = options;
  const program = loopProgram({
    name: options.name ?? "tool-loop",
    version: options.version,
    model,
    registry,
    executor: new Executor(registry, options.approvals === undefined ? {} : { approvals: options.approvals }),
    errorsToModel: (options.toolErrors ?? "model") === "model",
    waitTools: waitTools(options),
    stopWhen: typeof stopWhen === "function" ? [stopWhen] : stopWhen,
    sink,
    // A claim by runToolLoop resumes a pause or a conversation; any other claim recovers a cut-short run.
    recovering: where !== "runToolLoop" && where !== "streamToolLoop",
  });
  return new RunDriver(program, driverOptions("tool loop", options));
}
