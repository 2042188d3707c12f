import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { InvalidInput } from "../base/errors.js";

const current = new AsyncLocalStorage<string>();

/**
 * The idempotency key of the tool call this code runs in: 256 bits, URL-safe,
 * derived from the run id and the call's id. It is the same for the call on
 * every worker and after every recovery, and differs between calls and between
 * runs, so an external API given it (a payment, a mail) applies the call once.
 * Throws outside a tool call.
 */
export function idempotencyKey(): string {
  const key = current.getStore();
  if (key === undefined) throw new InvalidInput("idempotencyKey() is only available inside a tool call.");
  return key;
}

/** The idempotency key of one call of one run. */
export function idempotencyKeyFor(runId: string, callId: string): string {
  return createHash("sha256")
    .update("durable.idempotency.v1\n")
    .update(runId)
    .update("\n")
    .update(callId)
    .digest("base64url");
}

/** Runs `fn` with `key` as the current call's idempotency key. */
export function withIdempotencyKey<T>(key: string, fn: () => T): T {
  return current.run(key, fn);
}
