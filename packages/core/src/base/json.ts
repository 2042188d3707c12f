/** Plain JSON data: what state, tool arguments and tool results may hold. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A plain JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/*
 * Type guards for reading what a checkpoint holds: stored data is checked
 * field by field, never cast, so a shape this version does not know is an
 * error instead of a misread.
 */

/** A plain JSON object (not an array, not null). */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A string. */
export function isString(value: unknown): value is string {
  return typeof value === "string";
}

/** A whole number from 0 up. */
export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** An array each of whose items passes `item`. */
export function isArrayOf<T extends JsonValue>(
  value: JsonValue | undefined,
  item: (value: JsonValue) => value is T,
): value is T[] {
  return Array.isArray(value) && value.every(item);
}

/** An object each of whose values passes `item`. */
export function isRecordOf<T extends JsonValue>(
  value: JsonValue | undefined,
  item: (value: JsonValue) => value is T,
): value is { [key: string]: T } {
  return isJsonObject(value) && Object.values(value).every(item);
}
