import type { JsonValue } from "@durable/core";

/** What a tool call tells the model: its text, with the result as JSON when that is not text, or marked an error. */
export interface ToolAnswer {
  readonly content: string;
  readonly isError?: true;
  readonly result?: JsonValue;
}

/** A value as the model gets it: a string as it is, anything else as JSON text (kept as `result` too). */
export function valueAnswer(value: unknown): ToolAnswer {
  if (typeof value === "string") return { content: value };
  // A codec's decoded value (a Date, a Map) reaches the model as its JSON text, the same on replay.
  const text = JSON.stringify(value === undefined ? null : value);
  return { content: text, result: JSON.parse(text) as JsonValue };
}

/** A call the model should make otherwise: `error: <why>`, marked an error. */
export function errorAnswer(why: string): ToolAnswer {
  return { content: `error: ${why}`, isError: true };
}
