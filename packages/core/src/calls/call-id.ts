import { createHash } from "node:crypto";
import { canonicalJson } from "../base/canonical.js";

/**
 * The id of a call: its round, the part of the round it was made `within` (a
 * flow's node, a loop's tool call), its tool, a digest of those and the
 * canonical arguments, and its `occurrence` among calls identical in all of
 * these (0 for the first). Nothing in it depends on when the call was issued
 * or finished, so a call keeps its id, and its idempotency key, on every
 * worker; changed arguments make another call.
 */
export function callIdOf(round: number, within: string, tool: string, args: unknown, occurrence = 0): string {
  return `${callSite(round, within, tool, canonicalJson(args, `the arguments of ${tool}`))}:${occurrence}`;
}

/** A call's id without its occurrence; `argsText` is the canonical JSON of its arguments. */
export function callSite(round: number, within: string, tool: string, argsText: string): string {
  const digest = createHash("sha256")
    .update(canonicalJson([within, tool, argsText]))
    .digest("base64url")
    .slice(0, 22);
  return `${round}:${within}:${tool}:${digest}`;
}
