import {
  CheckpointNotFound,
  checkedStreamBatch,
  type StoredStreamBatch,
  type StreamColumns,
  type StreamBatch,
  streamPage,
  streamRefusal,
} from "@durable/core/store";
import { readHead, type Statements } from "./statements.js";

/**
 * Appends one batch to the run's stream (`CheckpointStore.appendStream`),
 * inside its savepoint of a `BEGIN IMMEDIATE` transaction (`GroupCommit`), so
 * no other append, claim or save comes between the reads and the write.
 * Judged by the protocol's rules (`streamRefusal`) over the run's head row and
 * the stream's last batch (its offset and count are where the stream ends);
 * then the row is inserted. The primary key (run_id, offset) refuses a second
 * batch at one offset even past these rules.
 */
export function appendBatch(sql: Statements, runId: string, batch: StreamBatch): void {
  const run = readHead(sql, runId);
  const refused = streamRefusal(runId, run, streamLength(sql, runId), batch);
  if (refused !== undefined || run === undefined) throw refused ?? new CheckpointNotFound(runId);
  sql.insertBatch.run(runId, batch.offset, batch.count, batch.segment, batch.sealed);
}

/** How many parts the run's stream holds: where its last batch ends, read checked (0 with none). */
function streamLength(sql: Statements, runId: string): number {
  const last = sql.lastBatch.get(runId) as StreamColumns | undefined;
  if (last === undefined) return 0;
  const { offset, count } = checkedStreamBatch(runId, last);
  return offset + count;
}

/**
 * The batches of the run's stream that hold part `from` or a later one, by
 * offset, at most `MAX_STREAM_PAGE` (`CheckpointStore.stream`): one range of
 * the primary key, from the batch that starts at or before `from`. Each row
 * is checked before its count is read; that batch is dropped when it ends
 * before `from` (the stream ends there).
 */
export function readStream(sql: Statements, runId: string, from: number): StoredStreamBatch[] {
  const rows = sql.stream.all({ runId, from }) as StreamColumns[];
  return streamPage(
    rows.map((row) => checkedStreamBatch(runId, row)),
    from,
  );
}
