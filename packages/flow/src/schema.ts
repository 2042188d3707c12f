import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInput, type JsonValue, type ValueCodec } from "@durable/core";
import {
  canonicalJson,
  decodeValue,
  encodedText,
  encodeValue,
  PLAIN_JSON,
  validated as validate,
} from "@durable/core/runner";

/**
 * Parses a state with the flow's schema once and returns it as the store
 * gives it back (encoded by the run's codec, canonical JSON, decoded). The
 * schema's output must parse back to itself unchanged: a schema that
 * transforms its own output again (dollars in, cents out) would transform the
 * state at every superstep and every recovery, so it is `InvalidInput` before
 * anything is written.
 */
export async function settleState<T>(
  schema: StandardSchemaV1<unknown, T>,
  codec: ValueCodec,
  value: unknown,
  what: string,
): Promise<T> {
  const stored = encodedText(codec, await validate(schema, value, what), what);
  const settled = decodeValue(codec, JSON.parse(stored) as JsonValue, what) as T;
  const again = encodedText(codec, await validate(schema, settled, what), what);
  if (again !== stored) {
    throw new InvalidInput(
      `${what}: the flow's schema changes its own output when it parses it again (${preview(stored)} became ${preview(again)}). ` +
        "A state schema must accept the state it produces unchanged: transform input before run(), or give the field its stored form.",
    );
  }
  return settled;
}

/**
 * Checks that a stored state still parses to itself with the flow's schema,
 * and returns it decoded, untransformed: a stored state is never transformed again.
 */
export async function checkStoredState<T>(
  schema: StandardSchemaV1<unknown, T>,
  codec: ValueCodec,
  stored: JsonValue,
  what: string,
): Promise<T> {
  const text = canonicalJson(stored, what);
  const value = decodeValue(codec, JSON.parse(text) as JsonValue, what) as T;
  if (encodedText(codec, await validate(schema, value, what), what) !== text) {
    throw new InvalidInput(
      `${what} no longer parses to itself with the flow's schema: finish the run with the schema it started with.`,
    );
  }
  return value;
}

/** A settled state as stored: its own form unless a codec encodes it. */
export function storedState(codec: ValueCodec, state: unknown): JsonValue {
  return codec === PLAIN_JSON ? (state as JsonValue) : encodeValue(codec, state, "The state");
}

function preview(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}
