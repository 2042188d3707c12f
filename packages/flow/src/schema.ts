import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInput } from "@durable/core";

/** Validates a value with any Standard Schema (zod, valibot, arktype); an `InvalidInput` names each failing field. */
export async function validate<T>(schema: StandardSchemaV1<unknown, T>, value: unknown, what: string): Promise<T> {
  const result = await schema["~standard"].validate(value);
  if (result.issues === undefined) return result.value;
  const lines = result.issues.map((issue) => `${fieldOf(issue)}: ${issue.message}`);
  throw new InvalidInput(`${what} is not valid: ${lines.join("; ")}.`);
}

function fieldOf(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((part) => String(typeof part === "object" ? part.key : part));
  return path.length === 0 ? "(the whole value)" : path.join(".");
}
