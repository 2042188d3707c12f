import { canonicalJson } from "../base/canonical.js";
import { CheckpointNotFound, RunAlreadyEnded } from "../base/errors.js";
import type { JsonValue } from "../base/json.js";
import type { ChildEnd, ParentRef } from "../calls/child-runs.js";
import { deliverEvent, eventStore } from "../log/inbox.js";
import { type CheckpointBody, openCheckpoint } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import { type CheckpointStore, isEnded, type RunKind } from "../store/contract.js";
import { DurableRun } from "./durable-run.js";
import { readEnvelope, type RunEnvelope } from "./envelope.js";

/**
 * Tells a child run's parent how the child ended, before the child is saved
 * ended: a crash in between sends it again on recovery, a duplicate then (its
 * key is the child's). A parent that ended or is gone needs it no more.
 */
export async function tellParent(
  store: CheckpointStore,
  sealer: Sealer,
  parent: ParentRef,
  childRunId: string,
  end: ChildEnd,
): Promise<void> {
  const event = { name: parent.event, payload: end, key: `${childRunId}:ended` };
  try {
    await deliverEvent(eventStore("a child run", store), sealer, parent.runId, event);
  } catch (error) {
    if (!(error instanceof RunAlreadyEnded || error instanceof CheckpointNotFound)) throw error;
  }
}

/** A run of a name and kind, as a child's checks know it. */
interface RunOf {
  readonly runId: string;
  readonly name: string;
  readonly kind: RunKind;
}

/**
 * Child run `runId` of this name and kind, when it ended with a parent to
 * tell: its latest checkpoint (verified), its envelope and the parent.
 * Undefined otherwise. Reads one row while the child runs.
 */
export async function endedChild(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  of: { readonly name: string; readonly kind: RunKind },
): Promise<{ latest: CheckpointBody; envelope: RunEnvelope; parent: ParentRef } | undefined> {
  let row: Awaited<ReturnType<CheckpointStore["latest"]>>;
  try {
    row = await store.latest(runId);
  } catch (error) {
    if (error instanceof CheckpointNotFound) return undefined;
    throw error;
  }
  // The plain column only says whether to read on: what is told is read verified.
  if (!isEnded(row.status)) return undefined;
  const latest = await DurableRun.latest(store, sealer, runId);
  if (!isEnded(latest.status) || latest.kind !== of.kind || latest.name !== of.name) return undefined;
  const envelope = readEnvelope(runId, latest.data);
  return envelope.parent === undefined ? undefined : { latest, envelope, parent: envelope.parent };
}

/** The parent of a child run, when it was cancelled: its run id, and `cancelled: <reason>`. */
export async function cancelledParent(
  store: CheckpointStore,
  sealer: Sealer,
  parent: ParentRef | undefined,
): Promise<{ runId: string; why: string } | undefined> {
  if (parent === undefined) return undefined;
  let latest: CheckpointBody;
  try {
    latest = await DurableRun.latest(store, sealer, parent.runId);
  } catch (error) {
    if (error instanceof CheckpointNotFound) return undefined;
    throw error;
  }
  if (latest.status !== "failed") return undefined;
  const { cancelled, error } = readEnvelope(parent.runId, latest.data);
  if (cancelled !== true) return undefined;
  return { runId: parent.runId, why: `cancelled: ${(error ?? "").replace(/^Cancelled: /, "")}` };
}

/**
 * True when `run` is stored as started with this `parent`; a detached child
 * (no parent) also with this step 0 (`step0`: its input), when the store
 * keeps its history: a run of its flow that someone else started under that
 * id is not taken for it.
 */
export async function startedAs(
  store: CheckpointStore,
  sealer: Sealer,
  run: RunOf,
  parent: ParentRef | undefined,
  step0: JsonValue,
): Promise<boolean> {
  const latest = await DurableRun.latest(store, sealer, run.runId);
  const stored = readEnvelope(run.runId, latest.data).parent;
  const same = stored?.runId === parent?.runId && stored?.event === parent?.event;
  if (!(latest.name === run.name && latest.kind === run.kind && same)) return false;
  if (parent !== undefined || store.history === undefined) return true;
  const [first] = await store.history(run.runId, 0);
  if (first === undefined) return false;
  const opened = openCheckpoint(sealer, first);
  return opened.step === 0 && "data" in opened && canonicalJson(opened.data) === canonicalJson(step0);
}
