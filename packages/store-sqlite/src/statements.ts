import type Database from "better-sqlite3";
import {
  checkedHead,
  type Lease,
  MAX_STREAM_PAGE,
  malformedColumn,
  type RunKind,
  type RunStatus,
  wholeNumber,
} from "@durable/core/store";
import { CLAIMABLE_RUN, CLAIMABLE_UNQUEUED, QUEUE_HOLDER, type Tables, UNFINISHED_IN } from "./schema.js";

/**
 * The store's clock: SQLite's, in ms since the epoch, read by the statement
 * that uses it. Never this process's `Date.now`, so leases mean the same to
 * every process sharing the file.
 */
const STORE_NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

/** A run's head row: what compare-and-set and the lease rules read. The lease columns are NULL when released. */
export interface RunRow {
  readonly name: string;
  readonly kind: RunKind;
  readonly step: number;
  readonly status: RunStatus;
  readonly segment: number;
  readonly segment_calls: number;
  /** How many events the run's inbox holds: what a send numbers its event by, and a wait's save compares with. */
  readonly events: number;
  readonly lease_owner: string | null;
  readonly lease_expires: number | null;
}

/** One row of a listing: the run, and where the next keyset page starts (the claimable listing pages by expiry too). */
export interface ListedRow {
  readonly run_id: string;
  readonly lease_expires?: number | null;
}

/**
 * The run's head row, checked (`checkedHead`, and its count and lease
 * columns): a row of another shape is `CheckpointStoreCorrupt`, never a
 * refusal decided from it. Undefined for an unknown run.
 */
export function readHead(sql: Statements, runId: string): RunRow | undefined {
  const row = sql.run.get(runId) as Record<keyof RunRow, unknown> | undefined;
  if (row === undefined) return undefined;
  const head = checkedHead(runId, row);
  const count = wholeNumber(runId, "head", "segment_calls", row.segment_calls);
  const events = wholeNumber(runId, "head", "events", row.events);
  const owner = row.lease_owner;
  if (owner !== null && typeof owner !== "string") throw malformedColumn(runId, "head", "lease_owner", owner);
  const expires = row.lease_expires === null ? null : wholeNumber(runId, "head", "lease_expires", row.lease_expires);
  return { ...head, segment_calls: count, events, lease_owner: owner, lease_expires: expires };
}

/** The lease a head row holds, or undefined when the run is unknown or released. */
export function heldLease(run: RunRow | undefined): Lease | undefined {
  if (run === undefined || run.lease_owner === null || run.lease_expires === null) return undefined;
  return { owner: run.lease_owner, expiresAt: run.lease_expires };
}

/** The name of each statement the store runs. */
export type StatementName =
  | "run"
  | "now"
  | "insertCheckpoint"
  | "upsertRun"
  | "setLease"
  | "release"
  | "leaseOf"
  | "latest"
  | "unfinished"
  | "claimableReleased"
  | "claimableRunOut"
  | "deleteCalls"
  | "deleteCheckpoints"
  | "deleteRun"
  | "deleteEvents"
  | "insertCall"
  | "setCalls"
  | "calls"
  | "callsFrom"
  | "eventKey"
  | "insertEvent"
  | "setEvents"
  | "inbox"
  | "nextQueued"
  | "queuePlace"
  | "queueHolders"
  | "queueStarts"
  | "insertStart"
  | "pruneStarts"
  | "queuedSamePriority"
  | "queuedLowerPriority"
  | "lastBatch"
  | "insertBatch"
  | "stream"
  | "deleteStream";

/** The statements of one connection, by name. */
export type Statements = Readonly<Record<StatementName, Database.Statement>>;

/** Prepares every statement once per connection. */
export function prepare(db: Database.Database, t: Tables): Statements {
  return Object.fromEntries(
    Object.entries(statementSql(t)).map(([name, sql]) => [name, db.prepare(sql)]),
  ) as Statements;
}

/** The SQL of every statement the store runs, for tables `t`; tests explain its query plans. */
export function statementSql(t: Tables): Record<StatementName, string> {
  return {
    run: `SELECT flow AS name, kind, step, status, segment, segment_calls, events, lease_owner, lease_expires FROM ${t.runs} WHERE run_id = ?`,
    now: `SELECT ${STORE_NOW} AS now`,
    insertCheckpoint: `INSERT INTO ${t.checkpoints} (run_id, step, status, segment, flow, kind, sealed) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    // A run's queue place is written by its first save (step 0) only: a later save's conflict leaves it as it is.
    upsertRun: `INSERT INTO ${t.runs} (run_id, flow, kind, step, status, segment, segment_calls, lease_owner, lease_expires, waits_for_decision,
         queue, queue_priority, queue_key, queue_concurrency, queue_per_key, queue_rate_limit, queue_rate_window, queued, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${STORE_NOW})
       ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, status = excluded.status,
         segment = excluded.segment, segment_calls = excluded.segment_calls,
         lease_owner = excluded.lease_owner, lease_expires = excluded.lease_expires,
         waits_for_decision = excluded.waits_for_decision, updated_at = excluded.updated_at`,
    setLease: `UPDATE ${t.runs} SET lease_owner = ?, lease_expires = ? WHERE run_id = ?`,
    release: `UPDATE ${t.runs} SET lease_owner = NULL, lease_expires = NULL WHERE run_id = ? AND segment = ? AND lease_owner = ?`,
    leaseOf: `SELECT lease_owner AS owner, lease_expires AS expiresAt, ${STORE_NOW} AS now
       FROM ${t.runs} WHERE run_id = ? AND lease_owner IS NOT NULL AND lease_expires IS NOT NULL`,
    latest: `SELECT run_id AS runId, step, status, segment, flow AS name, kind, sealed FROM ${t.checkpoints} WHERE run_id = ? ORDER BY step DESC LIMIT 1`,
    // Listings page by key (flow, then past the last row), so each page is one range of an index.
    unfinished: `SELECT run_id FROM ${t.runs}
       WHERE flow = ? AND status IN ${UNFINISHED_IN} AND run_id > ? ORDER BY run_id LIMIT ?`,
    // Claimable runs are two ranges of the claimable index: released (NULL expiry), then run out by now. Queued runs
    // are not in it: `listQueued` gives them.
    claimableReleased: `SELECT run_id, lease_expires FROM ${t.runs}
       WHERE flow = ? AND ${CLAIMABLE_UNQUEUED} AND lease_expires IS NULL AND run_id > ? ORDER BY run_id LIMIT ?`,
    claimableRunOut: `SELECT run_id, lease_expires FROM ${t.runs}
       WHERE flow = ? AND ${CLAIMABLE_UNQUEUED} AND lease_expires <= ${STORE_NOW} AND (lease_expires, run_id) > (?, ?)
       ORDER BY lease_expires, run_id LIMIT ?`,
    deleteCalls: `DELETE FROM ${t.calls} WHERE run_id = ?`,
    deleteCheckpoints: `DELETE FROM ${t.checkpoints} WHERE run_id = ?`,
    deleteRun: `DELETE FROM ${t.runs} WHERE run_id = ?`,
    deleteEvents: `DELETE FROM ${t.events} WHERE run_id = ?`,
    insertCall: `INSERT INTO ${t.calls} (run_id, segment, seq, sealed) VALUES (?, ?, ?, ?)`,
    // Under the group's write lock, so the count read with the head is still the stored one.
    setCalls: `UPDATE ${t.runs} SET segment_calls = ? WHERE run_id = ?`,
    calls: `SELECT run_id AS runId, segment, seq, sealed FROM ${t.calls} WHERE run_id = ? ORDER BY segment, seq`,
    // From a place on: the primary key's range (a record whose columns hold no numbers is left to the whole read).
    callsFrom: `SELECT run_id AS runId, segment, seq, sealed FROM ${t.calls} WHERE run_id = ? AND (segment, seq) >= (?, ?) ORDER BY segment, seq`,
    // A resend is found by the unique index on (run_id, key), never by reading the inbox.
    eventKey: `SELECT 1 FROM ${t.events} WHERE run_id = ? AND key = ?`,
    insertEvent: `INSERT INTO ${t.events} (run_id, seq, key, sealed) VALUES (?, ?, ?, ?)`,
    // Under the group's write lock, as setCalls: the count and the lease written over the head read before.
    setEvents: `UPDATE ${t.runs} SET events = ?, lease_owner = ?, lease_expires = ? WHERE run_id = ?`,
    inbox: `SELECT run_id AS runId, seq, key, sealed FROM ${t.events} WHERE run_id = ? AND seq >= ? ORDER BY seq`,
    // The order in which queued runs' step 0s were accepted: a counter of the meta table, raised under the write lock.
    nextQueued: `UPDATE ${t.meta} SET value = CAST(value AS INTEGER) + 1 WHERE key = 'queued' RETURNING CAST(value AS INTEGER) AS queued`,
    queuePlace: `SELECT queue, queue_priority, queue_key, queue_concurrency, queue_per_key, queue_rate_limit, queue_rate_window
       FROM ${t.runs} WHERE run_id = ?`,
    // The runs of @queue other than @runId holding a slot at @now (the store's clock, read by the take's
    // transaction), and those of them with key @key: one range of the holders index.
    queueHolders: `SELECT count(*) AS held, count(CASE WHEN queue_key = @key THEN 1 END) AS heldByKey FROM ${t.runs}
       WHERE queue = @queue AND ${QUEUE_HOLDER} AND lease_expires > @now AND run_id <> @runId`,
    // A queue's starts after the window's beginning: how many, and the earliest.
    queueStarts: `SELECT count(*) AS starts, min(at) AS earliest FROM ${t.queueStarts} WHERE queue = ? AND at > ?`,
    insertStart: `INSERT INTO ${t.queueStarts} (queue, at) VALUES (?, ?)`,
    pruneStarts: `DELETE FROM ${t.queueStarts} WHERE queue = ? AND at <= ?`,
    // A queue's claimable runs in its order, by keyset pages past the last one listed (@priority, @queued): the rest
    // of its priority, then the lower ones; each a range of the queued index.
    queuedSamePriority: `SELECT run_id, flow AS name, queue_key AS key, step, queue_priority AS priority, queued FROM ${t.runs}
       WHERE queue = @queue AND ${CLAIMABLE_RUN} AND (lease_expires IS NULL OR lease_expires <= ${STORE_NOW})
         AND queue_priority = @priority AND queued > @queued ORDER BY queued LIMIT @limit`,
    queuedLowerPriority: `SELECT run_id, flow AS name, queue_key AS key, step, queue_priority AS priority, queued FROM ${t.runs}
       WHERE queue = @queue AND ${CLAIMABLE_RUN} AND (lease_expires IS NULL OR lease_expires <= ${STORE_NOW})
         AND queue_priority < @priority ORDER BY queue_priority DESC, queued LIMIT @limit`,
    // Where the run's stream ends: its last batch, the far end of the primary key's range of the run.
    // Where the stream ends, for an append: its sealed text is not read.
    lastBatch: `SELECT segment, "offset", count, '' AS sealed FROM ${t.streams} WHERE run_id = ? ORDER BY "offset" DESC LIMIT 1`,
    insertBatch: `INSERT INTO ${t.streams} (run_id, "offset", count, segment, sealed) VALUES (?, ?, ?, ?, ?)`,
    // A page of the stream from the batch holding part @from, the last to start at or before it (the primary key's
    // far end below @from): then the key's range from there. No column but the key decides which rows are read, so a
    // malformed row is read and checked, never left out; the caller drops the one batch that ends before @from.
    stream: `SELECT segment, "offset", count, sealed FROM ${t.streams}
       WHERE run_id = @runId AND "offset" >= coalesce(
         (SELECT max("offset") FROM ${t.streams} WHERE run_id = @runId AND "offset" <= @from), 0)
       ORDER BY "offset" LIMIT ${MAX_STREAM_PAGE}`,
    deleteStream: `DELETE FROM ${t.streams} WHERE run_id = ?`,
  };
}
