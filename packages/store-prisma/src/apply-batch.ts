import { CheckpointConflict, type DurableError, type RunWrite, UNFINISHED } from "@durable/core/store";
import {
  type BatchTransaction,
  type BatchWrites,
  planBatch,
  planRecords,
  startsRun,
  taken,
  writeBatch,
} from "./batch.js";
import { sqlList } from "./claimable.js";
import type { Client, Sql } from "./client.js";
import type { Connection } from "./connection.js";
import type { KnownRuns } from "./known-runs.js";
import { lockRun, readRun } from "./locked-run.js";
import { keepStart, lockQueue, takeRefusal } from "./queues.js";

/** Interactive transactions are short: they hold a lock only while the store's own statements run. */
export const TRANSACTION = { maxWait: 10_000, timeout: 10_000 };

/**
 * A batch (a save and a record are batches of one), decided by the rules
 * and written guarded by what they judged, as one commit; returns its
 * first refusal. A run the store wrote last is decided on the row it left
 * (`known`), a new run on none, and records alone on the run they need:
 * no read. Otherwise, or when the row was not as judged (nothing was
 * written, and a refusal on a guess is not trusted), PostgreSQL reads
 * without a lock, then writes in one statement: no transaction held open.
 * When the row changed again, it is done under the row's lock (SQLite
 * always: its lock is the database's, held in this process). So is a take
 * of a queued run (see `lockedBatch`).
 */
export async function applyBatch(
  db: Connection,
  known: KnownRuns,
  runId: string,
  writes: readonly RunWrite[],
): Promise<DurableError | undefined> {
  const client = await db.client();
  const written = (sql: Sql, batch: BatchWrites, transaction?: BatchTransaction) =>
    writtenAndKnown(db, known, sql, runId, batch, transaction);
  // A take of a queued run is never written unlocked: its queue's limits are counted first.
  const unlocked = async (batch: BatchWrites) =>
    batch.queue?.kind !== "take" && (await unlockedWrite(db, client, batch, written));
  const guess = known.get(runId) ?? (startsRun(writes) ? { head: undefined, lease: undefined } : undefined);
  const planned = guess === undefined ? undefined : planBatch(db, runId, writes, guess);
  if (planned !== undefined && "writes" in planned && (await unlocked(planned.writes))) return undefined;
  const records = planRecords(db, runId, writes);
  if (records !== undefined && (await unlocked(records))) return undefined;
  let queue = planned !== undefined && "writes" in planned ? planned.writes.queue?.place.queue : undefined;
  if (db.provider === "postgresql") {
    const plan = planBatch(db, runId, writes, await readRun(db, client, runId));
    if (plan !== undefined && "refused" in plan) return plan.refused;
    if (plan !== undefined && (await unlocked(plan.writes))) return undefined;
    queue = plan?.writes.queue?.place.queue;
  }
  for (let attempt = 0; ; attempt++) {
    const outcome = await client.$transaction((tx) => lockedBatch(db, tx, runId, writes, queue, written), TRANSACTION);
    if (typeof outcome !== "string") return outcome;
    // The run's queue was not the one locked (the run was made again meanwhile): again, with its queue's lock.
    if (attempt >= 2)
      return new CheckpointConflict(runId, "its queue changed while the store waited for the queue's lock.");
    queue = outcome;
  }
}

/**
 * A batch under the run's lock, in `tx`, after the lock of `queue` (the
 * queue its run was found on, if a write leaves it a drive's lease; on
 * PostgreSQL, taken before the run's lock and the clock are, as every take
 * of the queue takes them). A take is counted against the queue's limits
 * (`takeRefusal`) before it is written. Returns the refusal, undefined once
 * written, or the queue to lock when the run turned out to be on another.
 */
async function lockedBatch(
  db: Connection,
  tx: Sql,
  runId: string,
  writes: readonly RunWrite[],
  queue: string | undefined,
  written: (sql: Sql, batch: BatchWrites) => Promise<boolean>,
): Promise<DurableError | undefined | string> {
  if (queue !== undefined) await lockQueue(db, tx, queue);
  // A holder's save misses when its lease ran out between the clock's read and the write: it is then decided as a take.
  for (let tries = 0; tries < 3; tries++) {
    const plan = planBatch(db, runId, writes, await lockRun(db, tx, runId));
    if (plan === undefined || "refused" in plan) return plan?.refused ?? taken(runId, writes);
    const check = plan.writes.queue;
    if (check?.kind === "take") {
      if (db.provider === "postgresql" && check.place.queue !== queue) return check.place.queue;
      const counted = await takeRefusal(db, tx, runId, check);
      if (typeof counted !== "number") return counted;
      if (!(await written(tx, plan.writes))) break;
      await keepStart(db, tx, runId, check, counted);
      return undefined;
    }
    if (await written(tx, plan.writes)) return undefined;
    if (check?.kind !== "holder") break;
  }
  return taken(runId, writes);
}

/**
 * Guarded writes with no lock held: PostgreSQL's are one statement; SQLite's
 * one batch transaction on a client the store opened, and an interactive
 * one on a user's client (`fromClient`), where the app's own writes may come
 * between a batch's statements.
 */
function unlockedWrite(
  db: Connection,
  client: Client,
  writes: BatchWrites,
  written: (sql: Sql, batch: BatchWrites, transaction?: BatchTransaction) => Promise<boolean>,
): Promise<boolean> {
  if (db.provider === "postgresql") return written(client, writes);
  if (!db.borrowed) return written(client, writes, { client, options: TRANSACTION });
  return client.$transaction((tx) => written(tx, writes), TRANSACTION);
}

/** Applies guarded writes (as one batch transaction, when given); true when they were, and the run's row is then known as they left it. */
async function writtenAndKnown(
  db: Connection,
  known: KnownRuns,
  sql: Sql,
  runId: string,
  writes: BatchWrites,
  transaction?: BatchTransaction,
): Promise<boolean> {
  const moved = await writeBatch(db, sql, writes, transaction);
  known.set(
    runId,
    moved === undefined || writes.after === undefined ? undefined : { head: writes.after, lease: moved.lease },
  );
  return moved !== undefined;
}

const UNFINISHED_IN = sqlList(UNFINISHED);

/**
 * True when `record` is stored as given, in the run's current segment, and
 * the run goes on: a refused retry of a record whose first try was applied
 * (its answer lost) is then no refusal.
 */
export async function recordHeld(
  db: Connection,
  runId: string,
  record: { readonly segment: number; readonly seq: number; readonly sealed: string },
): Promise<boolean> {
  const t = db.tables;
  const same = await (await db.client()).$queryRawUnsafe<unknown[]>(
    db.sql(
      `SELECT 1 FROM ${t.calls} AS "c" JOIN ${t.runs} AS "r" ON "r"."run_id" = "c"."run_id" AND "r"."segment" = "c"."segment"
       WHERE "c"."run_id" = ? AND "c"."segment" = ? AND "c"."seq" = ? AND "c"."sealed" = ? AND "r"."status" IN ${UNFINISHED_IN}`,
    ),
    runId,
    record.segment,
    record.seq,
    record.sealed,
  );
  return same.length > 0;
}
