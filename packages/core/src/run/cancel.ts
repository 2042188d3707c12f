import type { JsonObject } from "../base/json.js";
import { emit, type EventSink } from "../log/events.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import { DurableRun } from "./durable-run.js";
import { checkLeasesOf } from "./lease.js";
import { envelopeJson, type RunEnvelope } from "./envelope.js";
import { cancelled } from "./run-changes.js";

/** What `saveCancelled` needs: where the run is, who cancels, where events go. */
export interface Cancelling {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly lease: LeaseTerms;
  readonly kind: RunKind;
  readonly events: EventSink | undefined;
}

/**
 * Cancels a run that has not ended: claims it, even from a worker that holds
 * it, and saves it `failed` with the error `Cancelled: <reason>` and the mark
 * `cancelled`, which no retry goes on from; `extra` is sealed beside the
 * envelope (an operator's mark). The drive that held it is fenced (its next
 * record or save is refused) and stops: at once in this process (its tools'
 * signals are aborted), by its next lease renewal in another. Returns the
 * step it was saved as.
 */
export async function saveCancelled(
  at: Cancelling,
  latest: CheckpointBody,
  envelope: RunEnvelope,
  reason: string,
  extra: JsonObject = {},
): Promise<number> {
  const ended = cancelled(latest, envelope, reason);
  const { run } = await DurableRun.claim(at.store, at.sealer, latest, { lease: at.lease, takeOver: true });
  let step: number;
  try {
    ({ step } = await run.save("failed", { ...envelopeJson(ended), ...extra }));
  } catch (error) {
    await run.stopLease(true);
    throw error;
  } finally {
    // The claim took the run whether or not the save landed: a drive of this process learns it now.
    checkLeasesOf(run.runId, `it was cancelled (${reason})`);
  }
  await emit(at.events, { type: "run.cancelled", runId: run.runId, kind: at.kind, step, reason });
  return step;
}
