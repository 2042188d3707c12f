import type { JsonValue } from "@durable/core";
import { isJsonObject, type JsonObject } from "@durable/core/runner";

/** Tokens a model call used, as far as the provider says. */
export interface ModelUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly totalTokens?: number;
  readonly reasoningTokens?: number;
  readonly cachedInputTokens?: number;
}

const FIELDS = ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens"] as const;

/** The sum of several calls' usage, field by field: a field no call reports stays out. */
export function addUsage(usages: Iterable<ModelUsage | undefined>): ModelUsage {
  const total: { -readonly [K in keyof ModelUsage]: number } = {};
  for (const usage of usages)
    for (const field of FIELDS) {
      const value = usage?.[field];
      if (value !== undefined) total[field] = (total[field] ?? 0) + value;
    }
  return total;
}

/** Usage as stored: its known fields that are whole numbers ≥ 0; undefined when `value` is no usage at all. */
export function readUsage(value: JsonValue | undefined): ModelUsage | undefined {
  if (!isJsonObject(value)) return undefined;
  const usage: { -readonly [K in keyof ModelUsage]: number } = {};
  for (const field of FIELDS) {
    const count = value[field];
    if (Number.isSafeInteger(count) && (count as number) >= 0) usage[field] = count as number;
  }
  return usage;
}

/** Usage as plain JSON. */
export function usageJson(usage: ModelUsage): JsonObject {
  return Object.fromEntries(FIELDS.flatMap((field) => (usage[field] === undefined ? [] : [[field, usage[field]]])));
}
