import type { JsonValue } from "@durable/core";
import { canonicalCopy, deepFreeze, isArrayOf, isJsonObject, isString, type JsonObject } from "@durable/core/runner";

/** A tool call a model asked for. `id` is the model's own id for it. */
export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  readonly args: JsonValue;
}

/**
 * What every message may carry besides its text, so a provider's history
 * goes back to it as it came (`@durable/loop/ai-sdk` fills them in): `parts`,
 * the message's content in order as the provider gave it (reasoning with its
 * signature, files, tool calls with their metadata), and `providerOptions`.
 * A model that does not know them reads `content` (and `toolCalls`) only.
 */
interface Extras {
  /** The content as a list of typed parts (plain JSON, each with a string `type`), kept as given. */
  readonly parts?: readonly JsonObject[];
  readonly providerOptions?: JsonObject;
}

/**
 * One message of the history: plain JSON, sealed into the loop's checkpoints.
 * A tool message with `isError` tells the model its tool failed (the content
 * says how: `error: <name>: <message>`); `result` is a tool's result when it
 * is JSON other than a string (the content then holds it as JSON text);
 * `joined` says it was sent in one message with the tool message before it
 * (the results of one round).
 */
export type Message =
  | ({ readonly role: "system" | "user"; readonly content: string } & Extras)
  | ({
      readonly role: "assistant";
      readonly content: string;
      readonly toolCalls?: readonly ToolCallRequest[];
    } & Extras)
  | ({
      readonly role: "tool";
      readonly toolCallId: string;
      readonly name: string;
      readonly content: string;
      readonly isError?: boolean;
      readonly result?: JsonValue;
      readonly joined?: boolean;
    } & Extras);

/**
 * The message `value` holds, rebuilt from its known fields, or undefined when
 * it is not one (a role this loop does not know, a text that is not a string,
 * a tool call without id, name or arguments, parts that are not typed objects).
 */
export function readMessage(value: JsonValue): Message | undefined {
  if (!isJsonObject(value)) return undefined;
  const { role, content } = value;
  const extras = readExtras(value);
  if (!isString(content) || extras === undefined) return undefined;
  switch (role) {
    case "system":
    case "user":
      return { role, content, ...extras };
    case "assistant": {
      if (value["toolCalls"] === undefined) return { role, content, ...extras };
      const given = value["toolCalls"];
      const toolCalls = Array.isArray(given) ? given.map(readToolCall) : [undefined];
      return toolCalls.every((call) => call !== undefined) ? { role, content, toolCalls, ...extras } : undefined;
    }
    case "tool": {
      const { toolCallId, name, isError, result, joined } = value;
      if (!isString(toolCallId) || !isString(name) || !isFlag(isError) || !isFlag(joined)) return undefined;
      return {
        role,
        toolCallId,
        name,
        content,
        ...(isError === true ? { isError } : {}),
        ...(result === undefined ? {} : { result }),
        ...(joined === true ? { joined } : {}),
        ...extras,
      };
    }
    default:
      return undefined;
  }
}

function readExtras(value: JsonObject): Extras | undefined {
  const { parts, providerOptions } = value;
  if (parts !== undefined && !isArrayOf(parts, isPart)) return undefined;
  if (providerOptions !== undefined && !isJsonObject(providerOptions)) return undefined;
  return {
    ...(parts === undefined ? {} : { parts }),
    ...(providerOptions === undefined ? {} : { providerOptions }),
  };
}

function isPart(value: JsonValue): value is JsonObject {
  return isJsonObject(value) && isString(value["type"]);
}

function isFlag(value: JsonValue | undefined): boolean {
  return value === undefined || typeof value === "boolean";
}

function readToolCall(value: JsonValue): ToolCallRequest | undefined {
  if (!isJsonObject(value)) return undefined;
  const { id, name, args } = value;
  return isString(id) && isString(name) && args !== undefined ? { id, name, args } : undefined;
}

const sealed = new WeakMap<Message, JsonObject>();

/**
 * A message as plain JSON, as the loop's checkpoints keep it. Every message
 * the loop holds was read with `readMessage` or built by the loop with its
 * known fields only, so a copy is its JSON. The copy is made once per
 * message, and the message frozen with it: a checkpoint seals only what
 * changed since the one before (found by reference), so a message changed in
 * place would be one the store never saw.
 */
export function messageJson(message: Message): JsonObject {
  let json = sealed.get(message);
  if (json === undefined) {
    json = canonicalCopy(message, "a message") as JsonObject;
    sealed.set(deepFreeze(message), json);
  }
  return json;
}

/**
 * Notes that `json`, read from a checkpoint, is the sealed form of
 * `message` (read from it with `readMessage`): a recovered history is not
 * copied again at its next checkpoint, and its messages are frozen as sealed ones are.
 */
export function readFromSeal(message: Message, json: JsonObject): Message {
  sealed.set(deepFreeze(message), json);
  return message;
}
