import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import {
  CheckpointNotFound,
  type CheckpointRow,
  type CheckpointStore,
  InvalidInput,
  recordRefusal,
  type RunKind,
  type RunStatus,
  saveRefusal,
  type StoredCall,
  type StoredCheckpoint,
  StoreUnavailable,
} from "@durable/core/store";
import { storeError } from "./errors.js";
import { UNFINISHED_IN, migrate, tablesFor, type Tables } from "./schema.js";

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

interface RunRow {
  flow: string;
  kind: RunKind;
  step: number;
  status: RunStatus;
  segment: number;
  segment_calls: number;
}

const PAGE = 500;

/**
 * A `CheckpointStore` in a SQLite file (better-sqlite3, WAL), shared by every
 * process on one host. Each operation is one `BEGIN IMMEDIATE` transaction, so
 * compare-and-set, claims and fencing hold across processes; a write is
 * durable before its promise resolves.
 */
export class SQLiteCheckpointStore implements CheckpointStore {
  readonly path: string;
  readonly tables: Tables;
  readonly #db: Database.Database;
  readonly #where: string;
  readonly #sql: ReturnType<typeof prepare>;

  constructor(path: string, options: SQLiteStoreOptions = {}) {
    if (typeof path !== "string" || path.length === 0)
      throw new InvalidInput("SQLiteCheckpointStore needs the path of its database file.");
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
    } catch (error) {
      this.#db.close();
      throw storeError(error, this.#where);
    }
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow): Promise<void> {
    this.#run(() => {
      const run = this.#sql.run.get(runId) as RunRow | undefined;
      const refused = saveRefusal(runId, step, checkpoint, run);
      if (refused !== undefined) throw refused;
      const { status, segment, flow, kind, sealed } = checkpoint;
      const segmentCalls = run !== undefined && run.segment === segment ? run.segment_calls : 0;
      this.#sql.insertCheckpoint.run(runId, step, status, segment, flow, kind, sealed);
      this.#sql.upsertRun.run(runId, flow, kind, step, status, segment, segmentCalls);
    });
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const row = this.#read(() => this.#sql.latest.get(runId) as StoredCheckpoint | undefined);
    if (row === undefined) throw new CheckpointNotFound(runId);
    return { ...row };
  }

  async *listUnfinished(flow: string): AsyncIterable<string> {
    let after = "";
    for (;;) {
      const page = this.#read(() => this.#sql.unfinished.all(flow, after, PAGE) as string[]);
      yield* page;
      const last = page.at(-1);
      if (page.length < PAGE || last === undefined) return;
      after = last;
    }
  }

  async delete(runId: string): Promise<void> {
    this.#run(() => {
      this.#sql.deleteCalls.run(runId);
      this.#sql.deleteCheckpoints.run(runId);
      this.#sql.deleteRun.run(runId);
    });
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    this.#run(() => {
      const run = this.#sql.run.get(runId) as RunRow | undefined;
      const refused = recordRefusal(runId, segment, seq, run, run?.segment_calls ?? 0);
      if (refused !== undefined) throw refused;
      this.#sql.insertCall.run(runId, segment, seq, sealed);
      this.#sql.countCall.run(runId);
    });
  }

  async calls(runId: string): Promise<StoredCall[]> {
    return this.#read(() => this.#sql.calls.all(runId) as StoredCall[]).map((row) => ({ ...row }));
  }

  /** The connection's journal mode and synchronous setting, as SQLite reports them. */
  settings(): { journalMode: string; synchronous: "full" | "normal" | "off" | "extra" } {
    const journalMode = String(this.#read(() => this.#db.pragma("journal_mode", { simple: true })));
    const level = Number(this.#read(() => this.#db.pragma("synchronous", { simple: true })));
    return { journalMode, synchronous: (["off", "normal", "full", "extra"] as const)[level] ?? "full" };
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /** One write operation: a `BEGIN IMMEDIATE` transaction, committed durably. */
  #run(fn: () => void): void {
    this.#checkOpen();
    try {
      this.#db.transaction(fn).immediate();
    } catch (error) {
      throw storeError(error, this.#where);
    }
  }

  #read<T>(fn: () => T): T {
    this.#checkOpen();
    try {
      return fn();
    } catch (error) {
      throw storeError(error, this.#where);
    }
  }

  #checkOpen(): void {
    if (!this.#db.open) throw new StoreUnavailable(`${this.#where}: the store is closed.`);
  }
}

function prepare(db: Database.Database, t: Tables) {
  return {
    run: db.prepare(`SELECT flow, kind, step, status, segment, segment_calls FROM ${t.runs} WHERE run_id = ?`),
    insertCheckpoint: db.prepare(
      `INSERT INTO ${t.checkpoints} (run_id, step, status, segment, flow, kind, sealed) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    upsertRun: db.prepare(
      `INSERT INTO ${t.runs} (run_id, flow, kind, step, status, segment, segment_calls) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, status = excluded.status,
         segment = excluded.segment, segment_calls = excluded.segment_calls`,
    ),
    latest: db.prepare(
      `SELECT run_id AS runId, step, status, segment, flow, kind, sealed FROM ${t.checkpoints} WHERE run_id = ? ORDER BY step DESC LIMIT 1`,
    ),
    unfinished: db
      .prepare(
        `SELECT run_id FROM ${t.runs} WHERE flow = ? AND status IN ${UNFINISHED_IN} AND run_id > ? ORDER BY run_id LIMIT ?`,
      )
      .pluck(),
    deleteCalls: db.prepare(`DELETE FROM ${t.calls} WHERE run_id = ?`),
    deleteCheckpoints: db.prepare(`DELETE FROM ${t.checkpoints} WHERE run_id = ?`),
    deleteRun: db.prepare(`DELETE FROM ${t.runs} WHERE run_id = ?`),
    insertCall: db.prepare(`INSERT INTO ${t.calls} (run_id, segment, seq, sealed) VALUES (?, ?, ?, ?)`),
    countCall: db.prepare(`UPDATE ${t.runs} SET segment_calls = segment_calls + 1 WHERE run_id = ?`),
    calls: db.prepare(
      `SELECT run_id AS runId, segment, seq, sealed FROM ${t.calls} WHERE run_id = ? ORDER BY segment, seq`,
    ),
  };
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
