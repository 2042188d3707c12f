import { CheckpointStoreCorrupt, type JsonObject, type JsonValue, type LoopStage } from "@durable/core";
import { isCount } from "@durable/core/runner";
import { messageJson, readMessage, type Message } from "./model.js";

/** What a tool loop seals into each checkpoint as its own data (the driver's envelope holds the round, approvals and decisions). */
export interface LoopData {
  readonly messages: readonly Message[];
  /** Where the loop stands: after `model-reply` the reply's tool calls are pinned and run next. */
  readonly stage: LoopStage;
  /** Model calls so far, over the whole run. */
  readonly modelCalls: number;
  readonly maxSteps: number;
  /** Why the loop stopped: the model answered with no tool call, or `maxSteps` ran out. */
  readonly stopped?: "final" | "max-steps";
}

/** Reads a loop's data out of a verified checkpoint, checking every field and message. */
export function readLoopData(runId: string, data: JsonObject): LoopData {
  const { messages, stage, modelCalls, maxSteps, stopped } = data;
  const read = Array.isArray(messages) ? readHistory(messages) : { bad: 0 };
  if (!("history" in read) || !isStage(stage) || !isCount(modelCalls) || !isCount(maxSteps) || !isStopped(stopped)) {
    throw new CheckpointStoreCorrupt(runId, "the checkpoint holds no tool-loop data.");
  }
  return { messages: read.history, stage, modelCalls, maxSteps, ...(stopped === undefined ? {} : { stopped }) };
}

/** A loop's data as sealed. */
export function loopDataJson(data: LoopData): JsonObject {
  const { messages, stage, modelCalls, maxSteps, stopped } = data;
  const fields: JsonObject = { messages: messages.map(messageJson), stage, modelCalls, maxSteps };
  return stopped === undefined ? fields : { ...fields, stopped };
}

/** Every message of a history, read with `readMessage`; or the index of the first that is not a message. */
export function readHistory(
  messages: readonly JsonValue[],
): { readonly history: Message[] } | { readonly bad: number } {
  const history: Message[] = [];
  for (const [index, value] of messages.entries()) {
    const message = readMessage(value);
    if (message === undefined) return { bad: index };
    history.push(message);
  }
  return { history };
}

function isStage(value: JsonValue | undefined): value is LoopStage {
  return value === "start" || value === "model-reply" || value === "tool-results";
}

function isStopped(value: JsonValue | undefined): value is LoopData["stopped"] {
  return value === undefined || value === "final" || value === "max-steps";
}
