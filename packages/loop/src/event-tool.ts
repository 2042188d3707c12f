import { type Executor, InvalidInput } from "@durable/core";
import {
  assertEventName,
  type CallScope,
  checkOptions,
  isJsonObject,
  MAX_SLEEP_MS,
  type OptionTable,
} from "@durable/core/runner";
import type { ToolCallRequest } from "./message.js";
import type { ToolSpec } from "./model.js";
import { errorAnswer, type ToolAnswer, valueAnswer } from "./tool-answer.js";

/*
 * A tool a loop gives its model when `eventTools` declares it: a wait for an
 * event sent to the run (`sendEvent`), made durably by the loop itself (the
 * run is saved waiting, and the event or the timeout wakes it), whose result
 * is the event's payload.
 */

/**
 * A tool the model calls to wait for an event sent to the run (`sendEvent`):
 * either one `event` it always waits for (`await_payment` waits for `paid`),
 * or the `events` the model may name (`wait_for_event({ "event": "paid" })`).
 */
export interface EventToolOptions {
  /** The one event the tool waits for: the model names none. */
  readonly event?: string;
  /** The events the model may ask the tool to wait for, naming one as `event`. */
  readonly events?: readonly string[];
  /**
   * How long a call waits at most, in ms (a whole number ≥ 0): then the model
   * is told it timed out. The model may ask for less (`timeoutSeconds`).
   * Default: until the event comes, unless the model gives a timeout.
   */
  readonly timeoutMs?: number;
  /** What the model is told the tool does (say what the payload holds). Default: which events it waits for. */
  readonly description?: string;
}

const EVENT_TOOL_OPTIONS: OptionTable<EventToolOptions> = {
  event: "string",
  events: true,
  timeoutMs: true,
  description: "string",
};

/**
 * Checks the declaration of the event tool `name` for `where`: one `event`
 * or a non-empty list of `events` (each an event's name, 1 to 128
 * characters), a `timeoutMs` that is a whole number of ms from 0 to 3e14.
 * Anything else is `InvalidInput` naming the tool.
 */
export function checkEventTool(where: string, name: string, tool: unknown): void {
  const at = `${where}: eventTools ${JSON.stringify(name)}`;
  const { event, events, timeoutMs } = checkOptions(at, tool, EVENT_TOOL_OPTIONS);
  if ((event === undefined) === (events === undefined))
    throw new InvalidInput(`${at} takes one \`event\` (it waits for that one) or \`events\` (the model names one).`);
  if (event !== undefined) assertEventName(at, event);
  if (events !== undefined) {
    if (!Array.isArray(events) || events.length === 0)
      throw new InvalidInput(`${at}: events must be a non-empty list of event names.`);
    for (const each of events) assertEventName(at, each);
  }
  const whole = typeof timeoutMs === "number" && Number.isSafeInteger(timeoutMs) && timeoutMs >= 0;
  if (timeoutMs !== undefined && !(whole && timeoutMs <= MAX_SLEEP_MS))
    throw new InvalidInput(
      `${at}: timeoutMs must be a whole number of ms from 0 to ${MAX_SLEEP_MS}, not ${String(timeoutMs)}.`,
    );
}

/** What the model is told of the event tool `name`. */
export function eventToolSpec(name: string, tool: EventToolOptions): ToolSpec {
  const { events, timeoutMs, description } = tool;
  const which =
    events === undefined
      ? `the event ${JSON.stringify(tool.event)}`
      : `the event \`event\` names (${namesText(events)})`;
  const timeout = {
    type: "number",
    minimum: 0,
    ...(timeoutMs === undefined ? {} : { maximum: timeoutMs / 1000 }),
    description: `How long to wait at most, in seconds (default: ${timeoutMs === undefined ? "until the event comes" : timeoutMs / 1000}).`,
  };
  return {
    name,
    description:
      description ??
      `Waits for ${which} to be sent, and gives its payload; or says it timed out. The wait is durable and holds nothing meanwhile, however long it is.`,
    parameters: {
      type: "object",
      properties: {
        ...(events === undefined ? {} : { event: { type: "string", enum: [...events] } }),
        timeoutSeconds: timeout,
      },
      ...(events === undefined ? {} : { required: ["event"] }),
      additionalProperties: false,
    },
  };
}

/**
 * A call of an event tool: its wait, made through the call log within the
 * call's id (recorded once, replayed: a round that runs again never takes a
 * second event); the model is given the event's payload, told the wait timed
 * out, or why its arguments are not a wait (nothing recorded). Undefined
 * while no event came and the timeout has not passed: the round waits.
 */
export async function eventAnswer(
  executor: Executor,
  scope: CallScope,
  call: ToolCallRequest,
  tool: EventToolOptions,
): Promise<ToolAnswer | undefined> {
  const wait = eventWait(call, tool);
  if (typeof wait === "string") return errorAnswer(wait);
  const { name, timeoutMs } = wait;
  const waited = await executor.waitForEvent(scope, call.id, name, timeoutMs === undefined ? {} : { timeoutMs });
  if (waited === undefined) return undefined;
  if (waited.status === "received") return valueAnswer(waited.payload);
  // Only a wait with a timeout times out.
  return { content: `timed out after ${Number(timeoutMs) / 1000} s: no ${JSON.stringify(name)} event came` };
}

/** The wait a call asks for (the event's name, and its timeout: the model's, else the tool's), or why it is not one. */
function eventWait(call: ToolCallRequest, tool: EventToolOptions): { name: string; timeoutMs?: number } | string {
  const { events } = tool;
  const most = tool.timeoutMs ?? MAX_SLEEP_MS;
  const named = events === undefined ? "" : `"event": ${events.map((each) => JSON.stringify(each)).join(" | ")}, `;
  const takes = `${call.name} takes { ${named}"timeoutSeconds"?: <seconds from 0 to ${most / 1000}> }`;
  const { args } = call;
  if (!isJsonObject(args)) return takes;
  const { event, timeoutSeconds, ...rest } = args;
  // The tool's one event, or the one the model names: never both, never none.
  if (Object.keys(rest).length > 0 || (tool.event === undefined) === (event === undefined)) return takes;
  const name = tool.event ?? event;
  if (typeof name !== "string" || (events !== undefined && !events.includes(name)))
    return `${call.name} may wait for ${namesText(events ?? [])}, not ${JSON.stringify(event)}`;
  if (timeoutSeconds === undefined)
    return tool.timeoutMs === undefined ? { name } : { name, timeoutMs: tool.timeoutMs };
  const timeoutMs = typeof timeoutSeconds === "number" && timeoutSeconds >= 0 ? Math.round(timeoutSeconds * 1000) : -1;
  if (timeoutMs < 0 || timeoutMs > most)
    return `timeoutSeconds must be a number of seconds from 0 to ${most / 1000}, not ${JSON.stringify(timeoutSeconds)}`;
  return { name, timeoutMs };
}

/** Event names as a model reads them: `"paid"`, `"paid" or "shipped"`, `"a", "b" or "c"`. */
function namesText(names: readonly string[]): string {
  const quoted = names.map((each) => JSON.stringify(each));
  return quoted.length < 2 ? (quoted[0] ?? "") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}
