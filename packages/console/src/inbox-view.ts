import { type CheckpointStore, DurableError, type JsonValue } from "@durable/core";
import {
  type Classification,
  EVENT_TOOL,
  eventStore,
  isJsonObject,
  readInbox,
  type RunEnvelope,
  type Sealer,
} from "@durable/core/runner";

/** One event of a run's inbox as its page shows it. */
export interface InboxEventView {
  /** Its place in the inbox: 0, 1, 2, … in the order the store accepted them. */
  readonly seq: number;
  /** The sender's idempotency key. */
  readonly key: string;
  /** Its name, when and what was sent: absent when withheld (sealed encrypted, and the console has no encryption key). */
  readonly name?: string;
  readonly at?: string;
  readonly payload?: JsonValue;
  /** A wait of the run took it (absent when withheld: its name says which waits could). */
  readonly taken?: boolean;
}

/** A run's inbox, oldest first. */
export interface InboxView {
  readonly events: readonly InboxEventView[];
  /** Its events are encrypted and the console has no encryption key: only their places and keys are shown. */
  readonly withheld: boolean;
}

/**
 * Reads a run's inbox (every event verified, `readInbox`), each event marked
 * taken as the run's waits count them: the first `taken[name]` events of a
 * name went to finished rounds (the envelope), and the current round's waits
 * name theirs in their `done` records. Undefined for a store without the
 * events capability. Events that verify encrypted, read without the
 * encryption key, are withheld; any other failure is the run's problem.
 */
export async function readInboxView(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  envelope: RunEnvelope,
  round: Classification,
): Promise<InboxView | undefined> {
  if (typeof store.sendEvent !== "function" || typeof store.inbox !== "function") return undefined;
  try {
    const inbox = await readInbox(eventStore("the console", store), sealer, runId);
    const takenNow = takenInRound(round);
    const seen = new Map<string, number>();
    const events = inbox.map(({ seq, key, name, at, payload }) => {
      const nth = seen.get(name) ?? 0;
      seen.set(name, nth + 1);
      const earlier = Object.hasOwn(envelope.taken ?? {}, name) ? (envelope.taken?.[name] ?? 0) : 0;
      return { seq, key, name, at, payload, taken: nth < earlier || takenNow.has(seq) };
    });
    return { events, withheld: false };
  } catch (error) {
    if (!(error instanceof DurableError) || error.code !== "CHECKPOINT_STORE_CORRUPT" || sealer.encrypts) throw error;
    const rows = await store.inbox(runId);
    if (rows.length === 0 || !rows.every((row) => sealer.verifiesEncrypted("event", row.sealed))) throw error;
    return { events: rows.map(({ seq, key }) => ({ seq, key })), withheld: true };
  }
}

/** The places in the inbox of the events the current round's finished waits took. */
function takenInRound(round: Classification): Set<number> {
  const seqs = new Set<number>();
  for (const call of round.finished.values()) {
    const value = call.tool === EVENT_TOOL && call.outcome.status === "ok" ? call.outcome.value : undefined;
    const seq = isJsonObject(value) ? value["seq"] : undefined;
    if (typeof seq === "number") seqs.add(seq);
  }
  return seqs;
}
