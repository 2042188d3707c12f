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

/** How an option is checked where its options object is: its type, or `true` when the code that reads it checks it. */
export type OptionCheck = OptionType | true;

/**
 * Every option of `T`, each once, with how it is checked. A table declared as
 * `OptionTable<T>` that leaves out an option of `T`, or names one `T` has not,
 * does not compile: a new option cannot be forgotten.
 */
export type OptionTable<T> = { readonly [K in keyof T]-?: OptionCheck };

/**
 * Checks that `options` is an object whose every key is in `table`, and whose
 * named keys, where given (not `undefined`), have the types asked; returns
 * it. An unknown key (a misspelled option would otherwise be ignored) or a
 * wrong type is `InvalidInput` naming `where` and the option (and the
 * closest known name), before anything runs.
 */
export function checkOptions<T>(where: string, options: unknown, table: OptionTable<T>): Record<string, unknown> {
  if (!isObject(options)) throw new InvalidInput(`${where} takes an options object, not ${describeType(options)}.`);
  const known: Readonly<Record<string, OptionCheck>> = table;
  for (const name of Object.keys(options))
    if (!Object.hasOwn(known, name)) throw new InvalidInput(`${where}: ${unknownOption(name, Object.keys(known))}`);
  for (const [name, type] of Object.entries(known)) {
    const value = options[name];
    if (value === undefined || type === true) continue;
    const ok = type === "object" ? isObject(value) : typeof value === type;
    if (!ok) throw new InvalidInput(`${where}: ${name} must be ${EXPECTED[type]}, not ${describeType(value)}.`);
  }
  return options;
}

/** The message for an unknown option: the closest known name, or every known name when none is close. */
export function unknownOption(name: string, known: readonly string[]): string {
  const close = closestName(name, known);
  if (close !== undefined) return `unknown option \`${name}\`; did you mean \`${close}\`?`;
  return `unknown option \`${name}\`; it takes ${known.length === 0 ? "none" : known.map((each) => `\`${each}\``).join(", ")}.`;
}

/**
 * The known name closest to `name`, ignoring case: one that holds it or that
 * it holds, or one a few edits away (at most a third of its length, two at
 * least); the fewest edits win. Nothing when none is close.
 */
function closestName(name: string, known: readonly string[]): string | undefined {
  const given = name.toLowerCase();
  let best: { name: string; edits: number } | undefined;
  for (const each of known) {
    const other = each.toLowerCase();
    const edits = editDistance(given, other);
    const close = other.includes(given) || given.includes(other) || edits <= Math.max(2, Math.ceil(given.length / 3));
    if (close && (best === undefined || edits < best.edits)) best = { name: each, edits };
  }
  return best?.name;
}

/** How many one-character insertions, deletions or substitutions turn `a` into `b` (Levenshtein). */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const next = [i];
    for (let j = 1; j <= b.length; j += 1)
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[b.length] ?? 0;
}

/** Checks a `codec` option: undefined, or an object with `encode` and `decode` functions. */
export function checkCodec(where: string, codec: unknown): asserts codec is ValueCodec | undefined {
  if (codec === undefined) return;
  if (!(isObject(codec) && typeof codec["encode"] === "function" && typeof codec["decode"] === "function"))
    throw new InvalidInput(
      `${where}: codec must be an object with encode and decode functions, not ${describeType(codec)}.`,
    );
}
