import { InvalidInput } from "./errors.js";
import type { ValueCodec } from "./codec.js";

/** The types an option can be checked for. */
export type OptionType = "boolean" | "string" | "function" | "object";

const EXPECTED: Readonly<Record<OptionType, string>> = {
  boolean: "true or false",
  string: "a string",
  function: "a function",
  object: "an object",
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

/** Checks a `codec` option: undefined, or an object with `encode` and `decode` functions. */
export function checkCodec(where: string, codec: unknown): asserts codec is ValueCodec | undefined {
  if (codec === undefined) return;
  if (!(isObject(codec) && typeof codec["encode"] === "function" && typeof codec["decode"] === "function"))
    throw new InvalidInput(
      `${where}: codec must be an object with encode and decode functions, not ${describeType(codec)}.`,
    );
}
