import { CheckpointStoreCorrupt, type JsonValue, type LoopStage } from "@durable/core";
import type { BoundDecision } from "@durable/core/runner";
import type { Message } from "./model.js";

/** A call waiting on an approval, as a paused result lists it. */
export interface LoopApproval {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
}

/** What a tool loop seals into each checkpoint. */
export interface LoopData {
  readonly messages: readonly Message[];
  /** Where the loop stands: after `model-reply` the reply's tool calls are pinned and run next. */
  readonly stage: LoopStage;
  /** Model calls so far, over the whole run. */
  readonly modelCalls: number;
  readonly maxSteps: number;
  /** The number of the current tool round; its calls are logged under it. */
  readonly round: number;
  readonly pending: readonly LoopApproval[];
  readonly decisions: readonly BoundDecision[];
  /** Why the loop stopped: the model answered with no tool call, or `maxSteps` ran out. */
  readonly stopped?: "final" | "max-steps";
  readonly error?: string;
}

export function readLoopData(runId: string, data: JsonValue): LoopData {
  const d = data as Partial<Record<keyof LoopData, unknown>> | null;
  const ok =
    typeof d === "object" &&
    d !== null &&
    Array.isArray(d.messages) &&
    typeof d.stage === "string" &&
    Number.isSafeInteger(d.modelCalls) &&
    Number.isSafeInteger(d.maxSteps) &&
    Number.isSafeInteger(d.round) &&
    Array.isArray(d.pending) &&
    Array.isArray(d.decisions);
  if (!ok) throw new CheckpointStoreCorrupt(runId, "the checkpoint holds no tool-loop data.");
  return d as unknown as LoopData;
}

export function toJson(data: LoopData): JsonValue {
  return data as unknown as JsonValue;
}
