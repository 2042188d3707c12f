import {
  CheckpointConflict,
  CheckpointNotFound,
  DurableError,
  StoreUnavailable,
  isEnded,
  recordRefusal,
  saveRefusal,
  type CheckpointRow,
  type CheckpointStore,
  type RunKind,
  type RunStatus,
  type StoredCall,
  type StoredCheckpoint,
} from "@durable/core";
import { connect, type Connection, type PrismaStoreOptions, type Sql } from "./connection.js";
import { migrate } from "./migrate.js";

interface RunRow {
  flow: string;
  kind: RunKind;
  step: number;
  status: RunStatus;
  segment: number;
  segment_calls: number;
}

const PAGE = 500;
const UNFINISHED = "('running', 'paused')";

/**
 * A `CheckpointStore` on PostgreSQL or SQLite through Prisma 7's client and
 * driver adapters. Compare-and-set, claims and fencing are one conditional
 * `UPDATE` of the run's row plus one `INSERT`, in a short transaction that
 * holds no lock while user code runs. Call `migrate()` once before use.
 */
export class PrismaCheckpointStore implements CheckpointStore {
  readonly provider: "postgresql" | "sqlite";
  readonly #db: Connection;
  #ready: Promise<void> | undefined;

  constructor(url: string, options: PrismaStoreOptions = {}) {
    this.#db = connect(url, options);
    this.provider = this.#db.provider;
  }

  /** The quoted names of the store's tables. */
  get tables(): Connection["tables"] {
    return this.#db.tables;
  }

  /** Applies the shipped migrations that are missing (safe from many processes at once); returns their names. */
  async migrate(): Promise<string[]> {
    await this.#setup();
    try {
      return await migrate(this.#db);
    } catch (error) {
      throw wrap(error, "migrate");
    }
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow): Promise<void> {
    const { status, segment, flow, kind, sealed } = checkpoint;
    const t = this.#db.tables;
    await this.#tx("save", async (tx) => {
      const moved =
        step === 0
          ? await this.#exec(tx, `INSERT INTO ${t.runs} ("run_id", "flow", "kind", "step", "status", "segment", "segment_calls") VALUES (?, ?, ?, 0, ?, ?, 0) ON CONFLICT ("run_id") DO NOTHING`, runId, flow, kind, status, segment)
          : await this.#exec(
              tx,
              `UPDATE ${t.runs} SET "step" = ?, "status" = ?, "segment_calls" = CASE WHEN "segment" = ? THEN "segment_calls" ELSE 0 END, "segment" = ?
               WHERE "run_id" = ? AND "step" = ? AND "status" IN ${UNFINISHED} AND "flow" = ? AND "kind" = ? AND "segment" <= ?`,
              step, status, segment, segment, runId, step - 1, flow, kind, segment,
            );
      if (moved === 0) {
        const run = await this.#run(tx, runId);
        // Another transaction may have moved the row between the UPDATE and this read: then it took the step.
        return saveRefusal(runId, step, checkpoint, run) ?? new CheckpointConflict(runId, `step ${step} was taken by another worker.`);
      }
      await this.#exec(tx, `INSERT INTO ${t.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed") VALUES (?, ?, ?, ?, ?, ?, ?)`, runId, step, status, segment, flow, kind, sealed);
      return undefined;
    });
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const rows = await this.#query<StoredCheckpoint>(
      "latest",
      `SELECT "run_id" AS "runId", "step", "status", "segment", "flow", "kind", "sealed" FROM ${this.#db.tables.checkpoints} WHERE "run_id" = ? ORDER BY "step" DESC LIMIT 1`,
      runId,
    );
    const row = rows[0];
    if (row === undefined) throw new CheckpointNotFound(runId);
    return { ...row, step: Number(row.step), segment: Number(row.segment) };
  }

  async *listUnfinished(flow: string): AsyncIterable<string> {
    let after = "";
    for (;;) {
      const rows = await this.#query<{ run_id: string }>(
        "listUnfinished",
        `SELECT "run_id" FROM ${this.#db.tables.runs} WHERE "flow" = ? AND "run_id" > ? AND "status" IN ${UNFINISHED} ORDER BY "run_id" LIMIT ${PAGE}`,
        flow,
        after,
      );
      for (const row of rows) yield row.run_id;
      if (rows.length < PAGE) return;
      after = rows.at(-1)!.run_id;
    }
  }

  async delete(runId: string): Promise<void> {
    const t = this.#db.tables;
    await this.#tx("delete", async (tx) => {
      for (const table of [t.calls, t.checkpoints, t.runs]) await this.#exec(tx, `DELETE FROM ${table} WHERE "run_id" = ?`, runId);
      return undefined;
    });
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const t = this.#db.tables;
    await this.#tx("recordCall", async (tx) => {
      const moved = await this.#exec(
        tx,
        `UPDATE ${t.runs} SET "segment_calls" = "segment_calls" + 1 WHERE "run_id" = ? AND "segment" = ? AND "segment_calls" = ? AND "status" IN ${UNFINISHED}`,
        runId, segment, seq,
      );
      if (moved === 1) {
        await this.#exec(tx, `INSERT INTO ${t.calls} ("run_id", "segment", "seq", "sealed") VALUES (?, ?, ?, ?)`, runId, segment, seq, sealed);
        return undefined;
      }
      const run = await this.#run(tx, runId);
      const refused =
        recordRefusal(runId, segment, seq, run, run?.segment_calls ?? 0) ??
        new CheckpointConflict(runId, `call record ${seq} of segment ${segment} was taken by another worker.`);
      // A retry of a record that was applied is applied once.
      if (run !== undefined && run.segment === segment && seq < run.segment_calls && !isEnded(run.status)) {
        const same = await tx.$queryRawUnsafe<unknown[]>(this.#db.sql(`SELECT 1 FROM ${t.calls} WHERE "run_id" = ? AND "segment" = ? AND "seq" = ? AND "sealed" = ?`), runId, segment, seq, sealed);
        if (same.length > 0) return undefined;
      }
      return refused;
    });
  }

  async calls(runId: string): Promise<StoredCall[]> {
    const rows = await this.#query<StoredCall>(
      "calls",
      `SELECT "run_id" AS "runId", "segment", "seq", "sealed" FROM ${this.#db.tables.calls} WHERE "run_id" = ? ORDER BY "segment", "seq"`,
      runId,
    );
    return rows.map((row) => ({ ...row, segment: Number(row.segment), seq: Number(row.seq) }));
  }

  async close(): Promise<void> {
    await this.#db.release();
  }

  /** SQLite: WAL mode, once per store, so readers never wait on the writer. */
  #setup(): Promise<void> {
    this.#ready ??= (async () => {
      if (this.provider === "sqlite") await this.#db.client.$queryRawUnsafe("PRAGMA journal_mode = WAL");
    })();
    return this.#ready;
  }

  async #run(tx: Sql, runId: string): Promise<RunRow | undefined> {
    const rows = await tx.$queryRawUnsafe<RunRow[]>(
      this.#db.sql(`SELECT "flow", "kind", "step", "status", "segment", "segment_calls" FROM ${this.#db.tables.runs} WHERE "run_id" = ?`),
      runId,
    );
    const row = rows[0];
    return row === undefined ? undefined : { ...row, step: Number(row.step), segment: Number(row.segment), segment_calls: Number(row.segment_calls) };
  }

  #exec(tx: Sql, query: string, ...values: unknown[]): Promise<number> {
    return tx.$executeRawUnsafe(this.#db.sql(query), ...values);
  }

  /**
   * One short transaction. A refusal is returned by `fn` (it has written
   * nothing, so the commit is empty) and thrown once the transaction ended,
   * so driver failures and refusals stay apart.
   */
  async #tx(what: string, fn: (tx: Sql) => Promise<DurableError | undefined>): Promise<void> {
    await this.#setup();
    let refused: DurableError | undefined;
    try {
      refused = await this.#db.client.$transaction(fn, { maxWait: 10_000, timeout: 10_000 });
    } catch (error) {
      throw wrap(error, what);
    }
    if (refused !== undefined) throw refused;
  }

  async #query<T>(what: string, query: string, ...values: unknown[]): Promise<T[]> {
    await this.#setup();
    try {
      return await this.#db.client.$queryRawUnsafe<T[]>(this.#db.sql(query), ...values);
    } catch (error) {
      throw wrap(error, what);
    }
  }
}

function wrap(error: unknown, what: string): Error {
  if (error instanceof DurableError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreUnavailable(`The database failed during ${what}: ${message}`, { cause: error });
}
