import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../src/index.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";
import { Child } from "./processes.js";
import { processCases } from "./process-cases.js";

const OPEN = fileURLToPath(new URL("./open-store.ts", import.meta.url));
const created: string[] = [];
const dbPath = () => {
  const path = newDatabasePath();
  created.push(path);
  return path;
};
afterAll(() => created.forEach(removeDatabase));

describe("SQLite across processes", () => {
  it("lets processes opening one new file at once all succeed, making the schema once", async () => {
    const path = dbPath();
    const children = Array.from({ length: 6 }, () => new Child("./open.ts", [path]));
    const exits = await Promise.all(children.map((c) => c.exited()));
    expect(exits.map((e) => e.code), children.map((c) => c.stderr).join("\n")).toEqual([0, 0, 0, 0, 0, 0]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT value FROM durable_meta WHERE key = 'schema_version'").pluck().get()).toBe("1");
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'durable_runs'").pluck().get()).toBe(1);
    db.close();
  }, 60_000);

  processCases({ openModule: OPEN, prepare: () => dbPath(), open: (path) => new SQLiteCheckpointStore(path) });
});

