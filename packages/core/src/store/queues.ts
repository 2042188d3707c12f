import { InvalidInput, QueueFull } from "../base/errors.js";
import type { JsonObject } from "../base/json.js";
import { assertStorableText } from "../base/names.js";
import type { Lease, QueuePlace, RunStatus } from "./contract.js";
import { isAsleepOwner } from "./owners.js";

/*
 * The rules of queues (see docs/protocol.md, "Queues"), for stores written
 * in TypeScript: what a take is, which runs hold a slot, and why a take is
 * refused. A store counts with its own indexes and asks these.
 */

/** The longest queue name, and the longest concurrency key, a store must keep. */
export const MAX_QUEUE_NAME_LENGTH = 128;
export const MAX_QUEUE_KEY_LENGTH = 200;

/** The longest rate window: a store keeps a queue's starts this long at most. */
export const MAX_RATE_WINDOW_MS = 86_400_000;

/** The largest limit, and the range of priorities (they fit a 32-bit column). */
const MAX_LIMIT = 1_000_000;
const MAX_PRIORITY = 2 ** 31 - 1;

/** Checks a row's queue place before a store reads anything: `InvalidInput` naming what is wrong (a name or key that is not storable text too). */
export function checkQueuePlace(place: QueuePlace | undefined): void {
  if (place === undefined) return;
  if (typeof place !== "object" || place === null)
    throw new InvalidInput("a queue place is an object { queue, priority, … }.");
  const { queue, priority, key, concurrency, perKey, rate } = place;
  if (typeof queue !== "string" || queue.length === 0 || queue.length > MAX_QUEUE_NAME_LENGTH)
    throw new InvalidInput(`a queue's name must be a string of 1 to ${MAX_QUEUE_NAME_LENGTH} characters.`);
  // Both are columns of the store, as a run's name is: text every store keeps as it is given.
  assertStorableText(queue, `The queue name ${JSON.stringify(queue)}`);
  if (!Number.isSafeInteger(priority) || Math.abs(priority) > MAX_PRIORITY)
    throw new InvalidInput(
      `a queue priority must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}, not ${String(priority)}.`,
    );
  if (key !== undefined && (typeof key !== "string" || key.length === 0 || key.length > MAX_QUEUE_KEY_LENGTH))
    throw new InvalidInput(`a concurrency key must be a string of 1 to ${MAX_QUEUE_KEY_LENGTH} characters.`);
  if (key !== undefined) assertStorableText(key, `The concurrency key ${JSON.stringify(key)}`);
  limit("concurrency", concurrency);
  limit("perKey", perKey);
  if (rate !== undefined) {
    if (typeof rate !== "object" || rate === null)
      throw new InvalidInput("a queue's rate is an object { limit, windowMs }.");
    limit("rate.limit", rate.limit, true);
    if (!Number.isSafeInteger(rate.windowMs) || rate.windowMs < 1 || rate.windowMs > MAX_RATE_WINDOW_MS)
      throw new InvalidInput(
        `a queue's rate.windowMs must be a whole number of ms from 1 to ${MAX_RATE_WINDOW_MS}, not ${String(rate.windowMs)}.`,
      );
  }
}

function limit(what: string, value: number | undefined, required = false): void {
  if (value === undefined && !required) return;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_LIMIT)
    throw new InvalidInput(`a queue's ${what} must be a whole number from 1 to ${MAX_LIMIT}, not ${String(value)}.`);
}

/** True when a run holds a slot of its queue at `now`: running, its lease live and a drive's (not a sleep's or a wait's). */
export function holdsSlot(status: RunStatus, lease: Lease | undefined, now: number): boolean {
  return status === "running" && lease !== undefined && lease.expiresAt > now && !isAsleepOwner(lease.owner);
}

/**
 * True when a write that leaves the run's lease `after` over `before` takes a
 * slot of its queue: `after` is a drive's lease, and `before` was not that
 * owner's live lease (a claim, a start that leases, a renewal of a lease
 * that ran out). A save or renewal by the live holder takes nothing anew.
 */
export function isTake(before: Lease | undefined, after: Lease | undefined, now: number): boolean {
  if (after === undefined || isAsleepOwner(after.owner)) return false;
  return !(before !== undefined && before.owner === after.owner && before.expiresAt > now);
}

/** A take at step 0 or 1 (the save that starts the run, or the first claim of a queued one) starts the run: it counts against `rate`. */
export function isStart(step: number): boolean {
  return step <= 1;
}

/** What a store counts for a take of one run, by its clock, leaving the run itself out. */
export interface QueueCounts {
  /** Runs of the queue that hold a slot (`holdsSlot`). */
  readonly held: number;
  /** Of those, the runs of the taken run's concurrency key (0 when it has none). */
  readonly heldByKey: number;
  /** For a start with a `rate`: the queue's starts in the window ending now (after `now - windowMs`). */
  readonly starts: number;
  /** For a start with a `rate`: when the earliest of those starts was, by the store's clock. */
  readonly earliestStart?: number | undefined;
}

/**
 * Why the queue's limits refuse a take of `runId` at `now`, `start` true for
 * a start; undefined when they allow it. A store that accepts a start adds
 * `now` to the queue's starts in the same atomic write.
 */
export function queueRefusal(
  runId: string,
  place: QueuePlace,
  counts: QueueCounts,
  start: boolean,
  now: number,
): QueueFull | undefined {
  if (place.concurrency !== undefined && counts.held >= place.concurrency)
    return new QueueFull(runId, place.queue, "concurrency");
  if (place.key !== undefined && place.perKey !== undefined && counts.heldByKey >= place.perKey)
    return new QueueFull(runId, place.queue, "key");
  if (start && place.rate !== undefined && counts.starts >= place.rate.limit) {
    const free = (counts.earliestStart ?? now) + place.rate.windowMs - now;
    return new QueueFull(runId, place.queue, "rate", Math.max(1, free));
  }
  return undefined;
}

/** The queue's order, for a store that sorts in TypeScript: higher priority first, then earlier step 0, then run id. */
export function queueOrder(
  a: { readonly priority: number; readonly queuedAt: number; readonly runId: string },
  b: { readonly priority: number; readonly queuedAt: number; readonly runId: string },
): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.queuedAt !== b.queuedAt) return a.queuedAt - b.queuedAt;
  return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0;
}

/** A place as plain JSON, its fields copied: what a run's envelope seals. */
export function queuePlaceJson(place: QueuePlace): JsonObject {
  const { queue, priority, key, concurrency, perKey, rate } = place;
  return {
    queue,
    priority,
    ...(key === undefined ? {} : { key }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(perKey === undefined ? {} : { perKey }),
    ...(rate === undefined ? {} : { rate: { limit: rate.limit, windowMs: rate.windowMs } }),
  };
}
