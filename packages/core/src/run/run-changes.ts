import { CheckpointConflict, InvalidInput } from "../base/errors.js";
import { assertStorableText } from "../base/names.js";
import { type ApprovalAnswers, bindAnswers } from "../calls/approvals.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import { isEnded } from "../store/contract.js";
import type { RunEnvelope } from "./envelope.js";

/*
 * What each action does to a run's envelope, with the refusals it makes
 * before anything is written: one place for the run driver (a worker's
 * resume, retry and cancel) and the operator's actions (the same with only
 * the store and the key). The action then claims the run with the changed
 * envelope, so of two racing actions one wins.
 */

/** Refuses any action on a run that ended, or one an operator cancelled. */
export function goesOn(latest: CheckpointBody, envelope: RunEnvelope<unknown>): void {
  if (isEnded(latest.status)) throw new CheckpointConflict(latest.runId, `the run ended (${latest.status}).`);
  refuseCancelled(latest, envelope);
}

/** A paused run with `answers` bound to its pending calls, stored for the round to spend. */
export function answered<D>(
  latest: CheckpointBody,
  envelope: RunEnvelope<D>,
  answers: ApprovalAnswers,
): RunEnvelope<D> {
  if (latest.status !== "paused")
    throw new CheckpointConflict(latest.runId, `the run is ${latest.status}, not paused: it waits for no approval.`);
  const bound = bindAnswers(latest.runId, envelope.pending, answers);
  return { ...envelope, pending: [], answers: [...envelope.answers, ...bound] };
}

/** A failed run without its error, to go on: refused for a run that did not fail, or was cancelled. */
export function retried<D>(latest: CheckpointBody, envelope: RunEnvelope<D>): RunEnvelope<D> {
  if (latest.status !== "failed")
    throw new CheckpointConflict(latest.runId, `the run is ${latest.status}, not failed: there is nothing to retry.`);
  refuseCancelled(latest, envelope);
  const { error: _failedWith, ...going } = envelope;
  return going;
}

/** A run that has not ended, failed with `Cancelled: <reason>` and marked so no retry goes on from it. */
export function cancelled<D>(latest: CheckpointBody, envelope: RunEnvelope<D>, reason: string): RunEnvelope<D> {
  assertReason("cancel", reason);
  if (isEnded(latest.status)) throw new CheckpointConflict(latest.runId, `the run ended (${latest.status}).`);
  // A run cancelled in its sleep ended asleep no more.
  const { asleep: _asleep, waitsFor: _waitsFor, ...awake } = envelope;
  return { ...awake, error: `Cancelled: ${reason}`, cancelled: true };
}

/** Checks why an operator acts (a cancel's reason, a fork's): 1 to 1,000 characters of storable text. */
export function assertReason(where: string, reason: unknown): asserts reason is string {
  if (typeof reason !== "string" || reason.length === 0 || reason.length > 1_000)
    throw new InvalidInput(`${where}: reason must be a string of 1 to 1,000 characters.`);
  assertStorableText(reason, "reason");
}

function refuseCancelled(latest: CheckpointBody, envelope: RunEnvelope<unknown>): void {
  if (envelope.cancelled === true)
    throw new CheckpointConflict(latest.runId, "the run was cancelled: it does not go on.");
}

/**
 * A run asleep, woken by an operator: without its wake time and what it
 * waits for, and with `wokenBefore`, the start of the segment its claim
 * takes (after every record so far). `CheckpointConflict` for a run that
 * ended, or is not asleep.
 */
export function woken<D>(latest: CheckpointBody, envelope: RunEnvelope<D>): RunEnvelope<D> {
  goesOn(latest, envelope);
  if (latest.status !== "running" || envelope.asleep === undefined)
    throw new CheckpointConflict(latest.runId, "the run is not asleep: there is nothing to wake.");
  const { asleep: _asleep, waitsFor: _waitsFor, ...awake } = envelope;
  return { ...awake, wokenBefore: { segment: latest.segment + 1, seq: 0 } };
}
