import type { DurableError, RunWrite } from "@durable/core/store";
import {
  type BatchTransaction,
  type BatchWrites,
  planBatch,
  planRecords,
  startsRun,
  taken,
  writeBatch,
} from "./batch.js";
import type { Client, Sql } from "./client.js";
import type { Connection } from "./connection.js";
import type { KnownRuns } from "./known-runs.js";
import { lockRun, readRun } from "./locked-run.js";

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
 * always: its lock is the database's, held in this process).
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
  const unlocked = (batch: BatchWrites) => unlockedWrite(db, client, batch, written);
  const guess = known.get(runId) ?? (startsRun(writes) ? { head: undefined, lease: undefined } : undefined);
  const planned = guess === undefined ? undefined : planBatch(db, runId, writes, guess);
  if (planned !== undefined && "writes" in planned && (await unlocked(planned.writes))) return undefined;
  const records = planRecords(db, runId, writes);
  if (records !== undefined && (await unlocked(records))) return undefined;
  if (db.provider === "postgresql") {
    const plan = planBatch(db, runId, writes, await readRun(db, client, runId));
    if (plan !== undefined && "refused" in plan) return plan.refused;
    if (plan !== undefined && (await unlocked(plan.writes))) return undefined;
  }
  return client.$transaction(async (tx) => {
    const plan = planBatch(db, runId, writes, await lockRun(db, tx, runId));
    if (plan === undefined || "refused" in plan) return plan?.refused ?? taken(runId, writes);
    return (await written(tx, plan.writes)) ? undefined : taken(runId, writes);
  }, TRANSACTION);
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
