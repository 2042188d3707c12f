import { CheckpointConflict, CheckpointNotFound, InvalidInput, LeaseHeld, RunAlreadyEnded } from "../base/errors.js";
import {
  isEnded,
  type CheckpointRow,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type RunKind,
  type RunStatus,
  type RunWrite,
} from "./contract.js";
import { WAITING } from "./owners.js";
import { checkQueuePlace } from "./queues.js";

export { ASLEEP, isAsleepOwner, WAITING } from "./owners.js";

/** Where a run stands, as a store's latest row for it says: what the protocol's rules read. */
export interface RunHead {
  readonly step: number;
  readonly status: RunStatus;
  readonly name: string;
  readonly kind: RunKind;
  readonly segment: number;
}

/**
 * The compare-and-set rules of `save`, for stores written in TypeScript: why
 * saving `step` over `head` (undefined for a new run) is refused, or
 * undefined when it is accepted. Every store gives the same reasons.
 */
export function saveRefusal(
  runId: string,
  step: number,
  row: CheckpointRow,
  head: RunHead | undefined,
): CheckpointConflict | undefined {
  if (head === undefined) {
    return step === 0
      ? undefined
      : new CheckpointConflict(runId, `nothing is stored, so the first step must be 0, not ${step}.`);
  }
  // A failed run may be claimed again (a raised segment): that is a retry. A done run never goes on.
  if (isEnded(head.status) && !(head.status === "failed" && row.segment > head.segment))
    return new CheckpointConflict(runId, `the run ended (${head.status}).`);
  if (head.name !== row.name || head.kind !== row.kind)
    return new CheckpointConflict(runId, `the run belongs to ${head.kind} ${JSON.stringify(head.name)}.`);
  if (step !== head.step + 1)
    return new CheckpointConflict(
      runId,
      `step ${step} is not the next one (${head.step + 1}): another worker holds the run.`,
    );
  if (row.segment < head.segment) {
    return new CheckpointConflict(
      runId,
      `segment ${row.segment} is older than the run's (${head.segment}): this worker was cut off.`,
    );
  }
  return undefined;
}

/**
 * The rules of `recordCall`: why record `seq` of `segment` is refused over
 * `head` (undefined for an unknown run), where `next` is how many records the
 * run's current segment holds; undefined when it is accepted.
 */
export function recordRefusal(
  runId: string,
  segment: number,
  seq: number,
  head: RunHead | undefined,
  next: number,
): CheckpointNotFound | CheckpointConflict | undefined {
  if (head === undefined) return new CheckpointNotFound(runId);
  if (isEnded(head.status))
    return new CheckpointConflict(runId, `the run ended (${head.status}); it takes no more calls.`);
  if (segment !== head.segment) {
    return new CheckpointConflict(
      runId,
      `call-log segment ${segment} is not the run's current one (${head.segment}): this worker was cut off.`,
    );
  }
  if (seq !== next)
    return new CheckpointConflict(runId, `call record ${seq} of segment ${segment} is not the next one (${next}).`);
  return undefined;
}

/** The longest lease owner a store must keep, in UTF-16 code units. */
export const MAX_OWNER_LENGTH = 200;

/** Checks lease terms before a store reads anything: an owner of 1–200 characters (or "" with no lease) and a whole number of ms ≥ 0. */
export function checkLeaseTerms(terms: LeaseTerms | undefined): void {
  if (terms === undefined) return;
  if (typeof terms.owner !== "string" || terms.owner.length > MAX_OWNER_LENGTH || (terms.owner === "" && terms.ms > 0))
    throw new InvalidInput(`a lease owner must be a string of 1 to ${MAX_OWNER_LENGTH} characters.`);
  if (!Number.isSafeInteger(terms.ms) || terms.ms < 0)
    throw new InvalidInput(`a lease length must be a whole number of ms ≥ 0, not ${terms.ms}.`);
  const { events } = terms as LeaseClaim;
  if (events !== undefined && !(Number.isSafeInteger(events) && events >= 0))
    throw new InvalidInput(`a lease's events seen must be a whole number ≥ 0, not ${String(events)}.`);
}

/**
 * The lease rule of `save`, checked after `saveRefusal` accepted it: a claim
 * (a raised segment) of a run whose lease is live at `now` and held by
 * another owner is `LeaseHeld`, unless the claim takes it over.
 */
export function claimRefusal(
  runId: string,
  row: CheckpointRow,
  head: RunHead | undefined,
  held: Lease | undefined,
  claim: LeaseClaim | undefined,
  now: number,
): LeaseHeld | undefined {
  if (head === undefined || row.segment <= head.segment || held === undefined || held.expiresAt <= now)
    return undefined;
  if (held.owner === (claim?.owner ?? "") || claim?.takeOver === true) return undefined;
  return new LeaseHeld(runId, held.owner, held.expiresAt, now);
}

/** How much of a lease must have passed before a save renews it (a third). */
export const SAVE_RENEWS_AFTER: number = 1 / 3;

/**
 * The lease an accepted save leaves over the lease `held` before it: for a
 * `running` row, the claimer's until `now` + its length, or `held` as it is
 * when it is the claimer's and less than a third of it has passed (saves a
 * moment apart leave the expiry, and the index on it, unchanged); for any
 * other row none (released). A wait for an event (`WAITING`) that saw fewer
 * events than the run's inbox holds (`inbox`) takes none either: an event
 * came while the worker decided to wait.
 */
export function leaseAfterSave(
  row: CheckpointRow,
  claim: LeaseClaim | undefined,
  now: number,
  held: Lease | undefined,
  inbox = 0,
): Lease | undefined {
  if (row.status !== "running" || claim === undefined || claim.ms <= 0) return undefined;
  if (claim.owner === WAITING && (claim.events ?? 0) < inbox) return undefined;
  const fresh = held !== undefined && held.owner === claim.owner && held.expiresAt <= now + claim.ms;
  if (fresh && held.expiresAt - now >= claim.ms * (1 - SAVE_RENEWS_AFTER)) return held;
  return { owner: claim.owner, expiresAt: now + claim.ms };
}

/** The rules of `renew`: why `owner` may not extend the lease of `segment` over `head` and the lease `held`. */
export function renewRefusal(
  runId: string,
  segment: number,
  owner: string,
  head: RunHead | undefined,
  held: Lease | undefined,
): CheckpointNotFound | CheckpointConflict | undefined {
  if (head === undefined) return new CheckpointNotFound(runId);
  if (head.status !== "running")
    return new CheckpointConflict(runId, `the run is ${head.status}: it holds no lease to renew.`);
  if (segment !== head.segment)
    return new CheckpointConflict(
      runId,
      `segment ${segment} is not the run's current one (${head.segment}): this worker was cut off.`,
    );
  if (held === undefined || held.owner !== owner)
    return new CheckpointConflict(
      runId,
      held === undefined
        ? "its lease was released."
        : `its lease is held by ${JSON.stringify(held.owner)}, not ${JSON.stringify(owner)}.`,
    );
  return undefined;
}

/**
 * True when a worker may claim the run now: `running`, with no lease or one
 * that ran out at `now`, and its latest checkpoint not saved waiting for a
 * decision (`CheckpointRow.waitsForDecision`).
 */
export function isClaimable(
  status: RunStatus,
  held: Lease | undefined,
  now: number,
  waitsForDecision = false,
): boolean {
  return status === "running" && !waitsForDecision && (held === undefined || held.expiresAt <= now);
}

/**
 * The rules of `sendEvent`: why event `seq` with `key` is refused over `head`
 * (undefined for an unknown run), where `count` is how many events the
 * run's inbox holds; "duplicate" when the inbox holds `key` already (a
 * resend: nothing is written, nothing refused); undefined when it is accepted.
 */
export function eventRefusal(
  runId: string,
  seq: number,
  head: RunHead | undefined,
  count: number,
  hasKey: boolean,
): CheckpointNotFound | RunAlreadyEnded | CheckpointConflict | "duplicate" | undefined {
  if (head === undefined) return new CheckpointNotFound(runId);
  if (hasKey) return "duplicate";
  if (head.status === "done" || head.status === "failed") return new RunAlreadyEnded(runId, head.status);
  if (seq !== count)
    return new CheckpointConflict(runId, `event ${seq} is not the next one of its inbox (${count}): send it again.`);
  return undefined;
}

/** The longest idempotency key of an event a store must keep, in UTF-16 code units. */
export const MAX_EVENT_KEY_LENGTH = 200;

/** Checks an event before a store reads anything: a whole `seq` ≥ 0, a key of 1–200 characters, a sealed string. */
export function checkEvent(event: { readonly seq: number; readonly key: string; readonly sealed: string }): void {
  if (typeof event !== "object" || event === null)
    throw new InvalidInput("an event is an object { seq, key, sealed }.");
  wholeNumber("seq", event.seq);
  if (typeof event.key !== "string" || event.key.length === 0 || event.key.length > MAX_EVENT_KEY_LENGTH)
    throw new InvalidInput(`an event's key must be a string of 1 to ${MAX_EVENT_KEY_LENGTH} characters.`);
  if (typeof event.sealed !== "string") throw new InvalidInput("an event's sealed envelope must be a string.");
}

/** Checks where `inbox(runId, from)` reads from before a store reads anything: a whole number ≥ 0, or `InvalidInput`. */
export function checkInboxFrom(from: number): void {
  if (!Number.isSafeInteger(from) || from < 0)
    throw new InvalidInput(`an inbox is read from a whole number ≥ 0, not ${String(from)}.`);
}

/** The most writes one `commit` takes. */
export const MAX_BATCH_WRITES = 1_000;

/**
 * Checks a batch before a store reads anything: 1 to `MAX_BATCH_WRITES`
 * writes of a known kind, at most one checkpoint, whole numbers ≥ 0 for every
 * step, segment and seq, and lease terms as `save` takes them. `InvalidInput` otherwise.
 */
export function checkBatch(writes: readonly RunWrite[]): void {
  if (!Array.isArray(writes) || writes.length === 0 || writes.length > MAX_BATCH_WRITES)
    throw new InvalidInput(`a batch holds 1 to ${MAX_BATCH_WRITES} writes.`);
  let saves = 0;
  for (const write of writes) {
    if (write?.kind === "record") {
      wholeNumber("segment", write.segment);
      wholeNumber("seq", write.seq);
      if (typeof write.sealed !== "string") throw new InvalidInput("a record's sealed envelope must be a string.");
    } else if (write?.kind === "save") {
      saves += 1;
      wholeNumber("step", write.step);
      wholeNumber("segment", write.row?.segment);
      checkQueuePlace(write.row?.queue);
      checkLeaseTerms(write.lease);
    } else {
      throw new InvalidInput('each write of a batch is of kind "record" or "save".');
    }
  }
  if (saves > 1) throw new InvalidInput(`a batch holds at most one checkpoint, not ${saves}.`);
}

function wholeNumber(what: string, value: unknown): void {
  if (!Number.isSafeInteger(value) || (value as number) < 0)
    throw new InvalidInput(`${what} must be a whole number ≥ 0, not ${String(value)}.`);
}

/**
 * The rules of `commit`: the first refusal among `writes` applied in order
 * over `head`, each by the rules of `recordCall` or `save` (and the lease
 * rule) as the writes before it left the run; undefined when all are
 * accepted. `next(segment)` is how many records the segment holds before the
 * batch, `held` the run's lease at `now`, `inbox` how many events the run's
 * inbox holds. Returns the lease the batch leaves.
 */
export function commitRefusal(
  runId: string,
  writes: readonly RunWrite[],
  head: RunHead | undefined,
  next: (segment: number) => number,
  held: Lease | undefined,
  now: number,
  inbox = 0,
): { readonly refused: CheckpointConflict | CheckpointNotFound | LeaseHeld } | { readonly lease: Lease | undefined } {
  let current = head;
  let lease = held;
  const added = new Map<number, number>();
  for (const write of writes) {
    if (write.kind === "record") {
      const before = added.get(write.segment) ?? 0;
      const refused = recordRefusal(runId, write.segment, write.seq, current, next(write.segment) + before);
      if (refused !== undefined) return { refused };
      added.set(write.segment, before + 1);
    } else {
      const refused =
        saveRefusal(runId, write.step, write.row, current) ??
        claimRefusal(runId, write.row, current, lease, write.lease, now);
      if (refused !== undefined) return { refused };
      lease = leaseAfterSave(write.row, write.lease, now, lease, inbox);
      const { status, name, kind, segment } = write.row;
      current = { step: write.step, status, name, kind, segment };
    }
  }
  return { lease };
}
