import { LeaseHeld } from "@durable/core";
import type { LeaseClaim, LeaseView } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness, RowOptions } from "../harness/harness.js";
import { unfinished } from "./read.js";
import { breaks, expectRejects } from "./rule.js";

/** The workers of the lease cases. */
export const OWNER_A = "worker-a";
export const OWNER_B = "worker-b";
/** A lease no case outlives. */
export const LONG_MS = 300_000;
/** A lease a case waits out. */
export const SHORT_MS = 300;
/** How long past a lease's end a case waits before it counts on the store's clock having passed it: a busy machine's margin. */
export const PAST_MS = 200;

/** A stored expiry may lose a part of a millisecond between a store's representations (microseconds, seconds as a float). */
const EXPIRY_TOLERANCE_MS = 1;

export const leaseRule = (operation: string, expected: string): string => breaks("leases", operation, expected);

/** A claim: `save(runId, step)` from `segment`, raised over the run's, with `lease` (none when undefined). */
export function claim(
  h: Harness,
  runId: string,
  step: number,
  segment: number,
  lease?: LeaseClaim,
  options: RowOptions = {},
): Promise<void> {
  return h.store.save(runId, step, h.row(runId, step, { ...options, segment }), lease);
}

/** Reads the run's lease, expecting `owner` to hold it, and gives it. */
export async function leaseHeldBy(h: Harness, runId: string, owner: string, after: string): Promise<LeaseView> {
  const view = await h.store.leaseOf(runId);
  const operation = `leaseOf(runId) after ${after}`;
  expect(view?.owner, leaseRule(operation, `a lease held by ${JSON.stringify(owner)}`)).toBe(owner);
  // Defined: the expectation above fails for undefined.
  return view as LeaseView;
}

/** Expects the run to hold no lease. */
export async function expectNoLease(h: Harness, runId: string, after: string): Promise<void> {
  expect(
    await h.store.leaseOf(runId),
    leaseRule(`leaseOf(runId) after ${after}`, "undefined: the run holds no lease"),
  ).toBeUndefined();
}

/** Expects two reads of one expiry to agree. */
export function expectSameExpiry(actual: number, expected: number, rule: string): void {
  expect(Math.abs(actual - expected), rule).toBeLessThanOrEqual(EXPIRY_TOLERANCE_MS);
}

/**
 * Expects `save` (a claim of a run under `held`, another owner's live lease)
 * to be refused with `LeaseHeld` naming that owner and expiry, and to write
 * nothing: the latest row and the lease as they were.
 */
export async function expectLeaseHeld(
  h: Harness,
  runId: string,
  operation: string,
  held: LeaseView,
  save: () => Promise<void>,
): Promise<void> {
  const before = await h.store.latest(runId);
  const error = await expectRejects(LeaseHeld, leaseRule(operation, "LeaseHeld, and nothing written"), save());
  expect(error.owner, leaseRule(operation, `LeaseHeld naming the owner, ${JSON.stringify(held.owner)}`)).toBe(
    held.owner,
  );
  expectSameExpiry(
    error.expiresAt,
    held.expiresAt,
    leaseRule(operation, `LeaseHeld naming the expiry leaseOf(runId) reads, ${held.expiresAt} (ms apart)`),
  );
  expect(
    await h.store.latest(runId),
    leaseRule(`latest(runId) after the refused ${operation}`, "the latest row unchanged"),
  ).toEqual(before);
  const after = await leaseHeldBy(h, runId, held.owner, `the refused ${operation}`);
  expectSameExpiry(
    after.expiresAt,
    held.expiresAt,
    leaseRule(`leaseOf(runId) after the refused ${operation}`, "the lease unchanged (ms apart)"),
  );
}

/** Whether `listUnfinished(flow, { claimable: true })` gives the run. */
export async function listedClaimable(h: Harness, flow: string, runId: string): Promise<boolean> {
  return (await unfinished(h.store, flow, { claimable: true })).includes(runId);
}
