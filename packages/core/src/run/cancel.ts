import type { JsonObject } from "../base/json.js";
import { emit, type EventSink } from "../log/events.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import { DurableRun } from "./durable-run.js";
import { checkLeasesOf } from "./lease.js";
import { envelopeJson, readEnvelope, type RunEnvelope } from "./envelope.js";
import { CheckpointNotFound } from "../base/errors.js";
import { isJsonObject, isString } from "../base/json.js";
import { CHILD_TOOL } from "../calls/tools.js";
import { readCallLog } from "../log/call-log.js";
import { isEnded } from "../store/contract.js";
import { cancelledParent, tellParent } from "./parent.js";
import { cancelled } from "./run-changes.js";
import { instruments, runMetricAttributes } from "../telemetry/metrics.js";

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
 * it, with one save, `failed` with the error `Cancelled: <reason>` and the
 * mark `cancelled`, which no retry goes on from (no lease is taken, so its
 * queue never refuses it); `extra` is sealed beside the
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
  // A child run tells its parent first, as one that failed: the parent's wait for it rejects.
  if (envelope.parent !== undefined)
    await tellParent(at.store, at.sealer, envelope.parent, latest.runId, {
      status: "failed",
      error: ended.error ?? "",
    });
  // One save claims and ends the run: it holds no lease on its way, so a full queue never refuses a cancel.
  const data = { ...envelopeJson(ended), ...extra };
  let step: number;
  try {
    ({ step } = await DurableRun.end(at.store, at.sealer, latest, { lease: at.lease, takeOver: true, data }));
  } finally {
    // The save may have landed even when it failed on its way back: a drive of this process learns it now.
    checkLeasesOf(latest.runId, `it was cancelled (${reason})`);
  }
  instruments().runsEnded.add(1, runMetricAttributes(latest, { "durable.run.status": "cancelled" }));
  await emit(at.events, { type: "run.cancelled", runId: latest.runId, kind: at.kind, step, reason });
  await cancelChildren(at, latest, reason);
  return step;
}

/** Cancels the child runs a cancelled run started and waits for (not the detached ones), and theirs in turn. */
async function cancelChildren(at: Cancelling, parent: CheckpointBody, reason: string): Promise<void> {
  const records = await readCallLog(at.store, at.sealer, parent.runId, parent.calls);
  for (const record of records) {
    const { result, args } = record;
    const started = record.tool === CHILD_TOOL && record.kind === "done" && isJsonObject(result);
    if (!started || !isString(result["runId"]) || (isJsonObject(args) && args["detached"] === true)) continue;
    let child: CheckpointBody;
    try {
      child = await DurableRun.latest(at.store, at.sealer, result["runId"]);
    } catch (error) {
      if (error instanceof CheckpointNotFound) continue;
      throw error;
    }
    const envelope = readEnvelope(child.runId, child.data);
    // A fork's log names the children its original started: they are the original's, not the fork's to cancel.
    if (isEnded(child.status) || envelope.parent?.runId !== parent.runId) continue;
    const why = orphanReason(parent.runId, `cancelled: ${reason}`);
    await saveCancelled({ ...at, kind: child.kind }, child, envelope, why);
  }
}

/**
 * Cancels child run `latest` when its parent was cancelled, before it goes
 * on: a parent's cascade reaches only the children its log records, not one
 * whose start's record never landed (the cancel came first), nor those a
 * cascade the store failed left. Returns the reason it was cancelled with, or
 * undefined when its parent was not cancelled.
 */
export async function cancelOrphan(
  at: Cancelling,
  latest: CheckpointBody,
  envelope: RunEnvelope,
): Promise<string | undefined> {
  const parent = await cancelledParent(at.store, at.sealer, envelope.parent);
  if (parent === undefined) return undefined;
  const why = orphanReason(parent.runId, parent.why);
  await saveCancelled(at, latest, envelope, why);
  return why;
}

/** Why a child is cancelled with its parent: at most the 1,000 characters a reason may have, never half of one. */
function orphanReason(parentRunId: string, what: string): string {
  return `its parent run ${JSON.stringify(parentRunId)} was ${what}`.slice(0, 1_000).replace(/[\ud800-\udbff]$/, "");
}
