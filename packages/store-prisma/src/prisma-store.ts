import {
  CheckpointConflict,
  CheckpointNotFound,
  type CallColumns,
  type CheckpointColumns,
  type CheckpointRow,
  type CheckpointStore,
  checkBatch,
  checkEvent,
  checkedCall,
  checkedCheckpoint,
  checkLeaseTerms,
  closedWhileUsed,
  DurableError,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  type QueuedRun,
  type RunPage,
  type RunQuery,
  type RunWrite,
  type StoredCall,
  type CallPosition,
  type StoredCheckpoint,
  type StoredEvent,
  type StoreOperation,
  StoreUnavailable,
  UNFINISHED,
  checkInboxFrom,
  checkStreamBatch,
  checkStreamFrom,
  type StoredStreamBatch,
  type StreamBatch,
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
import { applyBatch, recordHeld, TRANSACTION } from "./apply-batch.js";
import { appendEvent, type EventWrite, readInbox } from "./inbox.js";
import { checkedLease, type LeaseColumns } from "./locked-run.js";
import { KnownRuns } from "./known-runs.js";
import { migrate } from "./migrate.js";
import { type QueuedCursor, queuedPage, type Reader } from "./queued.js";
import { renewLease } from "./renew.js";
import { runListing } from "./inspect.js";
import { appendBatch, dropBatches, readStream } from "./streams.js";
import type { Tables } from "./tables.js";

const PAGE = 500;
/** The statuses of a run that goes on. */
const UNFINISHED_IN = sqlList(UNFINISHED);

/**
 * A `CheckpointStore` on PostgreSQL or SQLite through Prisma 7's client and
 * driver adapters. A save, a record or a batch of them is decided by the
 * protocol's rules over the run's row (as this store last wrote it, or as
 * read), then moves the row (a compare-and-set on what was judged, the lease
 * set by the database's clock) and inserts the rows, in one commit that
 * holds no lock while user code runs. Call
 * `migrate()` once before use.
 *
 * `new PrismaCheckpointStore(url)` opens a client of its own, with the driver
 * adapter of the URL (an optional peer: `@prisma/adapter-pg` or
 * `@prisma/adapter-better-sqlite3`); `PrismaCheckpointStore.fromClient(prisma,
 * { provider })` uses a client you already have.
 */
export class PrismaCheckpointStore implements CheckpointStore {
  readonly provider: "postgresql" | "sqlite";
  readonly #db: Connection;
  readonly #known = new KnownRuns();
  #closed = false;

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
    return this.#bounded({ what: "migrate" }, migrated, this.#db.migrateTimeoutMs);
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    await this.#commit("save", runId, [{ kind: "save", step, row: checkpoint, lease }]);
  }

  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    return this.#tx<Lease>({ what: "renew", runId }, (tx) =>
      renewLease(this.#db, this.#known, tx, runId, segment, terms),
    );
  }

  async release(runId: string, segment: number, owner: string): Promise<void> {
    this.#known.forget(runId);
    // One conditional UPDATE: a released lease (NULL) never equals the owner.
    await this.#tx<undefined>({ what: "release", runId }, async (tx) => {
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
      { what: "leaseOf", runId },
      `SELECT "lease_owner", "lease_expires_at", ${this.#db.now} AS "now" FROM ${this.#db.tables.runs} WHERE "run_id" = ?`,
      runId,
    );
    const row = rows[0];
    const lease = row === undefined ? undefined : checkedLease(runId, row);
    return row === undefined || lease === undefined ? undefined : { ...lease, now: Number(row.now) };
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const rows = await this.#query<CheckpointColumns>(
      { what: "latest", runId },
      `SELECT "run_id" AS "runId", "step", "status", "segment", "flow" AS "name", "kind", "sealed" FROM ${this.#db.tables.checkpoints} WHERE "run_id" = ? ORDER BY "step" DESC LIMIT 1`,
      runId,
    );
    const row = rows[0];
    if (row === undefined) throw new CheckpointNotFound(runId);
    return checkedCheckpoint(runId, row);
  }

  async *listUnfinished(name: string, options: ListOptions = {}): AsyncIterable<string> {
    if (options.claimable === true) {
      for (let cursor = FIRST_CLAIMABLE; ; ) {
        const { query, values } = claimableQuery(this.#db, name, cursor, PAGE);
        const page = claimablePage(
          await this.#query<ClaimableRow>({ what: "listUnfinished" }, query, ...values),
          cursor,
          PAGE,
        );
        yield* page.ids;
        if (page.next === undefined) return;
        cursor = page.next;
      }
    }
    let after = "";
    for (;;) {
      const rows = await this.#query<{ run_id: string }>(
        { what: "listUnfinished" },
        `SELECT "run_id" FROM ${this.#db.tables.runs} WHERE "flow" = ? AND "run_id" > ? AND "status" IN ${UNFINISHED_IN} ORDER BY "run_id" LIMIT ${PAGE}`,
        name,
        after,
      );
      for (const row of rows) yield row.run_id;
      const last = rows.at(-1);
      if (rows.length < PAGE || last === undefined) return;
      after = last.run_id;
    }
  }

  /**
   * The claimable runs of `queue`, highest priority first, then in the order
   * their step 0 was accepted, a page at a time from the queued index (the
   * queues capability: see `CheckpointStore.listQueued`).
   */
  async *listQueued(queue: string): AsyncIterable<QueuedRun> {
    // '' is the "queue" column of the runs on no queue: never a queue's name (1 to 128 characters).
    if (queue === "") return;
    const read: Reader = (query, ...values) => this.#query({ what: "listQueued" }, query, ...values);
    for (let cursor: QueuedCursor | undefined; ; ) {
      const page = await queuedPage(this.#db, read, queue, cursor, PAGE);
      yield* page.runs;
      if (page.next === undefined) return;
      cursor = page.next;
    }
  }

  async delete(runId: string): Promise<void> {
    const t = this.#db.tables;
    this.#known.forget(runId);
    await this.#tx<undefined>({ what: "delete", runId }, async (tx) => {
      // The run's row first: it is the run's lock, so a write of the run waiting on it then finds no run,
      // and one that committed before is seen by the deletes after it (no record, event or batch left behind).
      for (const table of [t.runs, t.streams, t.events, t.calls, t.checkpoints])
        await this.#exec(tx, `DELETE FROM ${table} WHERE "run_id" = ?`, runId);
      return undefined;
    });
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const record = { kind: "record", segment, seq, sealed } as const;
    // A retry of a record that was applied is applied once.
    await this.#commit("recordCall", runId, [record], () => recordHeld(this.#db, runId, record));
  }

  /**
   * Applies the writes in order as one atomic commit, each by the rules of
   * `recordCall` or `save` over the run as the writes before it left it; on
   * a refusal nothing is written. See `CheckpointStore.commit`.
   */
  async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    await this.#commit("commit", runId, writes);
  }

  /**
   * Appends one event to the run's inbox under the run's lock, releasing a
   * lease held by `WAITING` in the same commit (the events capability: see
   * `CheckpointStore.sendEvent`); false for a resend of a key the inbox holds.
   */
  async sendEvent(runId: string, event: EventWrite): Promise<boolean> {
    checkEvent(event);
    this.#known.forget(runId); // its count of events moves, and maybe its lease
    return this.#tx<boolean>({ what: "sendEvent", runId }, (tx) => appendEvent(this.#db, tx, runId, event));
  }

  /** The run's inbox from event `from` on, by seq (the events capability). */
  async inbox(runId: string, from = 0): Promise<StoredEvent[]> {
    checkInboxFrom(from);
    return this.#bounded({ what: "inbox", runId }, async () =>
      readInbox(this.#db, await this.#db.client(), runId, from),
    );
  }

  /**
   * Appends one batch to the run's stream under the run's lock (the streams
   * capability: see `CheckpointStore.appendStream`), judged by `streamRefusal`.
   */
  async appendStream(runId: string, batch: StreamBatch): Promise<void> {
    checkStreamBatch(batch);
    const { segment, offset, count, sealed } = batch;
    const write = { segment, offset, count, sealed };
    await this.#tx<undefined>({ what: "appendStream", runId }, (tx) => appendBatch(this.#db, tx, runId, write));
  }

  /** The batches of the run's stream holding part `from` or a later one, a page at most (the streams capability). */
  async stream(runId: string, from = 0): Promise<StoredStreamBatch[]> {
    checkStreamFrom(from);
    return this.#bounded({ what: "stream", runId }, async () =>
      readStream(this.#db, await this.#db.client(), runId, from),
    );
  }

  /** Removes the run's stream and nothing else (the streams capability). */
  async dropStream(runId: string): Promise<void> {
    await this.#tx<undefined>({ what: "dropStream", runId }, (tx) => dropBatches(this.#db, tx, runId));
  }

  /** A page of runs of any status, newest first (the inspection capability: see `CheckpointStore.listRuns`). */
  async listRuns(query?: RunQuery): Promise<RunPage> {
    const listing = runListing(this.#db, query);
    return listing.page(await this.#query({ what: "listRuns" }, listing.query, ...listing.values));
  }

  /** Every checkpoint of the run, by step (the inspection capability). */
  async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    const rows = await this.#query<CheckpointColumns>(
      { what: "history", runId },
      `SELECT "run_id" AS "runId", "step", "status", "segment", "flow" AS "name", "kind", "sealed" FROM ${this.#db.tables.checkpoints} WHERE "run_id" = ? AND "step" >= ? ORDER BY "step"`,
      runId,
      from,
    );
    return rows.map((row) => checkedCheckpoint(runId, row));
  }

  async calls(runId: string, from?: CallPosition): Promise<StoredCall[]> {
    // From a place on: the primary key's range (a record whose columns hold no numbers is left to the whole read).
    const range = from === undefined ? "" : ` AND ("segment", "seq") >= (?, ?)`;
    const rows = await this.#query<CallColumns>(
      { what: "calls", runId },
      `SELECT "run_id" AS "runId", "segment", "seq", "sealed" FROM ${this.#db.tables.calls} WHERE "run_id" = ?${range} ORDER BY "segment", "seq"`,
      runId,
      ...(from === undefined ? [] : [from.segment, from.seq]),
    );
    return rows.map((row) => checkedCall(runId, row));
  }

  /**
   * Disconnects the client the store opened; an operation after it fails with
   * `StoreUnavailable` saying the store was closed. A client given to
   * `fromClient` stays connected, and the store goes on working on it.
   */
  async close(): Promise<void> {
    this.#closed = !this.#db.borrowed;
    await this.#db.release();
  }

  /**
   * `save`, `recordCall` and `commit`: the batch checked, then applied within
   * the deadline; a refusal is thrown, unless it is a `CheckpointConflict` and
   * `applied` finds the batch was applied before (a retry).
   */
  async #commit(
    what: string,
    runId: string,
    writes: readonly RunWrite[],
    applied?: () => Promise<boolean>,
  ): Promise<void> {
    checkBatch(writes);
    await this.#bounded({ what, runId }, async () => {
      const refused = await applyBatch(this.#db, this.#known, runId, writes).catch((error: unknown) => {
        this.#known.forget(runId); // whether it was written is unknown
        throw error;
      });
      if (refused === undefined || (refused instanceof CheckpointConflict && (await applied?.()) === true)) return;
      throw refused;
    });
  }

  #exec(tx: Sql, query: string, ...values: unknown[]): Promise<number> {
    return tx.$executeRawUnsafe(this.#db.sql(query), ...values);
  }

  /**
   * One short transaction. A refusal is returned by `fn` (it has written
   * nothing, so the commit is empty) and thrown once the transaction ended,
   * so driver failures and refusals stay apart.
   */
  async #tx<T>(doing: StoreOperation, fn: (tx: Sql) => Promise<T | DurableError>): Promise<T> {
    const result = await this.#bounded(doing, async () => (await this.#db.client()).$transaction(fn, TRANSACTION));
    if (result instanceof DurableError) throw result;
    return result;
  }

  #query<T>(doing: StoreOperation, query: string, ...values: unknown[]): Promise<T[]> {
    return this.#bounded(doing, async () =>
      (await this.#db.client()).$queryRawUnsafe<T[]>(this.#db.sql(query), ...values),
    );
  }

  /**
   * One operation against the deadline of a PostgreSQL store; a driver
   * failure or a missed deadline is a store error. On a missed deadline the
   * store's own connections are destroyed, so none stays stuck in the pool;
   * a write whose commit reached the server may still have applied,
   * which the protocol allows because every write is a compare-and-set.
   * Once the store is closed, an operation fails saying so (and naming its
   * run) rather than with the driver's words, and opens nothing again.
   */
  async #bounded<T>(doing: StoreOperation, operation: () => Promise<T>, timeoutMs = this.#db.timeoutMs): Promise<T> {
    if (this.#closed) throw closedWhileUsed(doing);
    const { what } = doing;
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
      throw this.#closed ? closedWhileUsed(doing, error) : wrap(error, what, this.#db.borrowed);
    } finally {
      clearTimeout(timer);
    }
  }
}
