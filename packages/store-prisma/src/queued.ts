import { isClaimable, type QueuedRun, type RunStatus } from "@durable/core/store";
import { type LeaseColumns, leaseFrom } from "./locked-run.js";
import type { Tables } from "./tables.js";

/**
 * Where a queue's listing stands (`listQueued`): after the run at this
 * priority, turn and run id. It walks the queued index (queue, status,
 * waiting for a decision, priority descending, turn, run id) over the
 * queue's running runs that wait for no decision, in the queue's order,
 * leaving out the runs whose lease is live. A page reads the rest of the
 * cursor's priority, then the lower ones: each a range of the index.
 */
export interface QueuedCursor {
  readonly priority: number;
  readonly turn: number;
  readonly runId: string;
}

/** One page's rows as the database returns them. */
interface QueuedRow extends LeaseColumns {
  readonly run_id: string;
  readonly flow: string;
  readonly queue_key: string | null;
  readonly status: RunStatus;
  readonly queue_priority: number | bigint;
  readonly queued_order: number | bigint;
  readonly now: number | bigint;
}

/** Runs `query` with its values, as the store runs a read. */
export type Reader = <T>(query: string, ...values: unknown[]) => Promise<T[]>;

/**
 * The page of `queue` after `cursor` (from the first for undefined): at most
 * `limit` claimable runs, in the queue's order, and the cursor of the next
 * page, or undefined after the last.
 */
export async function queuedPage(
  db: Tables,
  read: Reader,
  queue: string,
  cursor: QueuedCursor | undefined,
  limit: number,
): Promise<{ runs: QueuedRun[]; next: QueuedCursor | undefined }> {
  const page = (range: string, order: string, values: unknown[], most: number) =>
    read<QueuedRow>(
      `WITH "clock" AS (SELECT ${db.now} AS "now")
       SELECT "r"."run_id", "r"."flow", "r"."queue_key", "r"."status", "r"."queue_priority", "r"."queued_order", "r"."lease_owner", "r"."lease_expires_at", (SELECT "now" FROM "clock") AS "now"
       FROM ${db.tables.runs} AS "r"
       WHERE "r"."queue" = CAST(? AS TEXT) AND "r"."status" = 'running' AND "r"."waits_for_decision" = 0 AND ${range}
         AND ("r"."lease_expires_at" IS NULL OR "r"."lease_expires_at" <= (SELECT "now" FROM "clock"))
       ORDER BY ${order} LIMIT ${most}`,
      queue,
      ...values,
    );
  const everyPriority = `"r"."queue_priority" DESC, "r"."queued_order", "r"."run_id"`;
  let rows: QueuedRow[];
  if (cursor === undefined) rows = await page("true", everyPriority, [], limit);
  else {
    const { priority, turn, runId } = cursor;
    rows = await page(
      `"r"."queue_priority" = CAST(? AS INTEGER) AND ("r"."queued_order", "r"."run_id") > (CAST(? AS INTEGER), CAST(? AS TEXT))`,
      `"r"."queued_order", "r"."run_id"`,
      [priority, turn, runId],
      limit,
    );
    if (rows.length < limit)
      rows = rows.concat(
        await page(`"r"."queue_priority" < CAST(? AS INTEGER)`, everyPriority, [priority], limit - rows.length),
      );
  }
  // The index selected them; the rule has the last word.
  const runs = rows
    .filter((row) => isClaimable(row.status, leaseFrom(row), Number(row.now)))
    .map((row) => ({ runId: row.run_id, name: row.flow, ...(row.queue_key === null ? {} : { key: row.queue_key }) }));
  const last = rows.at(-1);
  const next =
    rows.length === limit && last !== undefined
      ? { priority: Number(last.queue_priority), turn: Number(last.queued_order), runId: last.run_id }
      : undefined;
  return { runs, next };
}
