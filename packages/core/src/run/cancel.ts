import type { JsonObject } from "../base/json.js";
import { envelopeJson, type RunEnvelope } from "./envelope.js";
import { InvalidInput } from "../base/errors.js";
import { assertStorableText } from "../base/names.js";
import { emit, type EventSink } from "../log/events.js";
import { DurableRun } from "./durable-run.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import type { Sealer } from "../seal/sealer.js";

/** What `cancelRun` needs: where the run is, who cancels, where events go. */
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
export async function cancelRun(
  at: Cancelling,
  latest: CheckpointBody,
  envelope: RunEnvelope,
  reason: string,
  extra: JsonObject = {},
): Promise<number> {
  if (typeof reason !== "string" || reason.length === 0 || reason.length > 1_000)
    throw new InvalidInput("cancel: reason must be a string of 1 to 1,000 characters.");
  assertStorableText(reason, "reason");
  const { run } = await DurableRun.claim(at.store, at.sealer, latest, { lease: at.lease, takeOver: true });
  try {
    const ended = await run.save("failed", {
      ...envelopeJson({ ...envelope, error: `Cancelled: ${reason}`, cancelled: true }),
      ...extra,
    });
    await emit(at.events, { type: "run.cancelled", runId: run.runId, kind: at.kind, step: ended.step, reason });
    return ended.step;
  } catch (error) {
    await run.stopLease(true);
    throw error;
  }
}
