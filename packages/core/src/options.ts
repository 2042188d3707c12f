import { InvalidInput } from "./errors.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import type { ValueCodec } from "./codec.js";

/** The types an option can be checked for. */
export type OptionType = "boolean" | "string" | "function" | "object";

const EXPECTED: Readonly<Record<OptionType, string>> = {
  boolean: "true or false",
  string: "a string",
  function: "a function",
  object: "an object",
};

/** The methods every `CheckpointStore` has. */
const STORE_METHODS = [
  "save",
  "latest",
  "listUnfinished",
  "delete",
  "recordCall",
  "calls",
  "renew",
  "release",
  "leaseOf",
] as const;

/**
 * The options every runner takes (`FlowRunner`, `runToolLoop`,
 * `recoverToolLoop`), by type. `checkpoints` is required and checked on its own;
 * `checkpointKey` is checked by `Sealer.withKeys`; `ctx` by `identityOf`.
 */
const RUNNER_OPTIONS: Readonly<Record<string, OptionType>> = {
  events: "function",
  approvals: "function",
  rerunInDoubt: "boolean",
  decide: "object",
  by: "string",
  takeOver: "boolean",
  lease: "object",
  decisions: "object",
  name: "string",
  runId: "string",
  codec: "object",
};

/** What a value is, for a message: `null`, `an array`, `a number`, … */
export function describeType(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return type === "object" ? "an object" : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** True for a non-null object that is not an array (a plain object or a class instance). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Checks that `options` is an object whose named keys, where given (not
 * `undefined`), have the types asked; returns it. A wrong type is
 * `InvalidInput` naming `where` and the option, before anything runs.
 */
export function checkOptionTypes(
  where: string,
  options: unknown,
  types: Readonly<Record<string, OptionType>>,
): Record<string, unknown> {
  if (!isObject(options)) throw new InvalidInput(`${where} takes an options object, not ${describeType(options)}.`);
  for (const [name, type] of Object.entries(types)) {
    const value = options[name];
    if (value === undefined) continue;
    const ok = type === "object" ? isObject(value) : typeof value === type;
    if (!ok) throw new InvalidInput(`${where}: ${name} must be ${EXPECTED[type]}, not ${describeType(value)}.`);
  }
  return options;
}

/** Checks that `store` has every method of the `CheckpointStore` protocol. */
function checkStore(where: string, store: unknown): asserts store is CheckpointStore {
  const missing = isObject(store)
    ? STORE_METHODS.filter((method) => typeof store[method] !== "function")
    : STORE_METHODS;
  if (missing.length > 0) {
    throw new InvalidInput(
      `${where}: checkpoints must be a CheckpointStore (for example new SQLiteCheckpointStore(path)), not ${describeType(store)}` +
        `${isObject(store) ? ` without ${missing.join(", ")}` : ""}.`,
    );
  }
}

/**
 * Checks the options of a runner (`FlowRunner`, `runToolLoop`,
 * `recoverToolLoop`): an options object with a store as `checkpoints`, and
 * each other option it knows of the right type. A wrong type is
 * `InvalidInput` naming the option, before anything runs.
 */
export function checkRunnerOptions(where: string, options: unknown): void {
  const given = checkOptionTypes(where, options, RUNNER_OPTIONS);
  checkStore(where, given["checkpoints"]);
  if (given["name"] === "") throw new InvalidInput(`${where}: name must not be empty.`);
  checkCodec(where, given["codec"]);
}

/** Checks a `codec` option: undefined, or an object with `encode` and `decode` functions. */
export function checkCodec(where: string, codec: unknown): asserts codec is ValueCodec | undefined {
  if (codec === undefined) return;
  if (!(isObject(codec) && typeof codec["encode"] === "function" && typeof codec["decode"] === "function"))
    throw new InvalidInput(
      `${where}: codec must be an object with encode and decode functions, not ${describeType(codec)}.`,
    );
}

/** Checks that a runner is given an `Executor` (an object with `call` and a `registry`). */
export function checkExecutor(where: string, executor: unknown): void {
  if (!(isObject(executor) && typeof executor["call"] === "function" && isObject(executor["registry"]))) {
    throw new InvalidInput(`${where} takes an Executor (new Executor(registry)), not ${describeType(executor)}.`);
  }
}

/**
 * Checks decisions on approvals: an object mapping call ids to `true`/`false`
 * or `{ approved: boolean, reason?: string }`.
 */
export function checkDecisions(decisions: unknown): void {
  if (!isObject(decisions))
    throw new InvalidInput(`decisions must be an object of call id to decision, not ${describeType(decisions)}.`);
  for (const [callId, decision] of Object.entries(decisions))
    readDecision(decision, `decisions[${JSON.stringify(callId)}]`);
}

/**
 * A decision as given: `true`/`false`, or `{ approved: boolean, reason?: string }`.
 * Anything else (`"false"`, `"no"`, `1`, a missing `approved`) is `InvalidInput`
 * naming `where`: only a real `true` approves.
 */
export function readDecision(
  decision: unknown,
  where: string,
): { readonly approved: boolean; readonly reason?: string } {
  if (typeof decision === "boolean") return { approved: decision };
  if (!isObject(decision))
    throw new InvalidInput(`${where} must be true, false or { approved, reason }, not ${describeType(decision)}.`);
  checkOptionTypes(where, decision, { approved: "boolean", reason: "string" });
  if (decision["approved"] === undefined) throw new InvalidInput(`${where}: approved must be true or false.`);
  const { approved, reason } = decision as { approved: boolean; reason?: string };
  return reason === undefined ? { approved } : { approved, reason };
}

/** Checks that `registry` is a `ToolRegistry` (an object with `get`, `has` and `list`). */
export function checkRegistry(where: string, registry: unknown): void {
  const isRegistry =
    isObject(registry) && ["get", "has", "list"].every((method) => typeof registry[method] === "function");
  if (!isRegistry)
    throw new InvalidInput(
      `${where} takes a ToolRegistry (new ToolRegistry().tool(…)), not ${describeType(registry)}.`,
    );
}

/** Checks what an `Executor` is built from: a `ToolRegistry` and an approval port that is a function. */
export function checkExecutorArgs(registry: unknown, options: unknown): void {
  checkRegistry("Executor", registry);
  checkOptionTypes("Executor", options, { approvals: "function" });
}
