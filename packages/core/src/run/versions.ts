import { InvalidInput } from "../base/errors.js";
import { VersionNotServed } from "../base/code-errors.js";
import { assertStorableText } from "../base/names.js";

/**
 * The version of a flow, a workflow or a tool loop (`version: "2026-12-05"`
 * or `version: 3`): every run seals the version that started it, and only
 * code of that version goes on with it (see docs/protocol.md, "Versions").
 */
export type RunVersion = string | number;

/** The longest version text. */
const MAX_VERSION_LENGTH = 128;

/** True for a version as sealed: 1 to 128 characters, or a whole number ≥ 0. */
export function isRunVersion(value: unknown): value is RunVersion {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0;
  return typeof value === "string" && value.length > 0 && value.length <= MAX_VERSION_LENGTH;
}

/** Checks a version a definition names (`InvalidInput` naming `where`); undefined is no version. */
export function checkRunVersion(where: string, version: unknown): RunVersion | undefined {
  if (version === undefined) return undefined;
  if (!isRunVersion(version))
    throw new InvalidInput(
      `${where}: version must be a string of 1 to ${MAX_VERSION_LENGTH} characters or a whole number ≥ 0, not ${JSON.stringify(version) ?? String(version)}.`,
    );
  if (typeof version === "string") assertStorableText(version, `${where}: the version`);
  return version;
}

/**
 * Refuses a run whose sealed version is not the one `served` (`VersionNotServed`),
 * before anything is read further or written: code of another version would
 * replay its calls under other code.
 */
export function checkServedVersion(
  runId: string,
  name: string,
  version: RunVersion | undefined,
  served: RunVersion | undefined,
): void {
  if (version !== served) throw new VersionNotServed(runId, name, version, served);
}
