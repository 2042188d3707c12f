import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import {
  CheckpointNotFound,
  type CheckpointColumns,
  type CheckpointRow,
  checkedCall,
  checkedCheckpoint,
  checkedEvent,
  type CheckpointStore,
  checkBatch,
  checkEvent,
  checkLeaseTerms,
  closedWhileUsed,
  InvalidInput,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  type QueuedRun,
  renewRefusal,
  wholeNumber,
  type RunPage,
  type RunQuery,
  type RunWrite,
  type StoredCall,
  type CallPosition,
  type EventColumns,
  type StoredCheckpoint,
  type StoredEvent,
  type StoreOperation,
  checkInboxFrom,
  checkStreamBatch,
  checkStreamFrom,
  type StoredStreamBatch,
  type StreamBatch,
} from "@durable/core/store";
import { checkOptions, type OptionTable } from "@durable/core/runner";
import { commitWrites } from "./commit.js";
import { storeError } from "./errors.js";
import { appendEvent } from "./events.js";
import { GroupCommit } from "./group-commit.js";
import { history, listRuns } from "./inspect.js";
import { type QueuedRow, queuedPage, takeSlot } from "./queues.js";
import { migrate, tablesFor, type Tables } from "./schema.js";
import { heldLease, type ListedRow, prepare, readHead, type RunRow, type Statements } from "./statements.js";
import { appendBatch, readStream } from "./streams.js";

/** Options of `SQLiteCheckpointStore`. */
export interface SQLiteStoreOptions {
  /**
   * `"full"` (default): every save and record is on disk when it resolves, even
   * if the machine loses power. `"normal"`: faster; in WAL mode the last
   * commits can be lost on a power cut or OS crash (never on a process crash),
   * and with them the proof that a call started.
   */
  readonly synchronous?: "full" | "normal";
  /** Prefix of the store's tables, one per tenant sharing a file; default `durable_`. */
  readonly tablePrefix?: string;
  /** How long an operation waits for another process's lock before `StoreUnavailable`; default 5000 ms. */
  readonly busyTimeoutMs?: number;
}

const SQLITE_STORE_OPTIONS: OptionTable<SQLiteStoreOptions> = {
  synchronous: true,
  tablePrefix: true,
  busyTimeoutMs: true,
};

const PAGE = 500;

/**
 * A `CheckpointStore` in a SQLite file (better-sqlite3, WAL), shared by every
 * process on one host. The writes called in one turn of the event loop share
 * one `BEGIN IMMEDIATE` transaction (group commit), each operation, and each
 * `commit` batch, atomic under its own savepoint, so compare-and-set, claims,
 * fencing, leases and queues' limits hold across processes; a write is
 * durable before its promise resolves. Leases run by SQLite's clock.
 */
export class SQLiteCheckpointStore implements CheckpointStore {
  readonly path: string;
  readonly tables: Tables;
  readonly #db: Database.Database;
  readonly #where: string;
  readonly #sql: Statements;
  readonly #group: GroupCommit;

  constructor(path: string, options: SQLiteStoreOptions = {}) {
    if (typeof path !== "string" || path.length === 0)
      throw new InvalidInput("SQLiteCheckpointStore needs the path of its database file.");
    checkOptions("SQLiteCheckpointStore", options, SQLITE_STORE_OPTIONS);
    this.path = path;
    this.tables = tablesFor(options.tablePrefix ?? "durable_");
    this.#where = `SQLite database ${JSON.stringify(path)}`;
    checkPath(path, this.#where);
    try {
      this.#db = new Database(path, { timeout: options.busyTimeoutMs ?? 5000 });
    } catch (error) {
      throw storeError(error, this.#where);
    }
    try {
      enableWal(this.#db);
      this.#db.pragma(`synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`);
      migrate(this.#db, this.tables, this.#where);
      this.#sql = prepare(this.#db, this.tables);
      this.#group = new GroupCommit(this.#db, this.#where);
    } catch (error) {
      this.#db.close();
      throw storeError(error, this.#where);
    }
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    return this.#commit({ what: "save", runId }, [{ kind: "save", step, row: checkpoint, lease }]);
  }

  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    return this.#write({ what: "renew", runId }, () => {
      const run = this.#head(runId);
      const refused = renewRefusal(runId, segment, terms.owner, run, heldLease(run));
      if (refused !== undefined) throw refused;
      const now = this.#now();
      const lease = { owner: terms.owner, expiresAt: now + terms.ms };
      // Renewing a lease that ran out takes the run again: its queue's limits are counted in this transaction.
      takeSlot(this.#sql, runId, run, undefined, lease, false, now);
      this.#sql.setLease.run(lease.owner, lease.expiresAt, runId);
      return lease;
    });
  }

  async release(runId: string, segment: number, owner: string): Promise<void> {
    return this.#write({ what: "release", runId }, () => void this.#sql.release.run(runId, segment, owner));
  }

  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    const lease = this.#read({ what: "leaseOf", runId }, () => this.#sql.leaseOf.get(runId) as LeaseView | undefined);
    if (lease === undefined) return undefined;
    return {
      owner: lease.owner,
      expiresAt: wholeNumber(runId, "head", "lease_expires", lease.expiresAt),
      now: lease.now,
    };
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const row = this.#read(
      { what: "latest", runId },
      () => this.#sql.latest.get(runId) as CheckpointColumns | undefined,
    );
    if (row === undefined) throw new CheckpointNotFound(runId);
    return checkedCheckpoint(runId, row);
  }

  async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    if (options.claimable !== true) {
      yield* this.#pages((last) => this.#sql.unfinished.all(flow, last?.run_id ?? "", PAGE));
      return;
    }
    // Released runs, then those whose lease ran out: two ranges of the claimable index, each read by keyset pages.
    yield* this.#pages((last) => this.#sql.claimableReleased.all(flow, last?.run_id ?? "", PAGE));
    yield* this.#pages((last) =>
      this.#sql.claimableRunOut.all(flow, last?.lease_expires ?? Number.MIN_SAFE_INTEGER, last?.run_id ?? "", PAGE),
    );
  }

  /**
   * The claimable runs of `queue` in its order (the queues capability: see
   * `CheckpointStore.listQueued`): highest priority first, then in the order
   * their step 0s were accepted; read by keyset pages of the queued index.
   */
  async *listQueued(queue: string): AsyncIterable<QueuedRun> {
    let last: QueuedRow | undefined;
    for (;;) {
      const rows = this.#read({ what: "listQueued" }, () => queuedPage(this.#sql, queue, last, PAGE));
      for (const row of rows)
        yield { runId: row.run_id, name: row.name, ...(row.key === null ? {} : { key: row.key }), step: row.step };
      last = rows.at(-1);
      if (rows.length < PAGE || last === undefined) return;
    }
  }

  async delete(runId: string): Promise<void> {
    return this.#write({ what: "delete", runId }, () => {
      this.#sql.deleteStream.run(runId);
      this.#sql.deleteEvents.run(runId);
      this.#sql.deleteCalls.run(runId);
      this.#sql.deleteCheckpoints.run(runId);
      this.#sql.deleteRun.run(runId);
    });
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    return this.#commit({ what: "recordCall", runId }, [{ kind: "record", segment, seq, sealed }]);
  }

  /**
   * Applies the writes in order, each by the rules of `recordCall` or `save`
   * over the run as the writes before it left it, atomically: under one
   * savepoint of this turn's group commit, so one fsync of the WAL at
   * `synchronous` FULL for the batch and every other write of the turn.
   * Either all are durable when it resolves, or the first refusal is thrown
   * and nothing of the batch is written. `InvalidInput` for a malformed batch.
   */
  async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    return this.#commit({ what: "commit", runId }, writes);
  }

  /** A page of runs of any status, newest first (the inspection capability: see `CheckpointStore.listRuns`). */
  async listRuns(query?: RunQuery): Promise<RunPage> {
    return this.#read({ what: "listRuns" }, () => listRuns(this.#db, this.tables, query));
  }

  /** Every checkpoint of the run, by step (the inspection capability). */
  async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    return this.#read({ what: "history", runId }, () => history(this.#db, this.tables, runId, from));
  }

  async calls(runId: string, from?: CallPosition): Promise<StoredCall[]> {
    const read = () =>
      (from === undefined
        ? this.#sql.calls.all(runId)
        : this.#sql.callsFrom.all(runId, from.segment, from.seq)) as StoredCall[];
    return this.#read({ what: "calls", runId }, read).map((row) => checkedCall(runId, row));
  }

  /**
   * Appends one event to the run's inbox (the events capability: see
   * `CheckpointStore.sendEvent`), as one write of this turn's group commit:
   * true once it is durable, false for a resend (a key the inbox holds),
   * writing nothing. A run waiting for an event (`WAITING`) is released by
   * the same write.
   */
  async sendEvent(runId: string, event: { seq: number; key: string; sealed: string }): Promise<boolean> {
    checkEvent(event);
    // Copied now: the write runs at the end of the turn, after the caller may have changed its object.
    const { seq, key, sealed } = event;
    return this.#write({ what: "sendEvent", runId }, () => appendEvent(this.#sql, runId, { seq, key, sealed }));
  }

  /** The run's inbox from event `from` on, by seq (the events capability): a range of the events table's key. */
  async inbox(runId: string, from = 0): Promise<StoredEvent[]> {
    checkInboxFrom(from);
    const rows = this.#read({ what: "inbox", runId }, () => this.#sql.inbox.all(runId, from) as EventColumns[]);
    return rows.map((row) => checkedEvent(runId, row));
  }

  /**
   * Appends one batch to the run's stream (the streams capability: see
   * `CheckpointStore.appendStream`), as one write of this turn's group
   * commit: resolved once it is durable; refused (`streamRefusal`) writing
   * nothing. `InvalidInput` for a malformed batch.
   */
  async appendStream(runId: string, batch: StreamBatch): Promise<void> {
    checkStreamBatch(batch);
    // Copied now: the write runs at the end of the turn, after the caller may have changed its object.
    const { segment, offset, count, sealed } = batch;
    return this.#write({ what: "appendStream", runId }, () =>
      appendBatch(this.#sql, runId, { segment, offset, count, sealed }),
    );
  }

  /** The batches of the run's stream holding part `from` or a later one, a page at most (the streams capability). */
  async stream(runId: string, from = 0): Promise<StoredStreamBatch[]> {
    checkStreamFrom(from);
    return this.#read({ what: "stream", runId }, () => readStream(this.#sql, runId, from));
  }

  /** Removes the run's stream and nothing else (the streams capability), as one write of this turn's group commit. */
  async dropStream(runId: string): Promise<void> {
    return this.#write({ what: "dropStream", runId }, () => void this.#sql.deleteStream.run(runId));
  }

  /** The connection's journal mode and synchronous setting, as SQLite reports them. */
  settings(): { journalMode: string; synchronous: "full" | "normal" | "off" | "extra" } {
    const settings = { what: "settings" };
    const journalMode = String(this.#read(settings, () => this.#db.pragma("journal_mode", { simple: true })));
    const level = Number(this.#read(settings, () => this.#db.pragma("synchronous", { simple: true })));
    return { journalMode, synchronous: (["off", "normal", "full", "extra"] as const)[level] ?? "full" };
  }

  /**
   * Commits the writes already queued (their promises settle as usual), then
   * closes the connection; an operation after it fails with `StoreUnavailable`
   * saying the store was closed while its run used it.
   */
  async close(): Promise<void> {
    this.#group.flush();
    if (this.#db.open) this.#db.close();
  }

  /** `save`, `recordCall` and `commit`: the batch checked, then written as one operation. */
  #commit(operation: StoreOperation & { readonly runId: string }, writes: readonly RunWrite[]): Promise<void> {
    checkBatch(writes);
    return this.#write(operation, () => commitWrites(this.#sql, operation.runId, writes));
  }

  /** One write operation: queued for this turn's group commit (see `GroupCommit`), settled after its COMMIT. */
  #write<T>(operation: StoreOperation, fn: () => T): Promise<T> {
    this.#checkOpen(operation);
    return this.#group.run(operation, fn);
  }

  #read<T>(operation: StoreOperation, fn: () => T): T {
    this.#checkOpen(operation);
    try {
      return fn();
    } catch (error) {
      throw storeError(error, this.#where);
    }
  }

  /** The run's head row and lease, checked, or undefined for an unknown run. */
  #head(runId: string): RunRow | undefined {
    return readHead(this.#sql, runId);
  }

  /** The store's clock (SQLite's), read inside the caller's transaction. */
  #now(): number {
    return (this.#sql.now.get() as { now: number }).now;
  }

  /** Streams a listing by keyset pages: `page(last)` reads the rows after `last`, the previous page's last row. */
  async *#pages(page: (last: ListedRow | undefined) => unknown[]): AsyncIterable<string> {
    let last: ListedRow | undefined;
    for (;;) {
      const rows = this.#read({ what: "listUnfinished" }, () => page(last) as ListedRow[]);
      for (const row of rows) yield row.run_id;
      last = rows.at(-1);
      if (rows.length < PAGE || last === undefined) return;
    }
  }

  #checkOpen(operation: StoreOperation): void {
    if (!this.#db.open) throw closedWhileUsed(operation);
  }
}

/** Typed errors for a path that cannot work, before better-sqlite3 gives a vaguer one. */
function checkPath(path: string, where: string): void {
  if (path === ":memory:")
    throw new InvalidInput(`${where}: an in-memory database is one connection's only; use @durable/store-memory.`);
  if (!existsSync(dirname(resolve(path))))
    throw new InvalidInput(`${where}: the folder ${dirname(resolve(path))} does not exist.`);
  if (existsSync(path)) {
    const stat = statSync(path);
    if (!stat.isFile()) throw new InvalidInput(`${where} is not a file.`);
    if ((stat.mode & 0o222) === 0) throw new InvalidInput(`${where} is read-only; the store must write to it.`);
  }
}

/** WAL lets readers run beside the one writer; switching to it takes a lock, so a second opener retries. */
function enableWal(db: Database.Database): void {
  for (let attempt = 0; ; attempt++) {
    try {
      db.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== "SQLITE_BUSY" || attempt >= 50) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}
