import { createHash } from "node:crypto";
import { CheckpointNotFound, RunAlreadyEnded } from "../base/errors.js";
import type { JsonValue } from "../base/json.js";
import { deliverEvent, eventStore } from "../log/inbox.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import { RESERVED_EVENTS } from "../calls/tools.js";
import type { ParentRef } from "./envelope.js";

/** How a child run ended, as its parent's wait receives it. */
export type ChildEnd =
  | { readonly status: "done"; readonly output: JsonValue }
  | { readonly status: "failed"; readonly error: string };

/** The event a child run's end is sent to its parent as: one name per child, so a wait takes only its own child's. */
export function childEndEvent(childRunId: string): string {
  return `${RESERVED_EVENTS}child:${createHash("sha256").update(childRunId).digest("base64url")}`;
}

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
