import { InvalidInput } from "./errors.js";
import type { JsonValue } from "./json.js";

const MAX_DEPTH = 512;

/**
 * Encodes plain JSON data canonically: object keys sorted by code unit, no
 * spaces, `-0` as `0`. Equal values give equal bytes whatever their key order,
 * so a signature over the encoding verifies on any worker.
 *
 * Object properties that are `undefined` are left out, as `JSON.stringify` does.
 * Anything else that is not plain JSON (a function, a BigInt, a symbol, a cycle,
 * a class instance such as a Date or Map, an Array subclass or an array with
 * named properties, `undefined` or a hole in an array, NaN or ±Infinity) is an
 * `InvalidInput` naming the path to it.
 *
 * @param what names the value in the error message, such as `"state"`.
 */
export function canonicalJson(value: unknown, what = "value"): string {
  const out: string[] = [];
  encode(value, what, out, [], 0);
  return out.join("");
}

/** Checks that a value is plain JSON data and returns it typed as such. */
export function assertJson(value: unknown, what = "value"): JsonValue {
  canonicalJson(value, what);
  return value as JsonValue;
}

/**
 * The value as a store gives it back: decoded from its canonical encoding
 * (keys sorted, `-0` as `0`, `undefined` properties gone). Code that sees a
 * value on its first run gets this copy, so it sees the same on replay.
 */
export function canonicalCopy(value: unknown, what = "value"): JsonValue {
  return JSON.parse(canonicalJson(value, what)) as JsonValue;
}

function encode(value: unknown, path: string, out: string[], ancestors: object[], depth: number): void {
  switch (typeof value) {
    case "string":
    case "boolean":
      out.push(JSON.stringify(value));
      return;
    case "number":
      if (!Number.isFinite(value)) fail(path, `${String(value)} is not a JSON number`);
      out.push(Object.is(value, -0) ? "0" : JSON.stringify(value));
      return;
    case "object":
      break;
    default:
      fail(path, `${value === undefined ? "undefined" : `a ${typeof value}`} is not plain JSON data`);
  }
  if (value === null) {
    out.push("null");
    return;
  }
  if (depth >= MAX_DEPTH) fail(path, `nesting deeper than ${MAX_DEPTH} levels is not supported`);
  if (ancestors.includes(value)) fail(path, "the value refers to itself (a cycle)");
  ancestors.push(value);
  if (Array.isArray(value)) encodeArray(value, path, out, ancestors, depth);
  else encodeObject(value, path, out, ancestors, depth);
  ancestors.pop();
}

function encodeArray(value: unknown[], path: string, out: string[], ancestors: object[], depth: number): void {
  if (Object.getPrototypeOf(value) !== Array.prototype) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "array";
    fail(path, `a ${name} is not a plain array; copy it into one with Array.from`);
  }
  // An array's own keys are its indexes and "length"; any other would be dropped.
  if (Object.keys(value).length !== value.length || Object.getOwnPropertySymbols(value).length > 0) {
    const named = Object.keys(value).find((key) => !/^(0|[1-9][0-9]*)$/.test(key));
    if (named !== undefined)
      fail(path, `an array with a named property (${JSON.stringify(named)}) is not plain JSON data`);
    if (Object.getOwnPropertySymbols(value).length > 0) fail(path, "symbol keys are not plain JSON data");
  }
  out.push("[");
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) fail(`${path}[${i}]`, "an array hole is not plain JSON data");
    const item: unknown = value[i];
    if (item === undefined) fail(`${path}[${i}]`, "undefined in an array is not plain JSON data");
    if (i > 0) out.push(",");
    encode(item, `${path}[${i}]`, out, ancestors, depth + 1);
  }
  out.push("]");
}

function encodeObject(value: object, path: string, out: string[], ancestors: object[], depth: number): void {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
    fail(path, `a ${name} instance is not plain JSON data; convert it to a plain object, string or number`);
  }
  if (Object.getOwnPropertySymbols(value).length > 0) fail(path, "symbol keys are not plain JSON data");
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  out.push("{");
  let first = true;
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (!first) out.push(",");
    first = false;
    out.push(JSON.stringify(key), ":");
    encode(item, `${path}.${key}`, out, ancestors, depth + 1);
  }
  out.push("}");
}

function fail(path: string, reason: string): never {
  throw new InvalidInput(`${path}: ${reason}.`);
}
