import type { JsonObject } from "../base/json.js";
import { emit, type EventSink } from "../log/events.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import { DurableRun } from "./durable-run.js";
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
 * it (that worker is fenced: its next record or save is refused), and saves
 * it `failed` with the error `Cancelled: <reason>` and the mark `cancelled`,
 * which no retry goes on from; `extra` is sealed beside the envelope (an
 * operator's mark). Returns the step it was saved as.
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
  try {
    const saved = await run.save("failed", { ...envelopeJson(ended), ...extra });
    await emit(at.events, { type: "run.cancelled", runId: run.runId, kind: at.kind, step: saved.step, reason });
    return saved.step;
  } catch (error) {
    await run.stopLease(true);
    throw error;
  }
}
