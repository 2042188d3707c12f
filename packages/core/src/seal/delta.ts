import { isJsonObject, type JsonObject, type JsonValue } from "../base/json.js";

/**
 * One change of a JSON value, as a checkpoint seals it: at `at` (object keys
 * and array indexes from the root), `set` a value, `drop` an object key, or
 * `push` items onto the end of an array.
 */
export type DeltaOp =
  | { readonly at: readonly (string | number)[]; readonly set: JsonValue }
  | { readonly at: readonly (string | number)[]; readonly drop: true }
  | { readonly at: readonly (string | number)[]; readonly push: readonly JsonValue[] };

/**
 * The changes that turn `before` into `after`. Values the two share by
 * reference are skipped without being read, so a run whose data grows by
 * appending (a loop's history) costs what it appended, however long it is.
 * An array that only grew is a `push`; one that shrank is `set` whole.
 */
export function diffJson(before: JsonValue, after: JsonValue): DeltaOp[] {
  const ops: DeltaOp[] = [];
  diff(before, after, [], ops);
  return ops;
}

function diff(before: JsonValue, after: JsonValue, at: (string | number)[], ops: DeltaOp[]): void {
  if (before === after) return;
  if (Array.isArray(before) && Array.isArray(after)) {
    if (after.length < before.length) {
      ops.push({ at, set: after });
      return;
    }
    for (let index = 0; index < before.length; index++)
      diff(before[index] as JsonValue, after[index] as JsonValue, [...at, index], ops);
    if (after.length > before.length) ops.push({ at, push: after.slice(before.length) });
    return;
  }
  if (isJsonObject(before) && isJsonObject(after)) {
    for (const key of Object.keys(after)) {
      const value = after[key];
      // An undefined property is no property, as the canonical encoding leaves it out.
      if (value === undefined) continue;
      const was = own(before, key);
      if (was === undefined) ops.push({ at: [...at, key], set: value });
      else diff(was, value, [...at, key], ops);
    }
    for (const key of Object.keys(before))
      if (before[key] !== undefined && own(after, key) === undefined) ops.push({ at: [...at, key], drop: true });
    return;
  }
  ops.push({ at, set: after });
}

/** The object's own property (never one it inherits, as `toString`), or undefined. */
export function own(object: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/**
 * `base` with `ops` applied, sharing every part no op touched: `base` is left
 * as it was. With `inPlace`, `base` itself is changed (a reader that owns
 * it, rebuilding only the last step, copies nothing). An op whose path does
 * not lead where it says (a key of an array, a push onto an object) gives
 * undefined: the ops were not made for this base.
 */
export function applyDelta(base: JsonValue, ops: readonly DeltaOp[], inPlace = false): JsonValue | undefined {
  let value: JsonValue | undefined = base;
  for (const op of ops) {
    if (value === undefined) return undefined;
    value = applyOp(value, op, 0, inPlace);
  }
  return value;
}

function applyOp(value: JsonValue, op: DeltaOp, depth: number, inPlace: boolean): JsonValue | undefined {
  if (depth === op.at.length) {
    if ("set" in op) return op.set;
    if (!("push" in op) || !Array.isArray(value)) return undefined;
    if (!inPlace) return [...value, ...op.push];
    for (const item of op.push) value.push(item);
    return value;
  }
  const key = op.at[depth] as string | number;
  const last = depth === op.at.length - 1;
  if (Array.isArray(value)) {
    if (typeof key !== "number" || !Number.isSafeInteger(key) || key < 0 || key >= value.length) return undefined;
    if (last && "drop" in op) return undefined;
    const changed = applyOp(value[key] as JsonValue, op, depth + 1, inPlace);
    if (changed === undefined) return undefined;
    const copy = inPlace ? value : [...value];
    copy[key] = changed;
    return copy;
  }
  if (!isJsonObject(value) || typeof key !== "string") return undefined;
  if (last && "drop" in op) {
    if (!Object.hasOwn(value, key)) return undefined;
    if (inPlace) {
      delete value[key];
      return value;
    }
    const { [key]: _dropped, ...rest } = value;
    return rest;
  }
  const inner = own(value, key);
  if (inner === undefined && !(last && "set" in op)) return undefined;
  const changed = inner === undefined ? (op as { set: JsonValue }).set : applyOp(inner, op, depth + 1, inPlace);
  if (changed === undefined) return undefined;
  const copy: JsonObject = inPlace ? value : { ...value };
  // Defined, not assigned: a key named `__proto__` is data, as JSON.parse makes it. Any other key is assigned: faster.
  if (key === "__proto__")
    Object.defineProperty(copy, key, { value: changed, enumerable: true, writable: true, configurable: true });
  else copy[key] = changed;
  return copy;
}

/** True for a list of delta ops as sealed: every op a path and one of `set`, `drop: true` or `push: [...]`. */
export function isDelta(value: JsonValue | undefined): value is DeltaOp[] & JsonValue {
  return Array.isArray(value) && value.every(isOp);
}

function isOp(value: JsonValue): boolean {
  if (!isJsonObject(value)) return false;
  const { at, ...rest } = value;
  const keys = Object.keys(rest);
  if (!Array.isArray(at) || !at.every((key) => typeof key === "string" || isIndex(key)) || keys.length !== 1)
    return false;
  if ("set" in rest) return true;
  if ("drop" in rest) return rest["drop"] === true;
  return Array.isArray(rest["push"]);
}

function isIndex(value: JsonValue): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
