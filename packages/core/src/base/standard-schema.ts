import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInput } from "./errors.js";
import { isObject } from "./option-checks.js";

/** True for a Standard Schema (zod, valibot, arktype, …): an object whose `~standard` has a `validate` function. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const standard = isObject(value) ? value["~standard"] : undefined;
  return isObject(standard) && typeof standard["validate"] === "function";
}

/** What a schema found wrong with a value, or the schema's output. */
export type Validated<T> = { readonly value: T } | { readonly problems: string };

/** Validates `value` with a Standard Schema; its problems as one line, each failing field named. */
export async function validateWith<T>(schema: StandardSchemaV1<unknown, T>, value: unknown): Promise<Validated<T>> {
  const result = await schema["~standard"].validate(value);
  if (result.issues === undefined) return { value: result.value };
  return { problems: result.issues.map((issue) => `${fieldOf(issue)}: ${issue.message}`).join("; ") };
}

/** Validates a value with a Standard Schema; `InvalidInput` names `what` and each failing field. */
export async function validated<T>(schema: StandardSchemaV1<unknown, T>, value: unknown, what: string): Promise<T> {
  const result = await validateWith(schema, value);
  if ("problems" in result) throw new InvalidInput(`${what} is not valid: ${result.problems}.`);
  return result.value;
}

function fieldOf(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((part) => String(typeof part === "object" ? part.key : part));
  return path.length === 0 ? "(the whole value)" : path.join(".");
}
