import type Database from "better-sqlite3";
import { closedWhileUsed, type StoreOperation } from "@durable/core/store";
import { storeError } from "./errors.js";

/**
 * A write operation waiting for its group: which it is, what it does inside the transaction, and how its
 * promise settles.
 */
interface Queued {
  readonly operation: StoreOperation;
  readonly apply: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** How one operation of a group went, settled once the group's transaction is over. */
type Outcome = { readonly value: unknown } | { readonly error: Error };

/**
 * Group commit: the write operations called in one turn of the event loop
 * are applied together at its end (`setImmediate`, the turn the runner's
 * writer flushes in too) in one `BEGIN IMMEDIATE … COMMIT`, so one fsync of
 * the WAL at `synchronous` FULL serves every run of the process that wrote
 * in that turn. Each operation runs under its own SAVEPOINT, in call order:
 * one its rules refuse, or whose statement fails, rolls back to it alone and
 * rejects with its own error, and the others still commit. Every promise
 * settles only after the COMMIT (or the ROLLBACK), so a write is durable when
 * it resolves.
 */
export class GroupCommit {
  readonly #db: Database.Database;
  readonly #where: string;
  readonly #tx: Readonly<
    Record<"begin" | "commit" | "rollback" | "savepoint" | "release" | "rollbackTo", Database.Statement>
  >;
  #queue: Queued[] = [];
  #soon: NodeJS.Immediate | undefined;

  constructor(db: Database.Database, where: string) {
    this.#db = db;
    this.#where = where;
    this.#tx = {
      begin: db.prepare("BEGIN IMMEDIATE"),
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
      savepoint: db.prepare("SAVEPOINT durable_write"),
      release: db.prepare("RELEASE durable_write"),
      rollbackTo: db.prepare("ROLLBACK TO durable_write"),
    };
  }

  /** Queues `apply` (doing `operation`) for this turn's group; resolves with what it returned once the group committed. */
  run<T>(operation: StoreOperation, apply: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ operation, apply, resolve: resolve as (value: unknown) => void, reject });
      this.#soon ??= setImmediate(() => this.flush());
    });
  }

  /** Applies every queued operation now; `close()` calls it so that nothing queued is lost or left waiting. */
  flush(): void {
    if (this.#soon !== undefined) clearImmediate(this.#soon);
    this.#soon = undefined;
    const group = this.#queue;
    this.#queue = [];
    if (group.length === 0) return;
    if (!this.#db.open) {
      for (const op of group) op.reject(closedWhileUsed(op.operation));
      return;
    }
    let outcomes: Outcome[];
    try {
      // The one wait on another connection's lock, bounded by busy_timeout: on SQLITE_BUSY every operation fails.
      this.#tx.begin.run();
      outcomes = group.map((op) => this.#apply(op));
      this.#tx.commit.run();
    } catch (error) {
      if (this.#db.inTransaction) this.#tx.rollback.run();
      // Nothing of the group was written: each operation fails alike, a refused one too (it was judged over
      // writes that did not land).
      for (const op of group) op.reject(storeError(error, this.#where));
      return;
    }
    group.forEach((op, i) => {
      const outcome = outcomes[i] as Outcome;
      if ("error" in outcome) op.reject(outcome.error);
      else op.resolve(outcome.value);
    });
  }

  /** One operation under its savepoint: a refusal or a failed statement undoes it alone. */
  #apply(op: Queued): Outcome {
    this.#tx.savepoint.run();
    try {
      const value = op.apply();
      this.#tx.release.run();
      return { value };
    } catch (error) {
      // Some errors (I/O, full disk) make SQLite roll the whole transaction back: then the group fails.
      if (!this.#db.inTransaction) throw error;
      this.#tx.rollbackTo.run();
      this.#tx.release.run();
      return { error: storeError(error, this.#where) };
    }
  }
}
