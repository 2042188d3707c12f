import { CheckpointConflict, CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { isJsonObject, isString, type JsonValue } from "../base/json.js";
import { assertStorableText, MAX_NAME_LENGTH } from "../base/names.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import { checkedEvent } from "../store/rows.js";

/** One event of a run's inbox, verified: what `sendEvent` sealed. */
export interface InboxEvent {
  /** Its number in the inbox: 0, 1, 2, … in the order the store accepted them. */
  readonly seq: number;
  /** The sender's idempotency key. */
  readonly key: string;
  /** What `waitForEvent` waits for. */
  readonly name: string;
  readonly payload: JsonValue;
  /** When it was sent, by the sender's clock (ISO 8601). */
  readonly at: string;
}

/** Checks an event's name: 1 to 128 characters of storable text, or `InvalidInput` naming `where`. */
export function assertEventName(where: string, name: unknown): string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_NAME_LENGTH)
    throw new InvalidInput(`${where}: an event's name must be a string of 1 to ${MAX_NAME_LENGTH} characters.`);
  return assertStorableText(name, `${where}: the event name ${JSON.stringify(name)}`);
}

/** A store with the events capability. */
export type EventStore = CheckpointStore & Required<Pick<CheckpointStore, "sendEvent" | "inbox">>;

/** `store` with its events capability, or `InvalidInput` naming `where` for a store without it. */
export function eventStore(where: string, store: CheckpointStore): EventStore {
  if (typeof store.sendEvent !== "function" || typeof store.inbox !== "function")
    throw new InvalidInput(
      `${where}: this store has no events capability (sendEvent and inbox): use a store that delivers events, or upgrade it.`,
    );
  return store as EventStore;
}

/** Seals an event of `runId` for its place `seq` in the inbox. */
export function sealEvent(sealer: Sealer, runId: string, event: InboxEvent): string {
  const { seq, key, name, payload, at } = event;
  return sealer.seal("event", { runId, seq, key, name, payload, at }, `the payload of event ${JSON.stringify(name)}`);
}

/**
 * Reads and verifies a run's whole inbox: every seal, that each event is
 * this run's, numbered 0, 1, 2, … with no gap, under its stored key, and no
 * key twice. Any failure is `CheckpointStoreCorrupt`.
 */
export async function readInbox(store: EventStore, sealer: Sealer, runId: string): Promise<InboxEvent[]> {
  const rows = await store.inbox(runId);
  const keys = new Set<string>();
  return rows.map((stored, index) => {
    const row = checkedEvent(runId, stored);
    const body = sealer.open("event", row.sealed, row);
    const ok =
      isJsonObject(body) &&
      body["runId"] === runId &&
      body["seq"] === index &&
      row.seq === index &&
      body["key"] === row.key &&
      isString(body["name"]) &&
      isString(body["at"]) &&
      body["payload"] !== undefined;
    if (!ok)
      throw new CheckpointStoreCorrupt(
        runId,
        `event ${index} of its inbox is not the one sealed for that place: events are missing, out of order or moved.`,
      );
    if (keys.has(row.key))
      throw new CheckpointStoreCorrupt(runId, `its inbox holds event key ${JSON.stringify(row.key)} twice.`);
    keys.add(row.key);
    return {
      seq: index,
      key: row.key,
      name: body["name"] as string,
      payload: body["payload"] as JsonValue,
      at: body["at"] as string,
    };
  });
}

/** What became of a sent event: `sent` into the run's inbox as event `seq`, or a `duplicate` of one already there. */
export type SentEvent =
  | { readonly status: "sent"; readonly runId: string; readonly key: string; readonly seq: number }
  | { readonly status: "duplicate"; readonly runId: string; readonly key: string };

/** How often a send is tried again when other senders took its place in the inbox first. */
const SEND_ATTEMPTS = 20;

/**
 * Seals and appends one event to the run's inbox where it ends (read first),
 * again when a racing sender took that place (`CheckpointConflict`), at most
 * 20 times; a key the inbox holds is a `duplicate`. The store's refusals
 * (`CheckpointNotFound`, `RunAlreadyEnded`) are thrown as they are.
 */
export async function deliverEvent(
  store: EventStore,
  sealer: Sealer,
  runId: string,
  event: { readonly name: string; readonly payload: JsonValue; readonly key: string },
): Promise<SentEvent> {
  const { name, payload, key } = event;
  const at = new Date().toISOString();
  for (let attempt = 1; ; attempt += 1) {
    const held = await store.inbox(runId);
    if (held.some((row) => row.key === key)) return { status: "duplicate", runId, key };
    const seq = held.length;
    const sealed = sealEvent(sealer, runId, { seq, key, name, payload, at });
    try {
      return (await store.sendEvent(runId, { seq, key, sealed }))
        ? { status: "sent", runId, key, seq }
        : { status: "duplicate", runId, key };
    } catch (error) {
      if (!(error instanceof CheckpointConflict) || attempt >= SEND_ATTEMPTS) throw error;
    }
  }
}
