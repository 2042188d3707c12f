import type { JsonObject, JsonValue } from "@durable/core";

/** A tool call a model asked for. `id` is the model's own id for it. */
export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  readonly args: JsonValue;
}

/** One message of the history: plain JSON, sealed into the loop's checkpoints. */
export type Message =
  | { readonly role: "system" | "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string; readonly toolCalls?: readonly ToolCallRequest[] }
  | { readonly role: "tool"; readonly toolCallId: string; readonly name: string; readonly content: string };

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments. */
  readonly parameters?: JsonObject;
}

/** What a model answers: text, and the tool calls it wants (none ends the loop). */
export interface ModelReply {
  readonly text: string;
  readonly toolCalls: readonly ToolCallRequest[];
}

/** The model a tool loop drives: messages and tool specs in, a reply out. */
export interface LoopModel {
  reply(messages: readonly Message[], tools: readonly ToolSpec[]): Promise<ModelReply>;
}
