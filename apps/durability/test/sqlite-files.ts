import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterEach } from "vitest";

/** The SQLite files of a test file's in-process stories, and the store objects opened on them. */
interface SQLiteFiles {
  /** A SQLite file and an effects file in a new folder. */
  files(): { db: string; effects: string };
  /** A store object of its own on the file: a worker's, or an admin route's. */
  open(db: string): SQLiteCheckpointStore;
}

/** Files in folders named `<prefix>…`: each store closed and each folder removed after every test. */
export function sqliteFiles(prefix: string): SQLiteFiles {
  const dirs: string[] = [];
  const stores: SQLiteCheckpointStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return {
    files() {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return { db: join(dir, "runs.db"), effects: join(dir, "effects.log") };
    },
    open(db) {
      const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
      stores.push(store);
      return store;
    },
  };
}
