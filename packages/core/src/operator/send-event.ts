import { randomUUID } from "node:crypto";
import { canonicalCopy } from "../base/canonical.js";
import { InvalidInput } from "../base/errors.js";
import { assertRunId, assertStorableText } from "../base/names.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { assertEventName, deliverEvent, eventStore, type SentEvent } from "../log/inbox.js";
import { runStorage, STORAGE_OPTIONS, type StorageOptions } from "../run/storage.js";
import { MAX_EVENT_KEY_LENGTH } from "../store/rules.js";
import { RESERVED_EVENTS } from "../calls/tools.js";

/** What `sendEvent` delivers, and where: the workers' storage options (their key, and their `encryptionKey` when they use one). */
export interface SendEventOptions extends StorageOptions {
  readonly runId: string;
  /** What the run waits for (`ctx.waitForEvent(name)`): 1 to 128 characters. */
  readonly name: string;
  /** What the wait gives back: plain JSON (default `null`). */
  readonly payload?: unknown;
  /**
   * Names this event (1 to 200 characters): a resend under the same key is
   * a no-op, whatever became of the run since. Default: a new key, so each
   * send is another event.
   */
  readonly idempotencyKey?: string;
}

const SEND_EVENT_OPTIONS: OptionTable<SendEventOptions> = {
  ...STORAGE_OPTIONS,
  runId: true,
  name: true,
  payload: true,
  idempotencyKey: "string",
};

/**
 * Delivers an event to a run, from any process (see docs/protocol.md,
 * "Events"): sealed into the run's inbox, where its next `waitForEvent` of
 * that name takes it, each event once; a run waiting for one is claimable
 * at once. Two round trips to the store: reading where the inbox ends, then
 * the append (again when a racing sender took that place). An unknown run
 * is `CheckpointNotFound`, an ended one `RunAlreadyEnded`; a store without the
 * events capability `InvalidInput`. Nothing is written on any refusal.
 */
export async function sendEvent(options: SendEventOptions): Promise<SentEvent> {
  const where = "sendEvent";
  checkOptions(where, options, SEND_EVENT_OPTIONS);
  const runId = assertRunId(options.runId);
  const name = assertEventName(where, options.name);
  if (name.startsWith(RESERVED_EVENTS))
    throw new InvalidInput(
      `${where}: event names starting with ${RESERVED_EVENTS} are the library's own (a child run's end).`,
    );
  const key = options.idempotencyKey ?? randomUUID();
  if (key.length === 0 || key.length > MAX_EVENT_KEY_LENGTH)
    throw new InvalidInput(`${where}: idempotencyKey must be a string of 1 to ${MAX_EVENT_KEY_LENGTH} characters.`);
  assertStorableText(key, `${where}: idempotencyKey`);
  const payload = canonicalCopy(options.payload ?? null, "the event's payload");
  const { store, sealer } = runStorage(where, options);
  return deliverEvent(eventStore(where, store), sealer, runId, { name, payload, key });
}
