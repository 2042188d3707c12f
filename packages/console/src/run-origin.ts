import type { JsonValue } from "@durable/core";
import { isCount, isJsonObject, isString } from "@durable/core/runner";

/** The run a fork was made from, and the step of it the fork goes on from. */
export interface ForkedFrom {
  readonly runId: string;
  readonly step: number;
}

/** Where a run comes from, as its checkpoint's data says: the version it started on, the run it was forked from. */
export interface RunOrigin {
  /** The version of the code that started it (`version` in its data), when its start recorded one. */
  readonly version?: string | number;
  /** The run and step it was forked from (`forkedFrom` in its data), when it is a fork. */
  readonly forkedFrom?: ForkedFrom;
}

/**
 * Reads `version` and `forkedFrom` out of a verified checkpoint's data,
 * leaving out either when absent or of another shape: runs saved before
 * these fields existed have neither, and a page shows them without one.
 */
export function runOrigin(data: JsonValue): RunOrigin {
  const fields = isJsonObject(data) ? data : {};
  const { version, forkedFrom } = fields;
  const versioned = (isString(version) && version !== "") || (typeof version === "number" && Number.isFinite(version));
  const forked =
    isJsonObject(forkedFrom) && isString(forkedFrom["runId"]) && isCount(forkedFrom["step"])
      ? { runId: forkedFrom["runId"], step: forkedFrom["step"] }
      : undefined;
  return {
    ...(versioned ? { version: version as string | number } : {}),
    ...(forked === undefined ? {} : { forkedFrom: forked }),
  };
}
