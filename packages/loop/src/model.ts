import type { JsonObject, JsonValue } from "@durable/core";
import { isJsonObject, isString } from "@durable/core/runner";

/** A tool call a model asked for. `id` is the model's own id for it. */
export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  readonly args: JsonValue;
}

/**
 * One message of the history: plain JSON, sealed into the loop's checkpoints.
 * A tool message with `isError` tells the model its tool failed (the content
 * says how: `error: <name>: <message>`).
 */
export type Message =
  | { readonly role: "system" | "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string; readonly toolCalls?: readonly ToolCallRequest[] }
  | {
      readonly role: "tool";
      readonly toolCallId: string;
      readonly name: string;
      readonly content: string;
      readonly isError?: boolean;
    };

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

/**
 * The message `value` holds, rebuilt from its known fields, or undefined when
 * it is not one (a role this loop does not know, a text that is not a string,
 * a tool call without id, name or arguments).
 */
export function readMessage(value: JsonValue): Message | undefined {
  if (!isJsonObject(value)) return undefined;
  const { role, content } = value;
  if (!isString(content)) return undefined;
  switch (role) {
    case "system":
    case "user":
      return { role, content };
    case "assistant": {
      if (value["toolCalls"] === undefined) return { role, content };
      const given = value["toolCalls"];
      const toolCalls = Array.isArray(given) ? given.map(readToolCall) : [undefined];
      return toolCalls.every((call) => call !== undefined) ? { role, content, toolCalls } : undefined;
    }
    case "tool": {
      const { toolCallId, name, isError } = value;
      if (!isString(toolCallId) || !isString(name) || (isError !== undefined && typeof isError !== "boolean"))
        return undefined;
      return { role, toolCallId, name, content, ...(isError === true ? { isError } : {}) };
    }
    default:
      return undefined;
  }
}

function readToolCall(value: JsonValue): ToolCallRequest | undefined {
  if (!isJsonObject(value)) return undefined;
  const { id, name, args } = value;
  return isString(id) && isString(name) && args !== undefined ? { id, name, args } : undefined;
}

/** A message as plain JSON, as the loop's checkpoints keep it. */
export function messageJson(message: Message): JsonObject {
  switch (message.role) {
    case "assistant": {
      const { role, content, toolCalls } = message;
      return toolCalls === undefined
        ? { role, content }
        : { role, content, toolCalls: toolCalls.map(({ id, name, args }) => ({ id, name, args })) };
    }
    case "tool": {
      const { role, toolCallId, name, content, isError } = message;
      return { role, toolCallId, name, content, ...(isError === true ? { isError } : {}) };
    }
    default:
      return { role: message.role, content: message.content };
  }
}
