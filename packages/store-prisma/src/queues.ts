import {
  ASLEEP,
  checkQueuePlace,
  isAsleepOwner,
  isStart,
  type Lease,
  malformedColumn,
  type QueueFull,
  type QueuePlace,
  queueRefusal,
  StoreUnavailable,
  UNFINISHED,
  WAITING,
} from "@durable/core/store";
import type { Sql } from "./client.js";
import type { Tables } from "./tables.js";

/*
 * The queues capability's writes (see docs/protocol.md, "Queues"): a queued
 * run's place kept on its row, what a write that leaves it a drive's lease
 * asks of its queue, the queue's lock, and a take's counts by the database's
 * clock. The rules themselves are core's (`isTake`, `queueRefusal`).
 */

/** One SQL fragment, with `?` placeholders, and its values. */
interface Fragment {
  readonly sql: string;
  readonly values: readonly unknown[];
}

/** A run's queue columns, as every read of its row selects them. */
export const QUEUE_COLUMNS = `"queue", "queue_priority", "queue_key", "queue_concurrency", "queue_per_key", "queue_rate_limit", "queue_rate_window_ms"`;

/** The queue columns as the database returns them: "queue" '' and NULL limits for a run on no queue. */
export interface QueueColumns {
  readonly queue: unknown;
  readonly queue_priority: unknown;
  readonly queue_key: unknown;
  readonly queue_concurrency: unknown;
  readonly queue_per_key: unknown;
  readonly queue_rate_limit: unknown;
  readonly queue_rate_window_ms: unknown;
}

/**
 * The place a run's row keeps (undefined for a run on no queue), checked: a
 * column no save writes is `CheckpointStoreCorrupt`.
 */
export function placeFrom(runId: string, row: QueueColumns): QueuePlace | undefined {
  const { queue } = row;
  if (queue === "") return undefined;
  if (typeof queue !== "string") throw malformedColumn(runId, "head", "queue", queue);
  const whole = (column: string, value: unknown): number | undefined => {
    if (value === null) return undefined;
    const number = typeof value === "bigint" ? Number(value) : value;
    if (!Number.isSafeInteger(number)) throw malformedColumn(runId, "head", column, value);
    return number as number;
  };
  const key = row.queue_key;
  if (key !== null && typeof key !== "string") throw malformedColumn(runId, "head", "queue_key", key);
  const limit = whole("queue_rate_limit", row.queue_rate_limit);
  const windowMs = whole("queue_rate_window_ms", row.queue_rate_window_ms);
  if ((limit === undefined) !== (windowMs === undefined))
    throw malformedColumn(runId, "head", "queue_rate_limit", row.queue_rate_limit);
  const place: QueuePlace = {
    queue,
    priority: whole("queue_priority", row.queue_priority) ?? 0,
    ...(key === null ? {} : { key }),
    ...optional("concurrency", whole("queue_concurrency", row.queue_concurrency)),
    ...optional("perKey", whole("queue_per_key", row.queue_per_key)),
    ...(limit === undefined || windowMs === undefined ? {} : { rate: { limit, windowMs } }),
  };
  try {
    checkQueuePlace(place);
  } catch {
    throw malformedColumn(runId, "head", "queue", place);
  }
  return place;
}

function optional<K extends string>(name: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: number };
}

/** The place a run's row keeps, read without a lock: it never changes once step 0 set it. Undefined for an unknown run too. */
export async function readPlace(db: Tables, sql: Sql, runId: string): Promise<QueuePlace | undefined> {
  const rows = await sql.$queryRawUnsafe<QueueColumns[]>(
    db.sql(`SELECT ${QUEUE_COLUMNS} FROM ${db.tables.runs} WHERE "run_id" = ?`),
    runId,
  );
  const row = rows[0];
  return row === undefined ? undefined : placeFrom(runId, row);
}

/**
 * The columns a new run's INSERT sets for its place, with their values: the
 * place, and its turn within its priority, one past the highest of the
 * queue's unfinished runs at that priority (each range a seek of the queued
 * index). Runs saved at once on PostgreSQL may share a turn: the run id
 * orders them. Nothing for a run on no queue (the columns' defaults).
 */
export function placeInsert(db: Tables, place: QueuePlace | undefined): { columns: string; select: Fragment } {
  if (place === undefined) return { columns: "", select: { sql: "", values: [] } };
  const text = "CAST(? AS TEXT)";
  const int = "CAST(? AS INTEGER)";
  const ranges = UNFINISHED.flatMap((status) =>
    [0, 1].map(
      (waits) =>
        `SELECT MAX("queued_order") AS "turn" FROM ${db.tables.runs} WHERE "queue" = ${text} AND "status" = '${status}' AND "waits_for_decision" = ${waits} AND "queue_priority" = ${int}`,
    ),
  );
  const { queue, priority, key, concurrency, perKey, rate } = place;
  return {
    columns: `, "queue", "queue_priority", "queue_key", "queue_concurrency", "queue_per_key", "queue_rate_limit", "queue_rate_window_ms", "queued_order"`,
    select: {
      sql: `, ${text}, ${int}, ${text}, ${int}, ${int}, ${int}, ${int}, (SELECT COALESCE(MAX("turn"), 0) + 1 FROM (${ranges.join(" UNION ALL ")}) AS "turns")`,
      values: [
        queue,
        priority,
        key ?? null,
        concurrency ?? null,
        perKey ?? null,
        rate?.limit ?? null,
        rate?.windowMs ?? null,
        ...ranges.flatMap(() => [queue, priority]),
      ],
    },
  };
}

/** True when the place's slots are counted: a take, or a run that holds one, is seen by the queue's other takes. */
function countsSlots(place: QueuePlace): boolean {
  return place.concurrency !== undefined || place.perKey !== undefined;
}

/** True when a take of `place` at a start (or not) is checked against its limits. */
export function asksQueue(place: QueuePlace, start: boolean): boolean {
  return countsSlots(place) || (start && place.rate !== undefined);
}

/**
 * What a write that leaves a queued run a drive's lease asks of its queue:
 * - `take`: it takes a slot (`isTake`), so the queue's limits must allow it,
 *   counted under the queue's lock in the write's transaction;
 * - `holder`: it keeps the lease its owner holds, no take while the lease is
 *   live; the write is guarded by that (`"lease_expires_at"` after the
 *   clock), so a lease that ran out meanwhile makes it miss, and it is decided
 *   again as a take. On PostgreSQL (`shared`) it holds the queue's lock shared
 *   from before it reads the clock until it commits, so no take counts the
 *   queue in between.
 */
export type QueueCheck =
  | { readonly kind: "take"; readonly place: QueuePlace; readonly start: boolean }
  | { readonly kind: "holder"; readonly place: QueuePlace; readonly shared: boolean };

/**
 * The check of a write at `step` (-1 for a renewal, never a start) of a run
 * on `place` whose lease is `before` and that leaves `owner`'s (undefined: a
 * write that leaves none), with `now` the store's clock when `before` was
 * read (undefined when not read: then a holder's lease is taken to be live,
 * and the write's guard decides). Undefined when the write asks nothing.
 */
export function queueCheck(
  place: QueuePlace | undefined,
  before: Lease | undefined,
  owner: string | undefined,
  step: number,
  now: number | undefined,
): QueueCheck | undefined {
  if (place === undefined || owner === undefined || isAsleepOwner(owner)) return undefined;
  const start = step >= 0 && isStart(step);
  if (!asksQueue(place, start)) return undefined;
  const held = before !== undefined && before.owner === owner && (now === undefined || before.expiresAt > now);
  return held ? { kind: "holder", place, shared: countsSlots(place) } : { kind: "take", place, start };
}

/**
 * PostgreSQL: takes the queue's lock for the rest of the transaction `tx`
 * (an advisory lock on the store's schema and prefix and the queue's name),
 * before the run's row is locked and the clock read: takes of one queue are
 * counted one after another, each seeing the ones before it committed.
 * SQLite: nothing (its write lock serialises every write).
 */
export async function lockQueue(db: Tables, tx: Sql, queue: string): Promise<void> {
  if (db.provider !== "postgresql") return;
  await tx.$executeRawUnsafe(db.sql(`SELECT pg_advisory_xact_lock(${db.lockKey}, hashtext(CAST(? AS TEXT)))`), queue);
}

/** PostgreSQL: the CTE that takes the queue's lock shared, for a holder's write in one statement (`QueueCheck`). */
export function sharedLock(db: Tables, queue: string): Fragment {
  return {
    sql: `"queue_lock" AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(${db.lockKey}, hashtext(CAST(? AS TEXT))) AS "held")`,
    values: [queue],
  };
}

/** A take's counts as the database returns them. */
interface CountRow {
  readonly now: number | bigint;
  readonly held: number | bigint;
  readonly held_by_key: number | bigint;
  readonly starts: number | bigint;
  readonly earliest: number | bigint | null;
}

/** A take: the write `queueCheck` found takes a slot. */
export type QueueTake = Extract<QueueCheck, { kind: "take" }>;

/**
 * Why the queue refuses the take `check` of `runId` (`QueueFull`), counted in
 * `tx` by the database's clock, once the queue's lock is held (or SQLite's
 * write lock): the queue's other runs holding a slot (running, a drive's
 * lease live), those of the run's key, and for a start with a rate, the
 * queue's starts in the window. Allowed, the clock it was counted at, for
 * `keepStart` once the take is written.
 */
export async function takeRefusal(db: Tables, tx: Sql, runId: string, check: QueueTake): Promise<QueueFull | number> {
  const { place, start } = check;
  const t = db.tables;
  const holding = `FROM ${t.runs} AS "r" WHERE "r"."queue" = CAST(? AS TEXT) AND "r"."lease_expires_at" > "clock"."ms"
    AND "r"."run_id" <> CAST(? AS TEXT) AND "r"."status" = 'running' AND "r"."lease_owner" NOT IN (CAST(? AS TEXT), CAST(? AS TEXT))`;
  const window = `FROM ${t.queueStarts} AS "s" WHERE "s"."queue" = CAST(? AS TEXT) AND "s"."at" > "clock"."ms" - CAST(? AS BIGINT)`;
  const windowMs = start ? (place.rate?.windowMs ?? 0) : 0;
  const [row] = await tx.$queryRawUnsafe<CountRow[]>(
    db.sql(
      `SELECT "clock"."ms" AS "now",
         (SELECT COUNT(*) ${holding}) AS "held",
         (SELECT COUNT(*) ${holding} AND "r"."queue_key" = CAST(? AS TEXT)) AS "held_by_key",
         (SELECT COUNT(*) ${window}) AS "starts",
         (SELECT MIN("s"."at") ${window}) AS "earliest"
       FROM (SELECT ${db.now} AS "ms") AS "clock"`,
    ),
    ...[place.queue, runId, ASLEEP, WAITING],
    ...[place.queue, runId, ASLEEP, WAITING, place.key ?? null],
    ...[place.queue, windowMs],
    ...[place.queue, windowMs],
  );
  if (row === undefined) throw new StoreUnavailable("The database returned no row for a query of one row.");
  const now = Number(row.now);
  const counts = {
    held: Number(row.held),
    heldByKey: Number(row.held_by_key),
    starts: Number(row.starts),
    earliestStart: row.earliest === null ? undefined : Number(row.earliest),
  };
  return queueRefusal(runId, place, counts, start, now) ?? now;
}

/**
 * Keeps an accepted start of a queue with a rate (at `now`, the clock the
 * take was counted at) in the queue's starts, in the take's transaction,
 * and prunes the ones out of the window. Nothing for another take.
 */
export async function keepStart(db: Tables, tx: Sql, runId: string, check: QueueTake, now: number): Promise<void> {
  const { place, start } = check;
  const t = db.tables;
  if (!start || place.rate === undefined) return;
  await tx.$executeRawUnsafe(
    db.sql(`INSERT INTO ${t.queueStarts} ("queue", "at", "run_id") VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
    place.queue,
    now,
    runId,
  );
  await tx.$executeRawUnsafe(
    db.sql(`DELETE FROM ${t.queueStarts} WHERE "queue" = ? AND "at" <= ?`),
    place.queue,
    now - place.rate.windowMs,
  );
}
