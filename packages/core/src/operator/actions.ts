import { checkSeen, decideCalls, type CallDecisions } from "../run/in-doubt-decisions.js";
import { cancelRun } from "../run/cancel.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import { isEnded, type CheckpointStore } from "../store/contract.js";
import type { ValueCodec } from "../base/codec.js";
import { envelopeJson, readEnvelope } from "../run/envelope.js";
import { CheckpointConflict, InvalidInput } from "../base/errors.js";
import { bindDecisions, type Decisions } from "../calls/approvals.js";
import { whileDriving } from "../run/process-lock.js";
import { leaseTerms, type LeaseOptions } from "../run/lease.js";
import { isJsonObject, isString, type JsonObject, type JsonValue } from "../base/json.js";
import { checkCodec } from "../base/option-checks.js";
import { reopenFailed } from "../run/reopen.js";
import { assertStorableText } from "../base/names.js";
import { DurableRun } from "../run/durable-run.js";
import type { CheckpointKeys, Sealer } from "../seal/sealer.js";
import { runStorage, type StorageOptions } from "../run/storage.js";

/*
 * What an operator (a console, a script) does to runs with only the store
 * and the key, far from the workers and their flow definitions: each action
 * is a compare-and-set on the run's latest step, refused when the run moved
 * on since the operator looked, recorded with who acted, and left for the
 * worker serving the run to act on (it finds the run claimable).
 */

/** The actions an operator records. */
export type OperatorAction = "approve" | "decide" | "retry" | "cancel";

/** Who acted, how and when: sealed into the checkpoint an operator's action saves (its data's `operator`). */
export interface OperatorMark {
  readonly action: OperatorAction;
  readonly by: string;
  /** ISO 8601, by the operator's clock. */
  readonly at: string;
  readonly reason?: string;
}

/**
 * Where an operator acts, and as whom: the workers' storage options (their
 * key, and their `encryptionKey` and anchor when they use them), since an
 * action reads the run and writes to it as a worker does.
 */
export interface OperatorOptions extends StorageOptions {
  readonly checkpointKey: CheckpointKeys;
  /** Who acts (1 to 200 characters), recorded with the action. */
  readonly by: string;
  /** The step the operator saw: the action is refused (`CheckpointConflict`) when the run's latest step is another. */
  readonly expectStep?: number;
  /** The lease held while the action is recorded (default: this process's worker id, 30 s); released at its end. */
  readonly lease?: LeaseOptions;
  /** How a decided `{ result }` is stored: the workers' codec (default: plain JSON). */
  readonly codec?: ValueCodec;
}

/** What each action works with once its options are checked. */
interface Acting {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly options: OperatorOptions;
}

function acting(where: string, options: OperatorOptions): Acting {
  if (typeof options?.by !== "string" || options.by.length === 0 || options.by.length > 200)
    throw new InvalidInput(`${where}: by must be a string of 1 to 200 characters: who acts.`);
  assertStorableText(options.by, "by");
  if (options.expectStep !== undefined && (!Number.isSafeInteger(options.expectStep) || options.expectStep < 0))
    throw new InvalidInput(`${where}: expectStep must be a whole number ≥ 0, not ${String(options.expectStep)}.`);
  checkCodec(where, options.codec);
  return { ...runStorage(where, options), options };
}

/** The run's latest checkpoint, verified, refused when it is not the step the operator saw. */
async function latestSeen(at: Acting, runId: string): Promise<CheckpointBody> {
  const latest = await DurableRun.latest(at.store, at.sealer, runId);
  checkSeen(latest, at.options.expectStep);
  return latest;
}

function mark(at: Acting, action: OperatorAction, reason?: string): JsonObject {
  const made: OperatorMark = {
    action,
    by: at.options.by,
    at: new Date().toISOString(),
    ...(reason === undefined ? {} : { reason }),
  };
  return { ...made };
}

/**
 * Decides pending approvals of a paused run: binds each decision to its call
 * and arguments and stores them with a claim (one decision wins the pause),
 * then releases the run. The worker serving it claims it and spends them, as
 * `resume` would. `InvalidInput` for a call that is not pending.
 */
export async function approvePending(runId: string, decisions: Decisions, options: OperatorOptions): Promise<number> {
  const at = acting("approvePending", options);
  return whileDriving(at.store, runId, async () => {
    const latest = await latestSeen(at, runId);
    if (latest.status !== "paused")
      throw new CheckpointConflict(runId, `the run is ${latest.status}, not paused: it waits for no approval.`);
    const envelope = readEnvelope(runId, latest.data);
    const bound = bindDecisions(runId, envelope.pending, decisions);
    const decided = { ...envelope, pending: [], decisions: [...envelope.decisions, ...bound] };
    const data = { ...envelopeJson(decided), operator: mark(at, "approve") };
    const lease = leaseTerms("approvePending", options.lease);
    const { run, checkpoint } = await DurableRun.claim(at.store, at.sealer, latest, { lease, data });
    await run.stopLease(true);
    return checkpoint.step;
  });
}

/**
 * Records decisions on calls in doubt (see `decideCalls`), refused when the
 * run moved on since `expectStep`. Returns the call ids decided.
 */
export async function decideInDoubt(runId: string, decide: CallDecisions, options: OperatorOptions): Promise<string[]> {
  acting("decideInDoubt", options);
  // The same options: decideCalls takes the store, the keys, the anchor, who decides and the step seen.
  return decideCalls(runId, decide, options);
}

/**
 * Asks for a failed run to go on: claims it with a new segment, reopens the
 * calls its tools' errors ended (their attempts start over), saves it
 * `running` without its error and releases it. The worker serving it claims
 * it and drives it, replaying every finished call. A cancelled run does not go on.
 */
export async function requestRetry(runId: string, options: OperatorOptions): Promise<number> {
  const at = acting("requestRetry", options);
  return whileDriving(at.store, runId, async () => {
    const latest = await latestSeen(at, runId);
    if (latest.status !== "failed")
      throw new CheckpointConflict(runId, `the run is ${latest.status}, not failed: there is nothing to retry.`);
    const { error: _failedWith, ...envelope } = readEnvelope(runId, latest.data);
    if (envelope.cancelled === true) throw new CheckpointConflict(runId, "the run was cancelled: it does not go on.");
    const data = envelopeJson(envelope);
    const lease = leaseTerms("requestRetry", options.lease);
    const { run, records } = await DurableRun.claim(at.store, at.sealer, latest, { lease, data });
    try {
      await reopenFailed(at.store, at.sealer, run, records, envelope.round);
      const saved = await run.save("running", { ...data, operator: mark(at, "retry") });
      return saved.step;
    } finally {
      await run.stopLease(true);
    }
  });
}

/**
 * Cancels a run that has not ended, even one a worker drives (it is fenced):
 * saved `failed` with `Cancelled: <reason>`, which no retry goes on from.
 * Returns the step it was saved as.
 */
export async function cancelStored(runId: string, reason: string, options: OperatorOptions): Promise<number> {
  const at = acting("cancelStored", options);
  return whileDriving(at.store, runId, async () => {
    const latest = await latestSeen(at, runId);
    if (isEnded(latest.status)) throw new CheckpointConflict(runId, `the run ended (${latest.status}).`);
    const envelope = readEnvelope(runId, latest.data);
    const lease = leaseTerms("cancelStored", options.lease);
    const where = { store: at.store, sealer: at.sealer, lease, kind: latest.kind, events: undefined };
    return cancelRun(where, latest, envelope, reason, { operator: mark(at, "cancel", reason) });
  });
}

/** The operator's mark a checkpoint's data holds, or undefined (a worker's checkpoint). */
export function operatorMark(data: JsonValue): OperatorMark | undefined {
  const found = isJsonObject(data) ? data["operator"] : undefined;
  if (!isJsonObject(found)) return undefined;
  const { action, by, at, reason } = found;
  if (!isString(action) || !isString(by) || !isString(at)) return undefined;
  if (!["approve", "decide", "retry", "cancel"].includes(action)) return undefined;
  return { action: action as OperatorAction, by, at, ...(isString(reason) ? { reason } : {}) };
}
