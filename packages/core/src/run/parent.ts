import { CheckpointNotFound, RunAlreadyEnded } from "../base/errors.js";
import { deliverEvent, eventStore } from "../log/inbox.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import type { ChildEnd, ParentRef } from "../calls/child-runs.js";

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
