import { randomBytes } from "node:crypto";
import { InvalidInput } from "./errors.js";

/** The longest run id a store must keep. */
export const MAX_RUN_ID_LENGTH = 256;

/**
 * A new run id: 128 random bits from the operating system's CSPRNG, URL-safe.
 * A run id is the only key a shared store has, so it must be unguessable.
 */
export function newRunId(): string {
  return randomBytes(16).toString("base64url");
}

/** Checks a run id: 1 to 256 characters, no control characters. */
export function assertRunId(runId: unknown): string {
  if (typeof runId !== "string" || runId.length === 0 || runId.length > MAX_RUN_ID_LENGTH) {
    throw new InvalidInput(`A run id must be a string of 1 to ${MAX_RUN_ID_LENGTH} characters; use newRunId().`);
  }
  if ([...runId].some((c) => c < " " || c === "\u007f")) throw new InvalidInput("A run id must not hold control characters.");
  return runId;
}
