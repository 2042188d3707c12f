import { CheckpointConflict, CheckpointNotFound, InvalidInput, LeaseHeld } from "./errors.js";
import {
  isEnded,
  type CheckpointRow,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type RunKind,
  type RunStatus,
} from "./checkpoint-store.js";

/** Where a run stands, as a store's latest row for it says: what the protocol's rules read. */
export interface RunHead {
  readonly step: number;
  readonly status: RunStatus;
  readonly flow: string;
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
  if (head.flow !== row.flow || head.kind !== row.kind)
    return new CheckpointConflict(runId, `the run belongs to ${head.kind} ${JSON.stringify(head.flow)}.`);
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
 * other row none (released).
 */
export function leaseAfterSave(
  row: CheckpointRow,
  claim: LeaseClaim | undefined,
  now: number,
  held: Lease | undefined,
): Lease | undefined {
  if (row.status !== "running" || claim === undefined || claim.ms <= 0) return undefined;
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

/** True when a worker may claim the run now: `running`, with no lease or one that ran out at `now`. */
export function isClaimable(status: RunStatus, held: Lease | undefined, now: number): boolean {
  return status === "running" && (held === undefined || held.expiresAt <= now);
}
