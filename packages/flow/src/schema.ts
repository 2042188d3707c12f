import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInput } from "@durable/core";
import { canonicalCopy, canonicalJson, validated as validate } from "@durable/core/runner";

/**
 * Parses a state with the flow's schema once and returns it as the store
 * keeps it (canonical JSON, decoded). The schema's output must parse back to
 * itself unchanged: a schema that transforms its own output again (dollars in,
 * cents out) would transform the state at every superstep and every recovery,
 * so it is `InvalidInput` before anything is written.
 */
export async function settleState<T>(schema: StandardSchemaV1<unknown, T>, value: unknown, what: string): Promise<T> {
  const parsed = canonicalJson(await validate(schema, value, what), what);
  const again = canonicalJson(await validate(schema, JSON.parse(parsed), what), what);
  if (again !== parsed) {
    throw new InvalidInput(
      `${what}: the flow's schema changes its own output when it parses it again (${preview(parsed)} became ${preview(again)}). ` +
        "A state schema must accept the state it produces unchanged: transform input before run(), or give the field its stored form.",
    );
  }
  return JSON.parse(parsed) as T;
}

/**
 * Checks that a stored state still parses to itself with the flow's schema,
 * and returns it untransformed: a stored state is never transformed again.
 */
export async function checkStoredState<T>(
  schema: StandardSchemaV1<unknown, T>,
  stored: unknown,
  what: string,
): Promise<T> {
  const text = canonicalJson(stored, what);
  if (canonicalJson(await validate(schema, stored, what), what) !== text) {
    throw new InvalidInput(
      `${what} no longer parses to itself with the flow's schema: finish the run with the schema it started with.`,
    );
  }
  return canonicalCopy(stored, what) as T;
}

function preview(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}
