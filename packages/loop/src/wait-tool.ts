import { type CheckpointStore, type Executor, InvalidInput, type ToolRegistry } from "@durable/core";
import { type CallScope, eventStore } from "@durable/core/runner";
import { checkEventTool, eventAnswer, type EventToolOptions, eventToolSpec } from "./event-tool.js";
import type { ToolCallRequest } from "./message.js";
import type { ToolSpec } from "./model.js";
import { sleepAnswer, sleepToolSpec } from "./sleep-tool.js";
import type { ToolAnswer } from "./tool-answer.js";

/**
 * A tool the loop makes itself, whose call waits durably (`sleepTool`,
 * `eventTools`): its wait goes through the call log within the call's id, so
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
  readonly eventTools?: Readonly<Record<string, EventToolOptions>> | undefined;
}

/** The loop's waiting tools, by name (a map: a model's call of `constructor` finds none). */
export function waitTools({ sleepTool, eventTools = {} }: WaitToolOptions): ReadonlyMap<string, WaitTool> {
  const tools = new Map<string, WaitTool>();
  if (sleepTool !== undefined) tools.set(sleepTool, { spec: sleepToolSpec(sleepTool), answer: sleepAnswer });
  for (const [name, given] of Object.entries(eventTools)) {
    // A copy, each event named once: the tool waits as it was declared, whatever becomes of the caller's object.
    const tool = { ...given, ...(given.events === undefined ? {} : { events: [...new Set(given.events)] }) };
    tools.set(name, {
      spec: eventToolSpec(name, tool),
      answer: (executor, scope, call) => eventAnswer(executor, scope, call, tool),
    });
  }
  return tools;
}

/**
 * Checks the waiting tools a loop's entry point `where` is given: each name
 * one a model's tool may have and no other tool's (registered or waiting),
 * each event tool as `checkEventTool` says, and a store that takes events
 * when there is one. Anything else is `InvalidInput` before anything runs.
 */
export function checkWaitTools(
  where: string,
  registry: ToolRegistry,
  options: WaitToolOptions & { readonly checkpoints?: unknown },
): void {
  const { sleepTool, eventTools = {} } = options;
  const names = [
    ...(sleepTool === undefined ? [] : [["sleepTool", sleepTool]]),
    ...Object.keys(eventTools).map((name) => [`eventTools ${JSON.stringify(name)}`, name]),
  ];
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
  for (const [name, tool] of Object.entries(eventTools)) checkEventTool(where, name, tool);
  // A loop that may wait for events needs a store that delivers them: refused here, not at the model's first wait.
  const { checkpoints } = options;
  if (Object.keys(eventTools).length > 0 && typeof checkpoints === "object" && checkpoints !== null)
    eventStore(`${where}: eventTools`, checkpoints as CheckpointStore);
}
