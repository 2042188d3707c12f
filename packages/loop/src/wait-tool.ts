import { type Executor, InvalidInput, type ToolRegistry } from "@durable/core";
import type { CallScope } from "@durable/core/runner";
import type { ToolCallRequest } from "./message.js";
import type { ToolSpec } from "./model.js";
import { sleepAnswer, sleepToolSpec } from "./sleep-tool.js";
import type { ToolAnswer } from "./tool-answer.js";

/**
 * A tool the loop makes itself, whose call waits durably (`sleepTool`): its wait goes through the call log within the call's id, so
 * a round that runs again replays it, and the round waits while it lasts.
 */
export interface WaitTool {
  readonly spec: ToolSpec;
  /** The call's answer once its wait is over; undefined while the round must wait (the scope notes until when). */
  answer(executor: Executor, scope: CallScope, call: ToolCallRequest): Promise<ToolAnswer | undefined>;
}

/** The options that declare the loop's waiting tools. */
export interface WaitToolOptions {
  readonly sleepTool?: string | undefined;
}

/** The loop's waiting tools, by name (a map: a model's call of `constructor` finds none). */
export function waitTools({ sleepTool }: WaitToolOptions): ReadonlyMap<string, WaitTool> {
  const tools = new Map<string, WaitTool>();
  if (sleepTool !== undefined) tools.set(sleepTool, { spec: sleepToolSpec(sleepTool), answer: sleepAnswer });
  return tools;
}

/**
 * Checks the waiting tools a loop's entry point `where` is given: each name
 * one a model's tool may have and no other tool's (registered or waiting).
 * Anything else is `InvalidInput` before anything runs.
 */
export function checkWaitTools(where: string, registry: ToolRegistry, options: WaitToolOptions): void {
  const { sleepTool } = options;
  const names = [...(sleepTool === undefined ? [] : [["sleepTool", sleepTool]])];
  const seen = new Set<string>();
  for (const [option, name] of names as [string, string][]) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name))
      throw new InvalidInput(
        `${where}: ${option}: a tool's name must be 1 to 64 letters, digits, _ or -, as a model's tool names are, not ${JSON.stringify(name)}.`,
      );
    if (registry.has(name) || seen.has(name))
      throw new InvalidInput(`${where}: ${option}: ${JSON.stringify(name)} is the name of another tool.`);
    seen.add(name);
  }
}
