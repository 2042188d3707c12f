import type { JsonValue } from "@durable/core";
import { isJsonObject, isString } from "@durable/core/runner";

/** The version of the code that started a run, as its start recorded it. */
export type RunVersion = string | number;

/**
 * The version of the code that started a run (`version` in its checkpoint's
 * data: a string or a number), or undefined when its start recorded none or
 * one of another shape: runs saved before versions were recorded have none,
 * and a page shows them without one.
 */
export function runVersion(data: JsonValue): RunVersion | undefined {
  const version = isJsonObject(data) ? data["version"] : undefined;
  if (isString(version) && version !== "") return version;
  return typeof version === "number" && Number.isFinite(version) ? version : undefined;
}
