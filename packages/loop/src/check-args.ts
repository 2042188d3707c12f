import { InvalidInput, type ToolRegistry } from "@durable/core";
import { canonicalCopy, checkRegistry, checkRunnerOptions, checkRunVersion, describeType } from "@durable/core/runner";
import { LOOP_ENTRIES, type LoopEntry } from "./loop-options.js";
import { readHistory } from "./loop-data.js";
import type { Message } from "./message.js";
import { checkWaitTools, type WaitToolOptions } from "./wait-tool.js";

/**
 * Checks what `runToolLoop`, `recoverToolLoop` or `recoverAllToolLoops` is
 * given before anything runs: a model with `reply`, a tool registry, and the
 * options (see `checkRunnerOptions`; `toolErrors` is `"model"` or `"fail"`).
 * A wrong type is `InvalidInput` naming the argument or option.
 */
export function checkLoopArgs(where: LoopEntry, model: unknown, registry: unknown, options: unknown): void {
  if (typeof (model as { reply?: unknown } | null | undefined)?.reply !== "function") {
    throw new InvalidInput(
      `${where} takes a model with a reply(messages, tools) method (for example aiSdkModel(…)), not ${describeType(model)}.`,
    );
  }
  if (isAiSdkToolSet(registry))
    throw new InvalidInput(
      `${where} takes a ToolRegistry, not AI SDK tools: wrap them with durableTools(tools) from "@durable/loop/ai-sdk".`,
    );
  checkRegistry(where, registry);
  checkLoopOptions(where, options);
  checkWaitTools(where, registry as ToolRegistry, options as WaitToolOptions);
}

/** True for an AI SDK `ToolSet` (tools by name, each with an `inputSchema`) given where a registry belongs. */
function isAiSdkToolSet(value: unknown): boolean {
  if (typeof value !== "object" || value === null || typeof (value as { get?: unknown }).get === "function")
    return false;
  const tools = Object.values(value);
  return tools.length > 0 && tools.every((each) => typeof each === "object" && each !== null && "inputSchema" in each);
}

/** Checks the options of a loop's entry point (see `checkLoopArgs`): every key one it takes. */
export function checkLoopOptions(where: LoopEntry, options: unknown): void {
  checkRunnerOptions(where, options, LOOP_ENTRIES[where]);
  checkRunVersion(where, (options as { version?: unknown }).version);
  const { toolErrors, stopWhen } = options as { toolErrors?: unknown; stopWhen?: unknown };
  const conditions = Array.isArray(stopWhen) ? stopWhen : [stopWhen];
  if (stopWhen !== undefined && !conditions.every((condition) => typeof condition === "function"))
    throw new InvalidInput(
      `${where}: stopWhen must be a condition ({ steps }) => boolean or a list of them, not ${describeType(stopWhen)}.`,
    );
  if (toolErrors !== undefined && toolErrors !== "model" && toolErrors !== "fail") {
    throw new InvalidInput(
      `${where}: toolErrors must be "model" or "fail", not ${typeof toolErrors === "string" ? JSON.stringify(toolErrors) : describeType(toolErrors)}.`,
    );
  }
}

/**
 * The history a new loop starts from, as the store will keep it (plain JSON,
 * each message rebuilt from its known fields): a list of messages, each with
 * a known role and a string content. Anything else is `InvalidInput`.
 */
export function readInputMessages(where: string, messages: unknown): Message[] {
  if (!Array.isArray(messages))
    throw new InvalidInput(`${where}: messages must be a list of messages, not ${describeType(messages)}.`);
  const copy = canonicalCopy(messages, `${where}: messages`);
  const read = readHistory(Array.isArray(copy) ? copy : []);
  if ("bad" in read) {
    throw new InvalidInput(
      `${where}: messages[${read.bad}] must be { role: "system" | "user" | "assistant" | "tool", content: string, … } (parts, if given, a list of { type: string, … }).`,
    );
  }
  return read.history;
}
