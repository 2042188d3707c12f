import { type Executor, InvalidInput, type JsonValue } from "@durable/core";
import { type CallScope, isJsonObject } from "@durable/core/runner";
import type { ToolCallRequest } from "./message.js";
import type { ToolSpec } from "./model.js";
import { errorAnswer, type ToolAnswer } from "./tool-answer.js";

/*
 * The tool a loop gives its model when `sleepTool` names it: a wait, made
 * durably by the loop itself (the run is saved asleep, and a worker wakes it),
 * whose result tells the model until when it slept.
 */

/** What the model is told of the sleep tool named `name`. */
export function sleepToolSpec(name: string): ToolSpec {
  return {
    name,
    description:
      "Waits before going on: for `seconds`, or until `until` (an ISO 8601 time). The wait is durable and holds nothing meanwhile, however long it is.",
    parameters: {
      type: "object",
      properties: {
        seconds: { type: "number", minimum: 0, description: "How long to wait, in seconds." },
        until: { type: "string", format: "date-time", description: "When to go on, as an ISO 8601 time." },
      },
      additionalProperties: false,
    },
  };
}

/**
 * A call of the sleep tool: its wait, made through the call log (recorded
 * once, replayed); the model is told when it slept, or why its arguments are
 * not a wait. Undefined while the wait has not passed: the round sleeps.
 */
export async function sleepAnswer(
  executor: Executor,
  scope: CallScope,
  call: ToolCallRequest,
): Promise<ToolAnswer | undefined> {
  const wake = sleepWake(call.args);
  if (wake === undefined)
    return errorAnswer(`${call.name} takes { "seconds": <number ≥ 0> } or { "until": "<ISO 8601 time>" }`);
  try {
    const { until, passed } = await executor.sleep(scope, call.id, wake);
    return passed ? { content: `slept until ${new Date(until).toISOString()}` } : undefined;
  } catch (error) {
    // A wait further ahead than a sleep may be: nothing was recorded, and the model is told.
    if (error instanceof InvalidInput) return errorAnswer(error.message);
    throw error;
  }
}

/** The wait a call of the sleep tool asks for: `{ ms }` from `seconds`, `{ until }` from a time; undefined for any other arguments. */
function sleepWake(args: JsonValue): { ms: number } | { until: number } | undefined {
  if (!isJsonObject(args) || Object.keys(args).length !== 1) return undefined;
  const { seconds, until } = args;
  if (typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0)
    return { ms: Math.round(seconds * 1000) };
  const time = typeof until === "string" ? Date.parse(until) : Number.NaN;
  return Number.isFinite(time) && time >= 0 ? { until: time } : undefined;
}
