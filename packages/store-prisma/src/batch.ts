import {
  CheckpointConflict,
  type CheckpointNotFound,
  commitRefusal,
  type LeaseHeld,
  type RunHead,
  type RunWrite,
  UNFINISHED,
} from "@durable/core/store";
import { sqlList } from "./claimable.js";
import type { Sql } from "./client.js";
import { leaseValues, type RunSnapshot } from "./locked-run.js";
import type { Tables } from "./tables.js";

/** A call record of a batch. */
type RecordWrite = Extract<RunWrite, { kind: "record" }>;

/** One SQL statement, with `?` placeholders, and its values. */
interface Statement {
  readonly sql: string;
  readonly values: readonly unknown[];
}

/**
 * The writes of a batch the rules accepted: the run's row moved as a
 * compare-and-set on every column the rules read, then the checkpoint and
 * records inserted only if it moved.
 */
export interface BatchWrites {
  readonly run: Statement;
  readonly inserts: readonly Statement[];
}

/** A batch's first refusal by the protocol's rules, or the writes that apply it. */
type BatchPlan =
  | { readonly refused: CheckpointConflict | CheckpointNotFound | LeaseHeld }
  | { readonly writes: BatchWrites };

/**
 * Decides a batch over the run as `run` read it (`commitRefusal`, the rules
 * of `save` and `recordCall` in order) and, if accepted, writes the row the
 * batch leaves: guarded by what was read, so the writes apply only to the
 * run the rules judged, whether or not a lock kept it.
 */
export function planBatch(db: Tables, runId: string, writes: readonly RunWrite[], run: RunSnapshot): BatchPlan {
  const before = run.head;
  const next = (segment: number) => (before !== undefined && segment === before.segment ? before.segmentCalls : 0);
  const verdict = commitRefusal(runId, writes, before, next, run.lease, run.now);
  if ("refused" in verdict) return verdict;
  // The row the accepted writes leave: each save moves the head, each record counts in its (current) segment.
  let head: RunHead | undefined = before;
  let segmentCalls = before?.segmentCalls ?? 0;
  const records: RecordWrite[] = [];
  const inserts: Statement[] = [];
  for (const write of writes) {
    if (write.kind === "record") {
      segmentCalls += 1;
      records.push(write);
    } else {
      const { status, segment, flow, kind, sealed } = write.row;
      if (head?.segment !== segment) segmentCalls = 0;
      head = { step: write.step, status, segment, flow, kind };
      inserts.push({
        sql: `INSERT INTO ${db.tables.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed")
              SELECT CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT)`,
        values: [runId, write.step, status, segment, flow, kind, sealed],
      });
    }
  }
  // Unreachable once the rules accepted (a batch of an unknown run starts with its step 0), but the types cannot tell.
  if (head === undefined) return { refused: new CheckpointConflict(runId, "the batch has no checkpoint to start it.") };
  if (records.length > 0) inserts.push(insertRecords(db, runId, records));
  const [owner, expiresAt] = leaseValues(verdict.lease);
  const after = [head.step, head.status, head.segment, segmentCalls, owner, expiresAt];
  const moved: Statement =
    before === undefined
      ? {
          sql: `INSERT INTO ${db.tables.runs} ("step", "status", "segment", "segment_calls", "lease_owner", "lease_expires_at", "run_id", "flow", "kind", "updated_at")
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ${db.now}) ON CONFLICT ("run_id") DO NOTHING`,
          values: [...after, runId, head.flow, head.kind],
        }
      : {
          sql: `UPDATE ${db.tables.runs} SET "step" = ?, "status" = ?, "segment" = ?, "segment_calls" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "updated_at" = ${db.now}
                WHERE "run_id" = ? AND "flow" = ? AND "kind" = ? AND "step" = ? AND "status" = ? AND "segment" = ? AND "segment_calls" = ?
                AND "lease_owner" IS NOT DISTINCT FROM CAST(? AS TEXT) AND "lease_expires_at" IS NOT DISTINCT FROM CAST(? AS BIGINT)`,
          values: [
            ...after,
            runId,
            before.flow,
            before.kind,
            before.step,
            before.status,
            before.segment,
            before.segmentCalls,
            ...leaseValues(run.lease),
          ],
        };
  return { writes: { run: moved, inserts } };
}

/**
 * A batch of records only, decided over the run it needs (the first record's
 * segment current and holding `seq` records, the run not ended): then no read
 * is needed, the write is guarded by exactly that. Undefined for a batch with
 * a checkpoint, or one the rules refuse even there: the run must be read.
 */
export function planRecords(db: Tables, runId: string, writes: readonly RunWrite[]): BatchWrites | undefined {
  const first = writes[0];
  const records = writes.filter((write) => write.kind === "record");
  if (first?.kind !== "record" || records.length < writes.length) return undefined;
  const { segment, seq } = first;
  // recordRefusal reads of the run only whether it exists and ended, its segment and its count.
  const needed = { step: 0, status: "running", flow: "", kind: "flow", segment } as const;
  const verdict = commitRefusal(runId, writes, needed, (s) => (s === segment ? seq : 0), undefined, 0);
  if ("refused" in verdict) return undefined;
  return {
    run: {
      sql: `UPDATE ${db.tables.runs} SET "segment_calls" = ? WHERE "run_id" = ? AND "segment" = ? AND "segment_calls" = ? AND "status" IN ${UNFINISHED_IN}`,
      values: [seq + records.length, runId, segment, seq],
    },
    inserts: [insertRecords(db, runId, records)],
  };
}

const UNFINISHED_IN = sqlList(UNFINISHED);

/** The INSERT of a batch's records, in one statement. */
function insertRecords(db: Tables, runId: string, records: readonly RecordWrite[]): Statement {
  const rows = records.map(() => "(CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS TEXT))");
  return {
    sql: `INSERT INTO ${db.tables.calls} ("run_id", "segment", "seq", "sealed")
          SELECT CAST(? AS TEXT), "column1", "column2", "column3" FROM (VALUES ${rows.join(", ")}) AS "w"`,
    values: [runId, ...records.flatMap((record) => [record.segment, record.seq, record.sealed])],
  };
}

/**
 * Applies a plan's writes; false when the run's row had changed since it was
 * read, and nothing was written. PostgreSQL: one statement (the row's write
 * and the inserts as data-modifying CTEs, the inserts guarded by the row's),
 * atomic even outside a transaction. SQLite has no such CTEs: one statement
 * each, inside the caller's transaction.
 */
export async function writeBatch(db: Tables, sql: Sql, writes: BatchWrites): Promise<boolean> {
  if (db.provider === "sqlite") {
    if ((await sql.$executeRawUnsafe(db.sql(writes.run.sql), ...writes.run.values)) !== 1) return false;
    for (const insert of writes.inserts) await sql.$executeRawUnsafe(db.sql(insert.sql), ...insert.values);
    return true;
  }
  const ctes = [
    `"moved" AS (${writes.run.sql} RETURNING 1)`,
    ...writes.inserts.map((insert, i) => `"insert${i}" AS (${insert.sql} WHERE EXISTS (SELECT 1 FROM "moved"))`),
  ];
  const values = [writes.run, ...writes.inserts].flatMap((statement) => statement.values);
  const rows = await sql.$queryRawUnsafe<Array<{ moved: number }>>(
    db.sql(`WITH ${ctes.join(", ")} SELECT CAST(count(*) AS INTEGER) AS "moved" FROM "moved"`),
    ...values,
  );
  return rows[0]?.moved === 1;
}

/** The refusal of a batch whose write missed under the row's lock: only a new run can, started meanwhile by another worker. */
export function taken(runId: string, writes: readonly RunWrite[]): CheckpointConflict {
  const first = writes[0];
  return new CheckpointConflict(
    runId,
    first?.kind === "record"
      ? `call record ${first.seq} of segment ${first.segment} was taken by another worker.`
      : `step ${first?.step ?? 0} was taken by another worker.`,
  );
}
