import { CheckpointStoreCorrupt, type JsonValue } from "@durable/core";
import {
  deepFreeze,
  isArrayOf,
  isCount,
  isJsonObject,
  isString,
  type JsonObject,
  type LoopStage,
} from "@durable/core/runner";
import { messageJson, readFromSeal, readMessage, type Message } from "./message.js";
import { readUsage, usageJson, type ModelUsage } from "./usage.js";

/** Why a turn stopped: the model answered with no tool call, `maxSteps` ran out, or a `stopWhen` condition held. */
export type StopReason = "final" | "max-steps" | "stop-condition";

/** One model reply of the run, as saved: where it is in the history, and what the provider said of it. */
export interface LoopStep {
  /** The index of the reply (an assistant message) in `messages`. */
  readonly message: number;
  /** The turn it answered in. */
  readonly turn: number;
  readonly usage?: ModelUsage;
  readonly finishReason?: string;
  /** The provider's response metadata (id, model id, timestamp), as JSON. */
  readonly response?: JsonObject;
}

/** What a tool loop seals into each checkpoint as its own data (the driver's envelope holds the round, pending approvals and their answers). */
export interface LoopData {
  readonly messages: readonly Message[];
  /** Where the loop stands: after `model-reply` the reply's tool calls are pinned and run next. */
  readonly stage: LoopStage;
  /** Model calls so far, over the whole run. */
  readonly modelCalls: number;
  /** Model calls allowed per turn (a one-turn run: over the whole run). */
  readonly maxSteps: number;
  /** Why the turn stopped (a stopped conversation waits for its next message). */
  readonly stopped?: StopReason;
  /** The run's model replies, in order. */
  readonly steps: readonly LoopStep[];
  /** The turn the run is in, from 1: each next user message of a conversation opens one. */
  readonly turn: number;
  /** `modelCalls` when the current turn began: the turn's `maxSteps` counts from there. */
  readonly turnStart: number;
  /** A conversation: a turn that stops waits for the next user message instead of ending the run. */
  readonly conversation: boolean;
}

/** Reads a loop's data out of a verified checkpoint, checking every field and message. */
export function readLoopData(runId: string, data: JsonObject): LoopData {
  const {
    messages,
    stage,
    modelCalls,
    maxSteps,
    stopped,
    steps = [],
    turn = 1,
    turnStart = 0,
    conversation = false,
  } = data;
  const read = Array.isArray(messages) ? readHistory(messages, true) : { bad: 0 };
  const ok =
    "history" in read &&
    isStage(stage) &&
    isCount(modelCalls) &&
    isCount(maxSteps) &&
    isStopped(stopped) &&
    isArrayOf(steps, isStep) &&
    isCount(turn) &&
    turn >= 1 &&
    isCount(turnStart) &&
    typeof conversation === "boolean";
  if (!ok) throw new CheckpointStoreCorrupt(runId, "the checkpoint holds no tool-loop data.");
  return {
    messages: read.history,
    stage,
    modelCalls,
    maxSteps,
    ...(stopped === undefined ? {} : { stopped }),
    steps: steps.map(readStep),
    turn,
    turnStart,
    conversation,
  };
}

/** A loop's data as sealed. */
export function loopDataJson(data: LoopData): JsonObject {
  const { messages, stage, modelCalls, maxSteps, stopped, steps, turn, turnStart, conversation } = data;
  return {
    messages: messages.map(messageJson),
    stage,
    modelCalls,
    maxSteps,
    ...(stopped === undefined ? {} : { stopped }),
    steps: steps.map(stepJson),
    turn,
    turnStart,
    conversation,
  };
}

/**
 * Every message of a history, read with `readMessage`; or the index of the
 * first that is not a message. `sealed`: the history was read from a
 * checkpoint, so each message's JSON is its sealed form (`readFromSeal`).
 */
export function readHistory(
  messages: readonly JsonValue[],
  sealed = false,
): { readonly history: Message[] } | { readonly bad: number } {
  const history: Message[] = [];
  for (const [index, value] of messages.entries()) {
    const read = readMessage(value);
    if (read === undefined) return { bad: index };
    const message = sealed ? readFromSeal(read, value as JsonObject) : read;
    history.push(message);
  }
  return { history };
}

function isStep(value: JsonValue): value is JsonObject {
  if (!isJsonObject(value)) return false;
  const { message, turn, usage, finishReason, response } = value;
  return (
    isCount(message) &&
    isCount(turn) &&
    (usage === undefined || isJsonObject(usage)) &&
    (finishReason === undefined || isString(finishReason)) &&
    (response === undefined || isJsonObject(response))
  );
}

function readStep(value: JsonObject): LoopStep {
  const usage = readUsage(value["usage"]);
  const { finishReason, response } = value;
  return {
    message: value["message"] as number,
    turn: value["turn"] as number,
    ...(usage === undefined ? {} : { usage }),
    ...(isString(finishReason) ? { finishReason } : {}),
    ...(isJsonObject(response) ? { response } : {}),
  };
}

const stepsSealed = new WeakMap<LoopStep, JsonObject>();

/** A step as sealed: made once per step (see `messageJson`). */
function stepJson(step: LoopStep): JsonObject {
  let json = stepsSealed.get(step);
  if (json === undefined) {
    json = stepCopy(step);
    stepsSealed.set(deepFreeze(step), json);
  }
  return json;
}

function stepCopy(step: LoopStep): JsonObject {
  const { message, turn, usage, finishReason, response } = step;
  return {
    message,
    turn,
    ...(usage === undefined ? {} : { usage: usageJson(usage) }),
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(response === undefined ? {} : { response }),
  };
}

function isStage(value: JsonValue | undefined): value is LoopStage {
  return value === "start" || value === "model-reply" || value === "tool-results";
}

function isStopped(value: JsonValue | undefined): value is StopReason | undefined {
  return value === undefined || value === "final" || value === "max-steps" || value === "stop-condition";
}
