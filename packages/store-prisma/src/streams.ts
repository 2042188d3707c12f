import {
  CheckpointConflict,
  checkedStreamBatch,
  type DurableError,
  MAX_STREAM_PAGE,
  type StoredStreamBatch,
  type StreamColumns,
  type StreamBatch,
  streamPage,
  streamRefusal,
} from "@durable/core/store";
import type { Sql } from "./client.js";
import { lockRun } from "./locked-run.js";
import type { Tables } from "./tables.js";

const COLUMNS = `"segment", "offset", "count", "sealed"`;

/**
 * Appends `batch` to the run's stream in the transaction `tx` (see
 * `CheckpointStore.appendStream`). The run's row is locked and read as for
 * every other write of the run (`lockRun`), so a claim that raises its
 * segment, an end, or another append waits for this commit or comes before
 * it; then the stream's last batch is read (where the stream ends) and
 * `streamRefusal` decides. Accepted, the batch is inserted; the primary key
 * (run_id, offset) keeps each offset once even past the lock, a batch that
 * meets one there is refused. Returns undefined once written, or the refusal
 * (nothing written).
 */
export async function appendBatch(
  db: Tables,
  tx: Sql,
  runId: string,
  batch: StreamBatch,
): Promise<undefined | DurableError> {
  const run = await lockRun(db, tx, runId);
  const refused = streamRefusal(runId, run.head, await streamLength(db, tx, runId), batch);
  if (refused !== undefined) return refused;
  const inserted = await tx.$executeRawUnsafe(
    db.sql(
      `INSERT INTO ${db.tables.streams} ("run_id", "offset", "count", "segment", "sealed") VALUES (?, ?, ?, ?, ?)
       ON CONFLICT ("run_id", "offset") DO NOTHING`,
    ),
    runId,
    batch.offset,
    batch.count,
    batch.segment,
    batch.sealed,
  );
  if (inserted === 0)
    return new CheckpointConflict(runId, `stream parts from ${batch.offset} refused: the stream holds that part.`);
  return undefined;
}

/**
 * How many parts the run's stream holds: where its last batch ends (the far
 * end of the key's range), read checked; its sealed text is not read, which
 * an append never needs.
 */
async function streamLength(db: Tables, tx: Sql, runId: string): Promise<number> {
  const [last] = await tx.$queryRawUnsafe<StreamColumns[]>(
    db.sql(
      `SELECT "segment", "offset", "count", '' AS "sealed" FROM ${db.tables.streams} WHERE "run_id" = ? ORDER BY "offset" DESC LIMIT 1`,
    ),
    runId,
  );
  if (last === undefined) return 0;
  const { offset, count } = checkedStreamBatch(runId, last);
  return offset + count;
}

/**
 * The SQL of a page of the run's stream from part `?`: the batches from the
 * last to start at or before it (one seek down the primary key), by the key's
 * range, at most `MAX_STREAM_PAGE`. No column but the key chooses the rows,
 * so a malformed row is read and checked, never left out. Values: run id,
 * run id, from.
 */
export function streamQuery(db: Tables): string {
  const t = db.tables.streams;
  return db.sql(
    `SELECT ${COLUMNS} FROM ${t} WHERE "run_id" = ? AND "offset" >= coalesce(
       (SELECT max("offset") FROM ${t} WHERE "run_id" = ? AND "offset" <= ?), 0)
     ORDER BY "offset" LIMIT ${MAX_STREAM_PAGE}`,
  );
}

/**
 * The batches of the run's stream that hold part `from` or a later one, by
 * offset, at most `MAX_STREAM_PAGE` (`CheckpointStore.stream`): each row
 * checked, and the first dropped when it ends before `from` (the stream ends
 * there). Empty for an unknown run.
 */
export async function readStream(db: Tables, sql: Sql, runId: string, from: number): Promise<StoredStreamBatch[]> {
  const rows = await sql.$queryRawUnsafe<StreamColumns[]>(streamQuery(db), runId, runId, from);
  return streamPage(
    rows.map((row) => checkedStreamBatch(runId, row)),
    from,
  );
}

/**
 * Removes the run's stream in the transaction `tx` (`CheckpointStore.dropStream`),
 * under the run's lock, so an append of the run lands wholly before it or after.
 */
export async function dropBatches(db: Tables, tx: Sql, runId: string): Promise<undefined> {
  await lockRun(db, tx, runId);
  await tx.$executeRawUnsafe(db.sql(`DELETE FROM ${db.tables.streams} WHERE "run_id" = ?`), runId);
  return undefined;
}
