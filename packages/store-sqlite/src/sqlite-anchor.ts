import Database from "better-sqlite3";
import {
  type AnchoredHead,
  CheckpointStoreCorrupt,
  closedWhileUsed,
  InvalidInput,
  isAnchoredHead,
  mergeHeads,
  type RunAnchor,
  type StoreOperation,
} from "@durable/core/store";
import { checkOptions, type OptionTable } from "@durable/core/runner";
import { storeError } from "./errors.js";
import { tablesFor } from "./schema.js";

/** Options of `SQLiteRunAnchor`. */
export interface SQLiteAnchorOptions {
  /** Prefix of the anchor's table (`<prefix>anchor`), one per tenant sharing a file; default `durable_`. */
  readonly tablePrefix?: string;
  /** How long an advance waits for another process's lock before `StoreUnavailable`; default 5000 ms. */
  readonly busyTimeoutMs?: number;
}

const SQLITE_ANCHOR_OPTIONS: OptionTable<SQLiteAnchorOptions> = { tablePrefix: true, busyTimeoutMs: true };

interface HeadRow {
  readonly step: number;
  readonly segment: number;
  readonly calls: string;
}

/**
 * A `RunAnchor` in a SQLite file of its own: a second place, beside any
 * checkpoint store (PostgreSQL, Redis, another SQLite file), that keeps each
 * run's head. Each advance is one `BEGIN IMMEDIATE` transaction at
 * `synchronous = FULL`, so it is on disk when it resolves and several
 * processes on the host may share the file. Keep the file where whoever can
 * write the checkpoint store cannot (another disk, volume or account).
 */
export class SQLiteRunAnchor implements RunAnchor {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #where: string;
  readonly #read: Database.Statement;
  readonly #write: Database.Statement;
  readonly #forget: Database.Statement;
  readonly #advance: (runId: string, head: AnchoredHead) => void;

  constructor(path: string, options: SQLiteAnchorOptions = {}) {
    checkOptions("SQLiteRunAnchor", options, SQLITE_ANCHOR_OPTIONS);
    const prefix = options.tablePrefix ?? "durable_";
    tablesFor(prefix); // checks the prefix as the store does
    const table = `${prefix}anchor`;
    this.path = path;
    this.#where = `SQLite anchor ${JSON.stringify(path)}`;
    try {
      this.#db = new Database(path, { timeout: options.busyTimeoutMs ?? 5000 });
      this.#db.pragma("journal_mode = WAL");
      this.#db.pragma("synchronous = FULL");
      this.#db.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (run_id TEXT PRIMARY KEY NOT NULL, step INTEGER NOT NULL, segment INTEGER NOT NULL, calls TEXT NOT NULL) WITHOUT ROWID`,
      );
      this.#read = this.#db.prepare(`SELECT step, segment, calls FROM ${table} WHERE run_id = ?`);
      this.#write = this.#db.prepare(
        `INSERT INTO ${table} (run_id, step, segment, calls) VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, segment = excluded.segment, calls = excluded.calls`,
      );
      this.#forget = this.#db.prepare(`DELETE FROM ${table} WHERE run_id = ?`);
    } catch (error) {
      throw storeError(error, this.#where);
    }
    const advance = this.#db.transaction((runId: string, head: AnchoredHead) => {
      const next = mergeHeads(this.#head(runId), head);
      this.#write.run(runId, next.step, next.segment, JSON.stringify(next.calls));
    });
    this.#advance = (runId, head) => advance.immediate(runId, head);
  }

  async advance(runId: string, head: AnchoredHead): Promise<void> {
    if (!isAnchoredHead(head))
      throw new InvalidInput(`${this.#where}: a head is { step, segment, calls } of whole numbers ≥ 0.`);
    this.#run({ what: "advance", runId }, () => this.#advance(runId, head));
  }

  async read(runId: string): Promise<AnchoredHead | undefined> {
    return this.#run({ what: "read", runId }, () => this.#head(runId));
  }

  async forget(runId: string): Promise<void> {
    this.#run({ what: "forget", runId }, () => this.#forget.run(runId));
  }

  /** Closes the connection; an operation after it fails with `StoreUnavailable` saying so, naming its run. */
  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  #head(runId: string): AnchoredHead | undefined {
    const row = this.#read.get(runId) as HeadRow | undefined;
    if (row === undefined) return undefined;
    let head: unknown;
    try {
      head = { step: row.step, segment: row.segment, calls: JSON.parse(row.calls) };
    } catch {
      head = undefined;
    }
    if (!isAnchoredHead(head)) throw new CheckpointStoreCorrupt(runId, `${this.#where} holds an unreadable head.`);
    return head;
  }

  #run<T>(operation: StoreOperation, fn: () => T): T {
    if (!this.#db.open) throw closedWhileUsed(operation);
    try {
      return fn();
    } catch (error) {
      throw storeError(error, this.#where);
    }
  }
}
