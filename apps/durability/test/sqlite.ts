import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConformanceInitializer } from "@durable/conformance";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

/** The SQLite files of the kit's tests: a new file per store, in the system's temp folder. */
const testDir = join(tmpdir(), "durable-sqlite-tests");

export function newDatabasePath(): string {
  mkdirSync(testDir, { recursive: true });
  return join(testDir, `${randomUUID()}.db`);
}

export function removeDatabase(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

/**
 * The SQLite store as the kit's crash group takes it: a new file per store,
 * which child processes open by its path (`open-sqlite.mjs`). The store's own
 * conformance run, with every capability, is in @durable/store-sqlite.
 */
const sqlite: ConformanceInitializer<SQLiteCheckpointStore> = {
  name: "sqlite",
  createStore: () => new SQLiteCheckpointStore(newDatabasePath()),
  async destroyStore(store) {
    await store.close();
    removeDatabase(store.path);
  },
  capabilities: {
    multiProcess: { opener: new URL("./open-sqlite.mjs", import.meta.url).href, handle: (store) => store.path },
  },
};

export default sqlite;
