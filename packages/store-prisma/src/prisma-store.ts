import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  type CheckpointStore,
  checkLeaseTerms,
  claimRefusal,
  DurableError,
  isEnded,
  type Lease,
  type LeaseClaim,
  leaseAfterSave,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  recordRefusal,
  renewRefusal,
  saveRefusal,
  type StoredCall,
  type StoredCheckpoint,
  StoreUnavailable,
  UNFINISHED,
} from "@durable/core/store";
import type { Client, Sql } from "./client.js";
import {
  borrow,
  connect,
  type Connection,
  type PrismaClientStoreOptions,
  type PrismaStoreOptions,
} from "./connection.js";
import { type ClaimableRow, claimablePage, claimableQuery, FIRST_CLAIMABLE, sqlList } from "./claimable.js";
import { wrap } from "./failures.js";
import { type LeaseColumns, leaseFrom, leaseValues, lockRun } from "./locked-run.js";
import { migrate } from "./migrate.js";
import type { Tables } from "./tables.js";

const PAGE = 500;
/** The statuses of a run that goes on. */
const UNFINISHED_IN = sqlList(UNFINISHED);

/**
 * A `CheckpointStore` on PostgreSQL or SQLite through Prisma 7's client and
 * driver adapters. A save locks the run's row, reads it with its lease and
 * the database's clock, lets the protocol's rules decide, then updates the
 * row and inserts the checkpoint, in a short transaction that holds no lock
 * while user code runs. Call `migrate()` once before use.
 *
 * `new PrismaCheckpointStore(url)` opens a client of its own, with the driver
 * adapter of the URL (an optional peer: `@prisma/adapter-pg` or
 * `@prisma/adapter-better-sqlite3`); `PrismaCheckpointStore.fromClient(prisma,
 * { provider })` uses a client you already have.
 */
export class PrismaCheckpointStore implements CheckpointStore {
  readonly provider: "postgresql" | "sqlite";
  readonly #db: Connection;

  /**
   * A store on `postgresql://…` or `file:…` with a client of its own, opened
   * on first use; `close()` disconnects it. Throws `InvalidInput` for another
   * URL or a name that is not plain.
   */
  constructor(url: string, options?: PrismaStoreOptions);
  /** @internal */
  constructor(connection: Connection);
  constructor(source: string | Connection, options: PrismaStoreOptions = {}) {
    this.#db = typeof source === "string" ? connect(source, options) : source;
    this.provider = this.#db.provider;
  }

  /**
   * A store on your own `PrismaClient`, generated from a schema with the
   * store's models (`prisma/models.prisma` of this package) and the driver
   * adapter you chose. `close()` leaves the client connected: it is yours.
   */
  static fromClient(prisma: Client, options: PrismaClientStoreOptions): PrismaCheckpointStore {
    return new PrismaCheckpointStore(borrow(prisma, options));
  }

  /** The quoted names of the store's tables. */
  get tables(): Tables["tables"] {
    return this.#db.tables;
  }

  /** Applies the shipped migrations that are missing (safe from many processes at once); returns their names. */
  async migrate(): Promise<string[]> {
    const migrated = async () => migrate(this.#db, await this.#db.client());
    return this.#bounded("migrate", migrated, this.#db.migrateTimeoutMs);
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    checkLeaseTerms(lease);
    const { status, segment, flow, kind, sealed } = checkpoint;
    const t = this.#db.tables;
    await this.#tx<undefined>("save", async (tx) => {
      const run = await lockRun(this.#db, tx, runId);
      const refused =
        saveRefusal(runId, step, checkpoint, run.head) ??
        claimRefusal(runId, checkpoint, run.head, run.lease, lease, run.now);
      if (refused !== undefined) return refused;
      const [owner, expiresAt] = leaseValues(leaseAfterSave(checkpoint, lease, run.now, run.lease));
      // The row is locked and the rules passed; the step in the WHERE keeps the write a compare-and-set all the same.
      const moved =
        step === 0
          ? await this.#exec(
              tx,
              `INSERT INTO ${t.runs} ("run_id", "flow", "kind", "step", "status", "segment", "segment_calls", "lease_owner", "lease_expires_at") VALUES (?, ?, ?, 0, ?, ?, 0, ?, ?) ON CONFLICT ("run_id") DO NOTHING`,
              runId,
              flow,
              kind,
              status,
              segment,
              owner,
              expiresAt,
            )
          : await this.#exec(
              tx,
              `UPDATE ${t.runs} SET "step" = ?, "status" = ?, "segment_calls" = CASE WHEN "segment" = ? THEN "segment_calls" ELSE 0 END, "segment" = ?, "lease_owner" = ?, "lease_expires_at" = ?
               WHERE "run_id" = ? AND "step" = ?`,
              step,
              status,
              segment,
              segment,
              owner,
              expiresAt,
              runId,
              step - 1,
            );
      if (moved === 0) return new CheckpointConflict(runId, `step ${step} was taken by another worker.`);
      await this.#exec(
        tx,
        `INSERT INTO ${t.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed") VALUES (?, ?, ?, ?, ?, ?, ?)`,
        runId,
        step,
        status,
        segment,
        flow,
        kind,
        sealed,
      );
      return undefined;
    });
  }

  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    return this.#tx<Lease>("renew", async (tx) => {
      const run = await lockRun(this.#db, tx, runId);
      const refused = renewRefusal(runId, segment, terms.owner, run.head, run.lease);
      if (refused !== undefined) return refused;
      const lease = { owner: terms.owner, expiresAt: run.now + terms.ms };
      await this.#exec(
        tx,
        `UPDATE ${this.#db.tables.runs} SET "lease_owner" = ?, "lease_expires_at" = ? WHERE "run_id" = ?`,
        ...leaseValues(lease),
        runId,
      );
      return lease;
    });
  }

  async release(runId: string, segment: number, owner: string): Promise<void> {
    // One conditional UPDATE: a released lease (NULL) never equals the owner.
    await this.#tx<undefined>("release", async (tx) => {
      await this.#exec(
        tx,
        `UPDATE ${this.#db.tables.runs} SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "run_id" = ? AND "segment" = ? AND "lease_owner" = ?`,
        runId,
        segment,
        owner,
      );
      return undefined;
    });
  }

  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    const rows = await this.#query<LeaseColumns & { now: number | bigint }>(
      "leaseOf",
      `SELECT "lease_owner", "lease_expires_at", ${this.#db.now} AS "now" FROM ${this.#db.tables.runs} WHERE "run_id" = ?`,
      runId,
    );
    const row = rows[0];
    const lease = row === undefined ? undefined : leaseFrom(row);
    return row === undefined || lease === undefined ? undefined : { ...lease, now: Number(row.now) };
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

  async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    if (options.claimable === true) {
      for (let cursor = FIRST_CLAIMABLE; ; ) {
        const { query, values } = claimableQuery(this.#db, flow, cursor, PAGE);
        const page = claimablePage(await this.#query<ClaimableRow>("listUnfinished", query, ...values), cursor, PAGE);
        yield* page.ids;
        if (page.next === undefined) return;
        cursor = page.next;
      }
    }
    let after = "";
    for (;;) {
      const rows = await this.#query<{ run_id: string }>(
        "listUnfinished",
        `SELECT "run_id" FROM ${this.#db.tables.runs} WHERE "flow" = ? AND "run_id" > ? AND "status" IN ${UNFINISHED_IN} ORDER BY "run_id" LIMIT ${PAGE}`,
        flow,
        after,
      );
      for (const row of rows) yield row.run_id;
      const last = rows.at(-1);
      if (rows.length < PAGE || last === undefined) return;
      after = last.run_id;
    }
  }

  async delete(runId: string): Promise<void> {
    const t = this.#db.tables;
    await this.#tx<undefined>("delete", async (tx) => {
      for (const table of [t.calls, t.checkpoints, t.runs])
        await this.#exec(tx, `DELETE FROM ${table} WHERE "run_id" = ?`, runId);
      return undefined;
    });
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const t = this.#db.tables;
    await this.#tx<undefined>("recordCall", async (tx) => {
      const moved = await this.#exec(
        tx,
        `UPDATE ${t.runs} SET "segment_calls" = "segment_calls" + 1 WHERE "run_id" = ? AND "segment" = ? AND "segment_calls" = ? AND "status" IN ${UNFINISHED_IN}`,
        runId,
        segment,
        seq,
      );
      if (moved === 1) {
        await this.#exec(
          tx,
          `INSERT INTO ${t.calls} ("run_id", "segment", "seq", "sealed") VALUES (?, ?, ?, ?)`,
          runId,
          segment,
          seq,
          sealed,
        );
        return undefined;
      }
      const run = (await lockRun(this.#db, tx, runId)).head;
      const refused =
        recordRefusal(runId, segment, seq, run, run?.segmentCalls ?? 0) ??
        new CheckpointConflict(runId, `call record ${seq} of segment ${segment} was taken by another worker.`);
      // A retry of a record that was applied is applied once.
      if (run !== undefined && run.segment === segment && seq < run.segmentCalls && !isEnded(run.status)) {
        const same = await tx.$queryRawUnsafe<unknown[]>(
          this.#db.sql(`SELECT 1 FROM ${t.calls} WHERE "run_id" = ? AND "segment" = ? AND "seq" = ? AND "sealed" = ?`),
          runId,
          segment,
          seq,
          sealed,
        );
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

  /** Disconnects the client the store opened; a client given to `fromClient` stays connected. */
  async close(): Promise<void> {
    await this.#db.release();
  }

  #exec(tx: Sql, query: string, ...values: unknown[]): Promise<number> {
    return tx.$executeRawUnsafe(this.#db.sql(query), ...values);
  }

  /**
   * One short transaction. A refusal is returned by `fn` (it has written
   * nothing, so the commit is empty) and thrown once the transaction ended,
   * so driver failures and refusals stay apart.
   */
  async #tx<T>(what: string, fn: (tx: Sql) => Promise<T | DurableError>): Promise<T> {
    const result = await this.#bounded(what, async () =>
      (await this.#db.client()).$transaction(fn, { maxWait: 10_000, timeout: 10_000 }),
    );
    if (result instanceof DurableError) throw result;
    return result;
  }

  #query<T>(what: string, query: string, ...values: unknown[]): Promise<T[]> {
    return this.#bounded(what, async () =>
      (await this.#db.client()).$queryRawUnsafe<T[]>(this.#db.sql(query), ...values),
    );
  }

  /**
   * One operation against the deadline of a PostgreSQL store; a driver
   * failure or a missed deadline is a store error. On a missed deadline the
   * store's own connections are destroyed, so none stays stuck in the pool;
   * a transaction whose COMMIT reached the server may still have applied,
   * which the protocol allows because every write is a compare-and-set.
   */
  async #bounded<T>(what: string, operation: () => Promise<T>, timeoutMs = this.#db.timeoutMs): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late =
      timeoutMs === undefined
        ? undefined
        : new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              this.#db.discard();
              reject(
                new StoreUnavailable(
                  `The database did not answer ${what} within ${timeoutMs} ms; whether the operation was applied is unknown.`,
                ),
              );
            }, timeoutMs);
          });
    try {
      return await (late === undefined ? operation() : Promise.race([operation(), late]));
    } catch (error) {
      throw wrap(error, what, this.#db.borrowed);
    } finally {
      clearTimeout(timer);
    }
  }
}
