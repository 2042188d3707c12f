import {
  checkedEvent,
  type DurableError,
  type EventColumns,
  eventRefusal,
  type StoredEvent,
  WAITING,
} from "@durable/core/store";
import type { Sql } from "./client.js";
import { lockRun } from "./locked-run.js";
import type { Tables } from "./tables.js";

/** An event as `sendEvent` takes it: its place in the inbox, its sender's key, its sealed envelope. */
export interface EventWrite {
  readonly seq: number;
  readonly key: string;
  readonly sealed: string;
}

/**
 * Appends `event` to the run's inbox in the transaction `tx` (see
 * `CheckpointStore.sendEvent`). The run's row is locked and read as for every
 * other write of the run (`lockRun`), with how many events its inbox holds;
 * the key is looked up in the inbox's unique index; `eventRefusal` decides.
 * Accepted, the event is inserted and the row's count moves with it, in the
 * same commit; a lease held by `WAITING` is released by that same update, so
 * the claimable listing has the run at once. A save for `WAITING` decided on
 * the count before it is guarded by that count, so it misses and is decided
 * again (`planBatch`). Returns true once written, false for a resend (nothing
 * written), or the refusal (nothing written).
 */
export async function appendEvent(
  db: Tables,
  tx: Sql,
  runId: string,
  event: EventWrite,
): Promise<boolean | DurableError> {
  const run = await lockRun(db, tx, runId);
  const same = await tx.$queryRawUnsafe<unknown[]>(
    db.sql(`SELECT 1 FROM ${db.tables.events} WHERE "run_id" = ? AND "key" = ?`),
    runId,
    event.key,
  );
  const refused = eventRefusal(runId, event.seq, run.head, run.head?.events ?? 0, same.length > 0);
  if (refused === "duplicate") return false;
  if (refused !== undefined) return refused;
  await tx.$executeRawUnsafe(
    db.sql(`INSERT INTO ${db.tables.events} ("run_id", "seq", "key", "sealed") VALUES (?, ?, ?, ?)`),
    runId,
    event.seq,
    event.key,
    event.sealed,
  );
  const wakes = run.lease?.owner === WAITING ? `, "lease_owner" = NULL, "lease_expires_at" = NULL` : "";
  await tx.$executeRawUnsafe(
    db.sql(`UPDATE ${db.tables.runs} SET "events" = ?${wakes} WHERE "run_id" = ?`),
    event.seq + 1,
    runId,
  );
  return true;
}

/** The run's inbox from event `from` on, by seq: a range of the events' primary key; empty for an unknown run. */
export async function readInbox(db: Tables, sql: Sql, runId: string, from: number): Promise<StoredEvent[]> {
  const rows = await sql.$queryRawUnsafe<EventColumns[]>(
    db.sql(`SELECT "seq", "key", "sealed" FROM ${db.tables.events} WHERE "run_id" = ? AND "seq" >= ? ORDER BY "seq"`),
    runId,
    from,
  );
  return rows.map((row) => checkedEvent(runId, row));
}
