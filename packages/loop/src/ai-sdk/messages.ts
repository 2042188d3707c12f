import type { AssistantContent, ModelMessage, SystemModelMessage, ToolContent, UserContent } from "ai";
import { InvalidInput, type JsonValue } from "@durable/core";
import { canonicalCopy, isJsonObject, isString, type JsonObject } from "@durable/core/runner";
import type { Message, ToolCallRequest } from "../message.js";

// AI SDK messages ⇄ the loop's messages. Each AI SDK message keeps its
// content parts as given (`parts`), so it goes back to the provider as it
// came: reasoning and its signatures, provider metadata, files, JSON tool
// results. The loop's own fields (`content`, `toolCalls`) are read from them.

/**
 * The loop's messages for AI SDK messages (a `generateText` history, a
 * conversation you kept): lossless, `toModelMessages` gives them back.
 * Binary data (a `Uint8Array` image) is kept as base64 and a `URL` as its
 * text, since a checkpoint holds plain JSON; anything else that is not JSON
 * is `InvalidInput`. A tool message with several results becomes one loop
 * message per result (the later ones `joined`).
 */
export function fromModelMessages(messages: readonly ModelMessage[]): Message[] {
  if (!Array.isArray(messages))
    throw new InvalidInput("fromModelMessages takes a list of AI SDK messages (ModelMessage[]).");
  return messages.flatMap((message, index) => fromModelMessage(asJson(message, index), index));
}

function asJson(message: ModelMessage, index: number): JsonObject {
  const copy = canonicalCopy(plainData(message), `messages[${index}]`);
  if (!isJsonObject(copy)) throw new InvalidInput(`messages[${index}] is not an AI SDK message.`);
  return copy;
}

/** Binary content as base64 and URLs as text: what the AI SDK takes back in their place. */
function plainData(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString("base64");
  if (value instanceof URL) return value.href;
  if (Array.isArray(value)) return value.map(plainData);
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plainData(item)]));
  return value;
}

function fromModelMessage(message: JsonObject, index: number): Message[] {
  const { role, content, providerOptions } = message;
  const options = isJsonObject(providerOptions) ? { providerOptions } : {};
  const bad = (): never => {
    throw new InvalidInput(`messages[${index}] is not an AI SDK message of a known role with its content.`);
  };
  if (role === "system") return isString(content) ? [{ role, content, ...options }] : bad();
  if (role !== "user" && role !== "assistant" && role !== "tool") return bad();
  if (isString(content) && role !== "tool") return [{ role, content, ...options }];
  const parts = Array.isArray(content) ? content.filter(isJsonObject) : [];
  if (!Array.isArray(content) || parts.length !== content.length || !parts.every((p) => isString(p["type"])))
    return bad();
  if (role === "user") return [{ role, content: textOf(parts), parts, ...options }];
  if (role === "assistant") {
    const toolCalls = parts.flatMap(toolCallOf);
    return [{ role, content: textOf(parts), ...(toolCalls.length > 0 ? { toolCalls } : {}), parts, ...options }];
  }
  return toolMessages(parts, options, index);
}

/** The text parts' text, joined: what a model that reads text only sees of the message. */
function textOf(parts: readonly JsonObject[]): string {
  return parts.map((part) => (part["type"] === "text" && isString(part["text"]) ? part["text"] : "")).join("");
}

/** The calls the loop runs: tool calls the provider did not run itself. */
function toolCallOf(part: JsonObject): ToolCallRequest[] {
  const { type, toolCallId, toolName, input, providerExecuted } = part;
  if (type !== "tool-call" || providerExecuted === true || !isString(toolCallId) || !isString(toolName)) return [];
  return [{ id: toolCallId, name: toolName, args: input ?? null }];
}

/** One loop message per tool result; the parts after a result that are not results (approval responses) ride with it. */
function toolMessages(
  parts: readonly JsonObject[],
  options: { providerOptions?: JsonObject },
  index: number,
): Message[] {
  const messages: { result: JsonObject; parts: JsonObject[] }[] = [];
  for (const part of parts) {
    if (part["type"] === "tool-result") messages.push({ result: part, parts: [part] });
    else if (messages.length > 0) messages.at(-1)?.parts.push(part);
    else throw new InvalidInput(`messages[${index}]: a tool message must start with a tool result.`);
  }
  if (messages.length === 0) throw new InvalidInput(`messages[${index}]: a tool message holds no tool result.`);
  return messages.map(({ result, parts: own }, n) => {
    const { toolCallId, toolName, output } = result;
    if (!isString(toolCallId) || !isString(toolName) || !isJsonObject(output))
      throw new InvalidInput(`messages[${index}]: a tool result needs toolCallId, toolName and output.`);
    return {
      role: "tool",
      toolCallId,
      name: toolName,
      ...outputFields(output),
      parts: own,
      ...(n > 0 ? { joined: true } : options),
    };
  });
}

/** What a model that reads text only sees of a tool's output. */
function outputFields(output: JsonObject): { content: string; isError?: true; result?: JsonValue } {
  const { type, value, reason } = output;
  const text = isString(value) ? value : JSON.stringify(value ?? null);
  switch (type) {
    case "json":
      return { content: text, result: value ?? null };
    case "error-text":
    case "error-json":
      return { content: text, isError: true };
    case "execution-denied":
      return { content: `denied${isString(reason) ? `: ${reason}` : ""}` };
    case "content":
      return {
        content: Array.isArray(value)
          ? value.map((item) => (isJsonObject(item) && isString(item["text"]) ? item["text"] : "")).join("")
          : "",
      };
    default:
      return { content: text };
  }
}

/**
 * The AI SDK messages for the loop's history: the messages it was given back
 * as they were, and those the loop made (replies, tool results) as the AI SDK
 * makes them (a tool's JSON result as a `json` output, its error as
 * `error-text`, the results of one round in one tool message).
 */
export function toModelMessages(messages: readonly Message[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const message of messages) {
    // Provider options are kept as the AI SDK gave them (JSON objects by provider).
    type Options = NonNullable<SystemModelMessage["providerOptions"]>;
    const options =
      message.providerOptions === undefined ? {} : { providerOptions: message.providerOptions as Options };
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content, ...options });
        break;
      case "user":
        // Parts are kept as the AI SDK gave them: plain JSON of its own content types.
        out.push({ role: "user", content: (message.parts ?? message.content) as UserContent, ...options });
        break;
      case "assistant":
        out.push({
          role: "assistant",
          content: (message.parts ?? assistantContent(message)) as AssistantContent,
          ...options,
        });
        break;
      case "tool": {
        const parts = (message.parts ?? [toolResult(message)]) as ToolContent;
        const last = out.at(-1);
        // A copy: the next joined result is added to it, never to the history's own (sealed, frozen) parts.
        if (message.joined === true && last?.role === "tool") last.content.push(...parts);
        else out.push({ role: "tool", content: [...parts], ...options });
      }
    }
  }
  return out;
}

function assistantContent(message: Extract<Message, { role: "assistant" }>): JsonValue {
  const calls = message.toolCalls ?? [];
  if (calls.length === 0) return message.content;
  return [
    ...(message.content === "" ? [] : [{ type: "text", text: message.content }]),
    ...calls.map((call) => ({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: call.args })),
  ];
}

function toolResult(message: Extract<Message, { role: "tool" }>): JsonObject {
  const output =
    message.isError === true
      ? { type: "error-text", value: message.content }
      : message.result !== undefined
        ? { type: "json", value: message.result }
        : { type: "text", value: message.content };
  return { type: "tool-result", toolCallId: message.toolCallId, toolName: message.name, output };
}
