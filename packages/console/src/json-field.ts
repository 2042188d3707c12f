import { InvalidInput } from "@durable/core";

/**
 * A form field that holds JSON, parsed: `InvalidInput` naming it when it is
 * not JSON, with `empty`, what to write instead, when it is empty.
 */
export function jsonField(form: URLSearchParams, field: string, empty = "null for none"): unknown {
  const text = form.get(field) ?? "";
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new InvalidInput(
      `The ${field} is not JSON: ${text.trim() === "" ? `it is empty (${empty})` : text.slice(0, 80)}`,
    );
  }
}
