import {
  CheckpointConflict,
  type CheckpointNotFound,
  commitRefusal,
  type Lease,
  type LeaseClaim,
  type LeaseHeld,
  type RunHead,
  type RunWrite,
  SAVE_RENEWS_AFTER,
  UNFINISHED,
} from "@durable/core/store";
import { sqlList } from "./claimable.js";
import type { Client, Sql, TransactionOptions } from "./client.js";
import type { RunState } from "./known-runs.js";
import { type LeaseColumns, leaseFrom, leaseValues } from "./locked-run.js";
import { placeInsert, type QueueCheck, queueCheck, sharedLock } from "./queues.js";
import type { Tables } from "./tables.js";

/** A call record of a batch. */
type RecordWrite = Extract<RunWrite, { kind: "record" }>;
/** A checkpoint of a batch. */
type SaveWrite = Extract<RunWrite, { kind: "save" }>;

/** One SQL statement, with `?` placeholders, and its values. */
interface Statement {
  readonly sql: string;
  readonly values: readonly unknown[];
}

/**
 * The writes of a batch the rules accepted: the run's row moved as a
 * compare-and-set on every column the rules read (its lease set by the
 * database's clock, `"clock"."ms"`), then the checkpoint and records
 * inserted only if it moved; and the row they leave, but for its lease.
 */
export interface BatchWrites {
  readonly run: Statement;
  readonly inserts: readonly Statement[];
  /** Undefined where the plan did not know the run's row (records alone, written with no read). */
  readonly after: RunState | undefined;
  /**
   * What the batch asks of the queued run's queue (`queueCheck`): a take is
   * written only once `takeRefusal` allowed it, under the queue's lock.
   */
  readonly queue?: QueueCheck | undefined;
  /** PostgreSQL: the CTE that takes the queue's lock shared before the write reads the clock (a holder's save). */
  readonly lock?: Statement | undefined;
}

/** A batch's first refusal by the protocol's rules, or the writes that apply it. */
type BatchPlan =
  | { readonly refused: CheckpointConflict | CheckpointNotFound | LeaseHeld }
  | { readonly writes: BatchWrites };

/**
 * The run a batch is decided over: as read (with the store's clock when it
 * was read), or as this store last left it (no clock), or unknown.
 */
export interface RunBefore {
  readonly head: RunState | undefined;
  readonly lease: Lease | undefined;
  readonly now?: number;
}

/**
 * Decides a batch over the run as `run` holds it (`commitRefusal`, the rules
 * of `save` and `recordCall` in order, with its inbox's count of events) and, if accepted, writes the row the
 * batch leaves: guarded by what was judged, so the writes apply only to the
 * run the rules judged, whether or not a lock kept it. Undefined when the
 * verdict needs the store's clock and `run` has none: a claim of a run
 * whose lease may be live.
 */
export function planBatch(
  db: Tables,
  runId: string,
  writes: readonly RunWrite[],
  run: RunBefore,
): BatchPlan | undefined {
  const before = run.head;
  const save = writes.find((write) => write.kind === "save");
  if (run.now === undefined && before !== undefined && save !== undefined && save.row.segment > before.segment)
    return undefined;
  const next = (segment: number) => (before !== undefined && segment === before.segment ? before.segmentCalls : 0);
  // The lease the batch leaves is set by the database's clock when it writes (leaseSet); the clock here only decides claims.
  const verdict = commitRefusal(runId, writes, before, next, run.lease, run.now ?? 0, before?.events);
  if ("refused" in verdict) return verdict;
  // Whether the batch leaves a lease is the rules' (a save for WAITING that missed an event takes none).
  const claim = claimOf(save, verdict.lease);
  // The queue place is step 0's, kept for the run's life: a later row's is not read.
  const place = before === undefined ? save?.row.queue : before.queue;
  const check = queueCheck(place, run.lease, claim?.owner, save?.step ?? -1, run.now);
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
      const { status, segment, name: flow, kind, sealed } = write.row;
      if (head?.segment !== segment) segmentCalls = 0;
      head = { step: write.step, status, segment, name: flow, kind };
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
  const after = { ...head, segmentCalls, events: before?.events ?? 0, queue: place };
  if (before === undefined) {
    const lease = leaseOfNewRun(claim);
    const queued = placeInsert(db, place);
    return {
      writes: {
        run: {
          sql: `INSERT INTO ${db.tables.runs} ("step", "status", "segment", "segment_calls", "run_id", "flow", "kind", "waits_for_decision", "lease_owner", "lease_expires_at", "updated_at"${queued.columns})
                SELECT CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), ${lease.sql}, "clock"."ms"${queued.select.sql}
                FROM (SELECT ${db.now} AS "ms") AS "clock" WHERE true ON CONFLICT ("run_id") DO NOTHING`,
          values: [
            head.step,
            head.status,
            head.segment,
            segmentCalls,
            runId,
            head.name,
            head.kind,
            waits(save),
            ...lease.values,
            ...queued.select.values,
          ],
        },
        inserts,
        after,
        queue: check,
      },
    };
  }
  const lease = leaseSet(save, claim);
  const mark = markSet(save);
  // A holder's save: written only while its lease is live by the clock the write reads (after the queue's lock, on PostgreSQL).
  const holder = check?.kind === "holder";
  const lock = holder && check.shared && db.provider === "postgresql" ? sharedLock(db, check.place.queue) : undefined;
  const clock = `(SELECT ${db.now} AS "ms"${lock === undefined ? "" : ` FROM "queue_lock"`}) AS "clock"`;
  const live = holder ? ` AND "lease_expires_at" > "clock"."ms"` : "";
  return {
    writes: {
      run: {
        sql: `UPDATE ${db.tables.runs} SET "step" = ?, "status" = ?, "segment" = ?, "segment_calls" = ?, "updated_at" = "clock"."ms"${mark.sql}${lease.sql} FROM ${clock}
              WHERE "run_id" = ? AND "flow" = ? AND "kind" = ? AND "step" = ? AND "status" = ? AND "segment" = ? AND "segment_calls" = ? AND "events" = ?
              AND "lease_owner" IS NOT DISTINCT FROM CAST(? AS TEXT) AND "lease_expires_at" IS NOT DISTINCT FROM CAST(? AS BIGINT)${live}`,
        values: [
          head.step,
          head.status,
          head.segment,
          segmentCalls,
          ...mark.values,
          ...lease.values,
          runId,
          before.name,
          before.kind,
          before.step,
          before.status,
          before.segment,
          before.segmentCalls,
          before.events,
          ...leaseValues(run.lease),
        ],
      },
      inserts,
      after,
      queue: check,
      lock,
    },
  };
}

/** The `waits_for_decision` column's value a save leaves: 1 for a checkpoint saved waiting for a decision. */
function waits(save: SaveWrite | undefined): number {
  return save?.row.waitsForDecision === true ? 1 : 0;
}

/** The SET of `waits_for_decision` by a save; nothing without one (records leave it). */
function markSet(save: SaveWrite | undefined): Statement {
  return save === undefined
    ? { sql: "", values: [] }
    : { sql: `, "waits_for_decision" = CAST(? AS INTEGER)`, values: [waits(save)] };
}

/**
 * The claim of a save when the rules leave the run a lease (`leaves`, by
 * `leaseAfterSave`: a `running` row, a lease of some length, and for
 * `WAITING` every event of the inbox seen); undefined when they release it.
 */
function claimOf(save: SaveWrite | undefined, leaves: Lease | undefined): LeaseClaim | undefined {
  return leaves === undefined ? undefined : save?.lease;
}

/** The lease columns' values of a new run: the claimer's until the clock + its length (`leaseAfterSave` with none held). */
function leaseOfNewRun(claim: LeaseClaim | undefined): Statement {
  return claim === undefined
    ? { sql: "CAST(NULL AS TEXT), CAST(NULL AS BIGINT)", values: [] }
    : { sql: `CAST(? AS TEXT), "clock"."ms" + CAST(? AS BIGINT)`, values: [claim.owner, claim.ms] };
}

/**
 * The SET of the lease columns by `leaseAfterSave`, on the database's clock:
 * the claimer's until the clock + its length, or the lease held as it is when
 * it is the claimer's and less than a third of it has passed; released when
 * the rules leave none (`claim` undefined). Nothing without a save (records leave the lease).
 */
function leaseSet(save: SaveWrite | undefined, claim: LeaseClaim | undefined): Statement {
  if (save === undefined) return { sql: "", values: [] };
  if (claim === undefined) return { sql: `, "lease_owner" = NULL, "lease_expires_at" = NULL`, values: [] };
  const ms = `CAST(? AS BIGINT)`;
  return {
    sql: `, "lease_owner" = CAST(? AS TEXT), "lease_expires_at" = CASE
            WHEN "lease_owner" = CAST(? AS TEXT) AND "lease_expires_at" <= "clock"."ms" + ${ms}
              AND "lease_expires_at" - "clock"."ms" >= CAST(? AS DOUBLE PRECISION) THEN "lease_expires_at"
            ELSE "clock"."ms" + ${ms} END`,
    values: [claim.owner, claim.owner, claim.ms, claim.ms * (1 - SAVE_RENEWS_AFTER), claim.ms],
  };
}

/** True when the batch starts a run: its first write is step 0 (for a run the store holds, the rules refuse it). */
export function startsRun(writes: readonly RunWrite[]): boolean {
  const first = writes[0];
  return first?.kind === "save" && first.step === 0;
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
  const needed = { step: 0, status: "running", name: "", kind: "flow", segment } as const;
  const verdict = commitRefusal(runId, writes, needed, (s) => (s === segment ? seq : 0), undefined, 0);
  if ("refused" in verdict) return undefined;
  return {
    run: {
      sql: `UPDATE ${db.tables.runs} SET "segment_calls" = ? WHERE "run_id" = ? AND "segment" = ? AND "segment_calls" = ? AND "status" IN ${UNFINISHED_IN}`,
      values: [seq + records.length, runId, segment, seq],
    },
    inserts: [insertRecords(db, runId, records)],
    after: undefined,
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

/** A batch transaction on the store's own client, with its transaction options. */
export interface BatchTransaction {
  readonly client: Client;
  readonly options: TransactionOptions;
}

/**
 * Applies a plan's writes; returns the lease the run's row holds after them,
 * or undefined when the row had changed since it was judged, and nothing was
 * written. PostgreSQL: one statement (the row's write and the inserts as
 * data-modifying CTEs, the inserts guarded by the row's), atomic even outside
 * a transaction. SQLite has no such CTEs: one statement each. With `batch`
 * (a client the store opened, which nothing else writes through), one batch
 * transaction, each insert guarded by what the statement before it changed
 * (`changes()`, the connection's: sound only where no other write can come
 * between); otherwise inside the caller's transaction (`sql`), the inserts
 * made only once the row's write returned its row.
 */
export async function writeBatch(
  db: Tables,
  sql: Sql,
  writes: BatchWrites,
  batch?: BatchTransaction,
): Promise<{ readonly lease: Lease | undefined } | undefined> {
  const returning = `RETURNING "lease_owner", "lease_expires_at"`;
  if (db.provider === "sqlite") {
    const run = `${writes.run.sql} ${returning}`;
    if (batch !== undefined) {
      const { client, options } = batch;
      const [rows] = await client.$transaction(
        [
          client.$queryRawUnsafe<LeaseColumns[]>(run, ...writes.run.values),
          ...writes.inserts.map((insert) =>
            client.$executeRawUnsafe(`${insert.sql} WHERE changes() > 0`, ...insert.values),
          ),
        ],
        options,
      );
      const [moved] = rows as LeaseColumns[];
      return moved === undefined ? undefined : { lease: leaseFrom(moved) };
    }
    const [moved] = await sql.$queryRawUnsafe<LeaseColumns[]>(run, ...writes.run.values);
    if (moved === undefined) return undefined;
    for (const insert of writes.inserts) await sql.$executeRawUnsafe(insert.sql, ...insert.values);
    return { lease: leaseFrom(moved) };
  }
  const ctes = [
    ...(writes.lock === undefined ? [] : [writes.lock.sql]),
    `"moved" AS (${writes.run.sql} ${returning})`,
    ...writes.inserts.map((insert, i) => `"insert${i}" AS (${insert.sql} WHERE EXISTS (SELECT 1 FROM "moved"))`),
  ];
  const values = [...(writes.lock === undefined ? [] : [writes.lock]), writes.run, ...writes.inserts].flatMap(
    (statement) => statement.values,
  );
  const [moved] = await sql.$queryRawUnsafe<LeaseColumns[]>(
    db.sql(`WITH ${ctes.join(", ")} SELECT "lease_owner", "lease_expires_at" FROM "moved"`),
    ...values,
  );
  return moved === undefined ? undefined : { lease: leaseFrom(moved) };
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
