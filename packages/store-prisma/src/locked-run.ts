import { checkedHead, type Lease, malformedColumn, StoreUnavailable, wholeNumber } from "@durable/core/store";
import type { Sql } from "./client.js";
import type { RunState } from "./known-runs.js";
import { placeFrom, QUEUE_COLUMNS, type QueueColumns } from "./queues.js";
import type { Tables } from "./tables.js";

/** What the store reads of one run, under its lock or not: its row (undefined for an unknown run) with its queue place, its lease, the store's clock. */
export interface RunSnapshot {
  readonly head: RunState | undefined;
  readonly lease: Lease | undefined;
  /** The store's clock when the row was read (once the lock was held), in ms since the epoch. */
  readonly now: number;
}

/** A run's lease columns as the database returns them (BIGINT may come back as a bigint). */
export interface LeaseColumns {
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | bigint | null;
}

/** The lease the columns hold: undefined when released (NULL). */
export function leaseFrom(row: LeaseColumns): Lease | undefined {
  return row.lease_owner === null || row.lease_expires_at === null
    ? undefined
    : { owner: row.lease_owner, expiresAt: Number(row.lease_expires_at) };
}

/** The values of the lease columns for `lease`: NULLs when it is released. */
export function leaseValues(lease: Lease | undefined): [string | null, number | null] {
  return lease === undefined ? [null, null] : [lease.owner, lease.expiresAt];
}

interface LockedRow extends LeaseColumns, QueueColumns {
  readonly now: number | bigint;
  readonly flow: unknown;
  readonly kind: unknown;
  readonly step: unknown;
  readonly status: unknown;
  readonly segment: unknown;
  readonly segment_calls: unknown;
  readonly events: unknown;
}

/**
 * The lease the columns of `runId` hold, checked: an owner that is not text,
 * or an expiry that is not a whole number, is `CheckpointStoreCorrupt`.
 */
export function checkedLease(runId: string, row: LeaseColumns): Lease | undefined {
  const { lease_owner: owner, lease_expires_at: expires } = row;
  if (owner !== null && typeof owner !== "string") throw malformedColumn(runId, "head", "lease_owner", owner);
  if (expires !== null) wholeNumber(runId, "head", "lease_expires_at", expires);
  return leaseFrom(row);
}

/**
 * Locks the run's row for the rest of the transaction `tx`, then reads it
 * with its lease and the store's clock, so the rules decide on what no other
 * transaction can change before this one commits. PostgreSQL locks the row
 * (`FOR UPDATE`; an unknown run's INSERT is guarded by its primary key);
 * SQLite begins transactions deferred, so a first write takes the database's
 * write lock before anything is read. The clock is read after the lock is
 * held: a wait for it does not age the time the rules see.
 */
export async function lockRun(db: Tables, tx: Sql, runId: string): Promise<RunSnapshot> {
  if (db.provider === "sqlite") await tx.$executeRawUnsafe(`DELETE FROM ${db.tables.runs} WHERE 0`);
  return readRun(db, tx, runId, true);
}

/**
 * Reads the run's row, its lease and the store's clock in one statement;
 * with `lock` on PostgreSQL, locks the row too (`lockRun`). Unlocked, it is
 * what a write guarded by every column it read (a compare-and-set) is decided on.
 */
export async function readRun(db: Tables, sql: Sql, runId: string, lock = false): Promise<RunSnapshot> {
  const forUpdate = lock && db.provider === "postgresql" ? " FOR UPDATE" : "";
  // The row is a subquery left-joined to one row, so an unknown run still reads the clock.
  const rows = await sql.$queryRawUnsafe<LockedRow[]>(
    db.sql(
      `SELECT ${db.now} AS "now", "h".* FROM (SELECT 1 AS "one") AS "clock" LEFT JOIN (
         SELECT "flow", "kind", "step", "status", "segment", "segment_calls", "events", "lease_owner", "lease_expires_at", ${QUEUE_COLUMNS}
         FROM ${db.tables.runs} WHERE "run_id" = ?${forUpdate}
       ) AS "h" ON true`,
    ),
    runId,
  );
  const row = rows[0];
  if (row === undefined) throw new StoreUnavailable("The database returned no row for a query of one row.");
  const { flow, kind, step, status, segment, segment_calls, events } = row;
  // The left join gives NULL in every column for an unknown run; a stored row of another shape is corrupt.
  const unknown = [flow, kind, step, status, segment, segment_calls, events].every((column) => column === null);
  const head = unknown
    ? undefined
    : {
        ...checkedHead(runId, { name: flow, kind, step, status, segment }),
        segmentCalls: wholeNumber(runId, "head", "segment_calls", segment_calls),
        events: wholeNumber(runId, "head", "events", events),
        queue: placeFrom(runId, row),
      };
  return { head, lease: checkedLease(runId, row), now: Number(row.now) };
}
