import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { afterAll } from "vitest";
import { anchorInFiles, type ConformanceInitializer, type RawAccess } from "@durable/conformance";
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
  };
}

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
