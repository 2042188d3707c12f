import { randomBytes } from "node:crypto";
import { InvalidInput } from "./errors.js";

/** The longest run id a store must keep. */
export const MAX_RUN_ID_LENGTH = 256;

/** A lone surrogate: a half of a character, which UTF-8 stores cannot keep. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const CONTROL = /\p{Cc}/u;

/**
 * A new run id: 128 random bits from the operating system's CSPRNG, URL-safe.
 * A run id is the only key a shared store has, so it must be unguessable.
 */
export function newRunId(): string {
  return randomBytes(16).toString("base64url");
}

/** Checks a run id: 1 to 256 characters of well-formed text, no control characters. */
export function assertRunId(runId: unknown): string {
  if (typeof runId !== "string" || runId.length === 0 || runId.length > MAX_RUN_ID_LENGTH) {
    throw new InvalidInput(`A run id must be a string of 1 to ${MAX_RUN_ID_LENGTH} characters; use newRunId().`);
  }
  return assertStorableText(runId, "A run id");
}

/**
 * Checks a name every store must keep and give back unchanged (a run id, a
 * flow's name, a key prefix): well-formed UTF-16, so it survives UTF-8
 * (`title.slice(0, n)` can cut an emoji in half), and no control characters.
 */
export function assertStorableText(text: string, what: string): string {
  if (LONE_SURROGATE.test(text))
    throw new InvalidInput(`${what} must be well-formed text: it holds half of a character (a lone surrogate).`);
  if (CONTROL.test(text)) throw new InvalidInput(`${what} must not hold control characters.`);
  return text;
}

/** The longest flow or loop name. */
export const MAX_NAME_LENGTH = 128;

/** Checks the name of a flow or tool loop, which stores keep as a plain column: 1 to 128 characters of storable text. */
export function assertRunName(name: unknown): string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new InvalidInput(`A flow or loop name must be a string of 1 to ${MAX_NAME_LENGTH} characters.`);
  }
  return assertStorableText(name, `The name ${JSON.stringify(name)}`);
}
