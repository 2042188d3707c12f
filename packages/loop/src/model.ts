import type { JsonObject } from "@durable/core/runner";
import type { Message, ToolCallRequest } from "./message.js";
import type { ModelUsage } from "./usage.js";

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments. */
  readonly parameters?: JsonObject;
}

/**
 * What a model answers: text, and the tool calls it wants (none ends the
 * turn). The rest is optional: `parts` and `providerOptions` are kept in the
 * history as given (see `Message`); `usage`, `finishReason` and `response`
 * (the provider's id, model id and timestamp, as JSON) are kept per step and
 * summed or reported in the loop's result.
 */
export interface ModelReply {
  readonly text: string;
  readonly toolCalls: readonly ToolCallRequest[];
  readonly parts?: readonly JsonObject[];
  readonly providerOptions?: JsonObject;
  readonly usage?: ModelUsage;
  readonly finishReason?: string;
  readonly response?: JsonObject;
}

/** What a model streams while it answers, when the loop's caller streams (`streamToolLoop`, `onPart`). */
export type ModelStreamPart =
  | { readonly type: "text-delta"; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly text: string }
  | { readonly type: "tool-call"; readonly toolCallId: string; readonly toolName: string; readonly args: unknown };

/** What the loop gives a model with each request. */
export interface ReplyOptions {
  /** Aborted when the worker gives the run up: pass it on to the provider. */
  readonly signal?: AbortSignal;
  /** Set when the caller streams: give it the reply's parts as they arrive (the reply is still returned whole). */
  readonly onPart?: (part: ModelStreamPart) => void;
}

/** The model a tool loop drives: messages and tool specs in, a reply out. */
export interface LoopModel {
  reply(messages: readonly Message[], tools: readonly ToolSpec[], options?: ReplyOptions): Promise<ModelReply>;
}
