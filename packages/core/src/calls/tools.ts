import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { JsonObject, JsonValue } from "../base/json.js";
import { InvalidInput } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import type { Identity } from "../base/identity.js";
import { type ResolvedRetry, type RetryPolicy, resolveRetry } from "./retry.js";
import { isStandardSchema } from "../base/standard-schema.js";

/** What a tool gets besides its arguments. */
export interface ToolContext {
  readonly runId: string;
  /** Names this call within its run; the same on every worker and recovery. */
  readonly callId: string;
  /** The same key `idempotencyKey()` returns inside this call: the same for every attempt. */
  readonly idempotencyKey: string;
  readonly identity: Identity;
  /** Which attempt this is, from 1 (attempts count across workers and crashes). */
  readonly attempt: number;
  /**
   * Aborted when the attempt times out (`timeoutMs`), the worker gives the
   * run up, or the drive lost the run (a cancel, another worker's takeover:
   * `CheckpointConflict`): pass it on (`fetch(url, { signal })`). A tool that
   * ignores it cannot be stopped; its late result is never recorded.
   */
  readonly signal: AbortSignal;
  /**
   * Adds custom data (plain JSON, or `InvalidInput`) to the run's stream when
   * it streams (`stream`), as a part `{ type: "data", callId, data }` a
   * follower gets in order with the model's; does nothing otherwise, nor
   * once the attempt returned, threw or timed out. It is progress, not a
   * result: a call that replays writes nothing again.
   */
  writeData(data: unknown): void;
}

/**
 * A tool: plain JSON arguments in, plain JSON out (or nothing). `Args` is the
 * shape the tool reads its arguments as (plain JSON unless it says otherwise);
 * nothing checks it at run time, so a tool that takes a model's arguments
 * should check them itself.
 */
export type ToolFn<Args = JsonValue> = (args: Args, ctx: ToolContext) => unknown;

/** How a tool may be treated. */
export interface ToolOptions<Args = JsonValue> {
  /**
   * The schema of the arguments (zod, valibot, arktype: any Standard Schema):
   * a call's arguments are validated, and the tool gets the schema's output,
   * before its `started` record; invalid ones are `InvalidToolArgs` (a tool
   * loop tells the model). A schema that converts to JSON Schema
   * (`~standard.jsonSchema`) also gives a tool loop the tool's parameters.
   */
  readonly args?: StandardSchemaV1<unknown, Args>;
  /** Safe to run again with the same arguments: a call in doubt reruns on recovery with no decision. */
  readonly idempotent?: boolean;
  /** Each call waits for an approval: the run pauses until it is resumed with a decision. */
  readonly approval?: boolean;
  /** Shown to a model in a tool loop. */
  readonly description?: string;
  /** The JSON Schema of the arguments, shown to a model in a tool loop. */
  readonly parameters?: JsonObject;
  /** Tries a call that throws again, with backoff; every attempt is in the call log (default: one attempt). */
  readonly retry?: RetryPolicy;
  /** How long one attempt may take, in ms: then its `ctx.signal` is aborted and the attempt failed with `ToolTimedOut`. */
  readonly timeoutMs?: number;
}

/** A registered tool. */
export interface ToolDefinition extends ToolOptions<unknown> {
  readonly name: string;
  readonly fn: ToolFn;
  readonly idempotent: boolean;
  readonly approval: boolean;
  readonly retry: ResolvedRetry;
}

const TOOL_OPTIONS: OptionTable<ToolOptions> = {
  idempotent: "boolean",
  approval: "boolean",
  description: "string",
  parameters: "object",
  retry: "object",
  args: "object",
  timeoutMs: true,
};

/** Names of the calls the library makes itself (`SLEEP_TOOL`, `EVENT_TOOL`, …): no registered tool may take one. */
const RESERVED = "durable:";

/** The call a sleep records its wake time as: a `done` record whose result is the time (ms since the epoch). */
export const SLEEP_TOOL: string = `${RESERVED}sleep`;

/** The longest sleep or wait, in ms: about 10,000 years, so a wake time and a store's lease expiry stay safe integers. */
export const MAX_SLEEP_MS = 3e14;

/** Event names the library sends itself (a child run's end): `sendEvent` refuses them. */
export const RESERVED_EVENTS = "durable:";

/** The tool of a child run's start: its `done` record, under the start's id + `:start`, holds the child's run id. */
export const CHILD_TOOL: string = `${RESERVED}child`;

/** The tool of a wait for an event (`waitForEvent`): its `done` record holds the event it took, or its timeout. */
export const EVENT_TOOL: string = `${RESERVED}event`;

/** The tool of a patch's question (`patched`): its `done` record, arguments `{ id }`, holds the answer, true or false. */
export const PATCH_TOOL: string = `${RESERVED}patch`;

/** The tools a run may call, by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();

  /**
   * Registers a tool. A name used twice is `InvalidInput`. Returns the registry, to chain.
   * `Args` comes from the tool's own parameter type, e.g. `(a: { cents: number }) => …`.
   */
  tool<Args = JsonValue>(name: string, fn: ToolFn<Args>, options: ToolOptions<Args> = {}): this {
    if (typeof name !== "string" || name.length === 0 || name.length > 128) {
      throw new InvalidInput("A tool name must be a string of 1 to 128 characters.");
    }
    if (name.startsWith(RESERVED))
      throw new InvalidInput(
        `Tool names starting with "${RESERVED}" are the library's own, not ${JSON.stringify(name)}.`,
      );
    if (typeof fn !== "function") throw new InvalidInput(`Tool ${JSON.stringify(name)} needs a function.`);
    const where = `Tool ${JSON.stringify(name)}`;
    checkOptions(where, options, TOOL_OPTIONS);
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647))
      throw new InvalidInput(
        `${where}: timeoutMs must be a whole number of ms from 1 to 2147483647, not ${String(timeoutMs)}.`,
      );
    const retry = resolveRetry(where, options.retry);
    if (options.args !== undefined && !isStandardSchema(options.args))
      throw new InvalidInput(`${where}: args must be a Standard Schema (zod, valibot, arktype, …).`);
    if (this.#tools.has(name)) throw new InvalidInput(`A tool named ${JSON.stringify(name)} is already registered.`);
    this.#tools.set(name, {
      ...options,
      name,
      // The registry keeps every tool as one type; the caller's `Args` is its own claim about the JSON it gets.
      fn: fn as ToolFn,
      idempotent: options.idempotent === true,
      approval: options.approval === true,
      retry,
    });
    return this;
  }

  /** True when a tool of that name is registered. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** The tool of that name; `InvalidInput` when none is registered. */
  get(name: string): ToolDefinition {
    const tool = this.#tools.get(name);
    if (tool === undefined) throw new InvalidInput(`No tool named ${JSON.stringify(name)} is registered.`);
    return tool;
  }

  /** Every registered tool, in registration order. */
  list(): ToolDefinition[] {
    return [...this.#tools.values()];
  }
}
