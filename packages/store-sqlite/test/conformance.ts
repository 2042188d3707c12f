import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { afterAll } from "vitest";
import {
  anchorInFiles,
  type ConformanceInitializer,
  type RawAccess,
  type RowColumn,
  type RowRef,
} from "@durable/conformance";
import { SQLiteCheckpointStore } from "../src/index.js";

/** The SQLite store's conformance initializer: a new file per store, in the system's temp folder. */
const testDir = join(tmpdir(), "durable-sqlite-tests");

export function newDatabasePath(): string {
  mkdirSync(testDir, { recursive: true });
  return join(testDir, `${randomUUID()}.db`);
}

export function removeDatabase(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

/** Reads and writes the store's rows through a connection of its own, past the store's API. */
function raw(store: SQLiteCheckpointStore): RawAccess {
  const { checkpoints, calls } = store.tables;
  const on = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(store.path, { timeout: 5000 });
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  const one = (value: unknown, what: string): string => {
    if (typeof value !== "string") throw new Error(`no ${what}`);
    return value;
  };
  return {
    async readCheckpoint(runId, step) {
      return one(
        on((db) =>
          db.prepare(`SELECT sealed FROM ${checkpoints} WHERE run_id = ? AND step = ?`).pluck().get(runId, step),
        ),
        "checkpoint",
      );
    },
    async writeCheckpoint(runId, step, sealed) {
      on((db) =>
        db.prepare(`UPDATE ${checkpoints} SET sealed = ? WHERE run_id = ? AND step = ?`).run(sealed, runId, step),
      );
    },
    async deleteCheckpoint(runId, step) {
      on((db) => db.prepare(`DELETE FROM ${checkpoints} WHERE run_id = ? AND step = ?`).run(runId, step));
    },
    async readCall(runId, segment, seq) {
      return one(
        on((db) =>
          db
            .prepare(`SELECT sealed FROM ${calls} WHERE run_id = ? AND segment = ? AND seq = ?`)
            .pluck()
            .get(runId, segment, seq),
        ),
        "call",
      );
    },
    async writeCall(runId, segment, seq, sealed) {
      on((db) =>
        db
          .prepare(`UPDATE ${calls} SET sealed = ? WHERE run_id = ? AND segment = ? AND seq = ?`)
          .run(sealed, runId, segment, seq),
      );
    },
    async deleteCall(runId, segment, seq) {
      on((db) =>
        db.prepare(`DELETE FROM ${calls} WHERE run_id = ? AND segment = ? AND seq = ?`).run(runId, segment, seq),
      );
    },
    async setColumn(row, column, value) {
      const name = SQL_COLUMNS[row.kind][column];
      if (name === undefined) return false;
      const [table, where, key] =
        row.kind === "checkpoint"
          ? [checkpoints, "run_id = ? AND step = ?", [row.runId, row.step]]
          : row.kind === "call"
            ? [calls, "run_id = ? AND segment = ? AND seq = ?", [row.runId, row.segment, row.seq]]
            : [store.tables.runs, "run_id = ?", [row.runId]];
      return on((db) => {
        try {
          db.prepare(`UPDATE ${table} SET ${name} = ? WHERE ${where}`).run(value, ...key);
        } catch {
          return false; // NOT NULL
        }
        // A column's affinity may turn the value into another (7 into "7" in a TEXT column): then it was not held as given.
        const moved = row.kind === "call" && (column === "segment" || column === "seq");
        const at = moved ? (column === "segment" ? [row.runId, value, row.seq] : [row.runId, row.segment, value]) : key;
        return (
          db
            .prepare(`SELECT ${name} FROM ${table} WHERE ${where}`)
            .pluck()
            .get(...at) === value
        );
      });
    },
  };
}

/** The columns of each row the raw oracle sets, by the protocol's names. */
const SQL_COLUMNS: Record<RowRef["kind"], Partial<Record<RowColumn, string>>> = {
  checkpoint: { status: "status", segment: "segment", name: "flow", kind: "kind", sealed: "sealed" },
  call: { segment: "segment", seq: "seq", sealed: "sealed" },
  head: { step: "step", status: "status", segment: "segment", name: "flow", kind: "kind", records: "segment_calls" },
};

const sqlite: ConformanceInitializer<SQLiteCheckpointStore> = {
  name: "sqlite",
  createStore: () => new SQLiteCheckpointStore(newDatabasePath()),
  async destroyStore(store) {
    await store.close();
    removeDatabase(store.path);
  },
  capabilities: {
    multiProcess: { opener: new URL("./open-store.mjs", import.meta.url).href, handle: (store) => store.path },
    connect: async (store) => new SQLiteCheckpointStore(store.path),
    // The kit's anchors: each in a SQLite file of its own, beside the store's.
    anchor: anchorInFiles(new URL("./open-anchor.mjs", import.meta.url).href),
    plainHead: {
      async endByHand(store, runId) {
        const db = new Database(store.path, { timeout: 5000 });
        db.prepare(`UPDATE ${store.tables.runs} SET status = 'done' WHERE run_id = ?`).run(runId);
        db.close();
      },
    },
  },
  raw,
};

export default sqlite;

/** Opens stores on new files (or `path`), closed and removed after this test file: call it at the top level. */
export function storesOfThisFile(): (path?: string) => SQLiteCheckpointStore {
  const created: SQLiteCheckpointStore[] = [];
  afterAll(async () => {
    for (const store of created) {
      await store.close();
      removeDatabase(store.path);
    }
  });
  return (path = newDatabasePath()) => {
    const store = new SQLiteCheckpointStore(path);
    created.push(store);
    return store;
  };
}
