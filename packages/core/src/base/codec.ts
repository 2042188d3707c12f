import { canonicalJson } from "./canonical.js";
import type { JsonValue } from "./json.js";
import { InvalidInput, errorText } from "./errors.js";

/**
 * How values that are not plain JSON (a `Date`, a `Map`, a `BigInt`, a class
 * instance) are kept: `encode` gives a value's plain JSON form, which is
 * sealed canonically like everything else, and `decode` gives the value back.
 * Tool results and a flow's state go through both on the first run as on
 * every replay, so a node sees the same value either way. superjson fits as
 * `{ encode: (v) => superjson.serialize(v), decode: (j) => superjson.deserialize(j) }`.
 */
export interface ValueCodec {
  /** The plain JSON form of a value. */
  encode(value: unknown): unknown;
  /** The value back from its plain JSON form. */
  decode(json: JsonValue): unknown;
}

/** The default codec: values must be plain JSON, and come back as they were stored. */
export const PLAIN_JSON: ValueCodec = { encode: (value) => value, decode: (json) => json };

/** A value as it is stored: encoded, checked to be plain JSON, canonical. `InvalidInput` when it cannot be. */
export function encodeValue(codec: ValueCodec, value: unknown, what: string): JsonValue {
  return JSON.parse(encodedText(codec, value, what)) as JsonValue;
}

/** `encodeValue` as canonical JSON text. */
export function encodedText(codec: ValueCodec, value: unknown, what: string): string {
  if (codec === PLAIN_JSON) return plainJsonText(value, what);
  let json: unknown;
  try {
    json = codec.encode(value);
  } catch (error) {
    throw new InvalidInput(`${what}: the codec could not encode it (${errorText(error)}).`, { cause: error });
  }
  return canonicalJson(json, `${what}, as the codec encoded it,`);
}

/**
 * A value stored without a codec: canonical JSON, or `InvalidInput` that
 * says which option keeps it (a database row with a `Date` is the common case).
 */
function plainJsonText(value: unknown, what: string): string {
  try {
    return canonicalJson(value, what);
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw error;
    throw new InvalidInput(
      `${error.message} Without a \`codec\` option values must be plain JSON: give the runner one (superjson's serialize/deserialize) to store a Date, a Map or a BigInt, or return plain JSON.`,
      { cause: error },
    );
  }
}

/** A value back from its stored form. `InvalidInput` when the codec cannot decode it (it is not the codec that encoded it). */
export function decodeValue(codec: ValueCodec, json: JsonValue, what: string): unknown {
  try {
    return codec.decode(json);
  } catch (error) {
    throw new InvalidInput(
      `${what}: the codec could not decode its stored form (${errorText(error)}); go on with the codec that stored it.`,
      { cause: error },
    );
  }
}
