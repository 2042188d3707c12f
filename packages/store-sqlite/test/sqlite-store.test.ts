import { chmodSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { InvalidInput, StoreUnavailable } from "@durable/core/store";
import { SCHEMA_VERSION, SQLiteCheckpointStore } from "../src/index.js";
import sqlite, { newDatabasePath, removeDatabase } from "./conformance.js";

const created: string[] = [];
const path = () => {
  const p = newDatabasePath();
  created.push(p);
  return p;
};
afterAll(() => created.forEach(removeDatabase));

const row = { status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" } as const;

describe("bad input gets a typed error", () => {
  it("a path in a missing folder", () => {
    expect(() => new SQLiteCheckpointStore("/nonexistent-folder/runs.db")).toThrow(
      /the folder \/nonexistent-folder does not exist/,
    );
  });

  it("a file that is not a SQLite database", () => {
    const p = path();
    writeFileSync(p, "this is a text file, not a database ".repeat(200));
    const error = (() => {
      try {
        new SQLiteCheckpointStore(p);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidInput);
    expect((error as Error).message).toMatch(/is not a SQLite database/);
  });

  it("a database holding another application's tables of the same names", () => {
    const p = path();
    const db = new Database(p);
    db.exec("CREATE TABLE durable_runs (id INTEGER PRIMARY KEY, name TEXT)");
    db.prepare("INSERT INTO durable_runs (name) VALUES ('theirs')").run();
    db.close();
    expect(() => new SQLiteCheckpointStore(p)).toThrow(/already holds a table durable_runs that @durable did not make/);
    const after = new Database(p);
    expect(after.prepare("SELECT name FROM durable_runs").pluck().all()).toEqual(["theirs"]);
    after.close();
  });

  it("a read-only file", async () => {
    const p = path();
    await new SQLiteCheckpointStore(p).close();
    chmodSync(p, 0o444);
    expect(() => new SQLiteCheckpointStore(p)).toThrow(/is read-only/);
  });

  it("a table prefix that is not a plain name, and an in-memory database", () => {
    expect(() => new SQLiteCheckpointStore(path(), { tablePrefix: "x; DROP TABLE y" })).toThrow(InvalidInput);
    expect(() => new SQLiteCheckpointStore(":memory:")).toThrow(/store-memory/);
  });

  it("a store closed while a run still uses it says so, naming the run and the operation", async () => {
    const store = new SQLiteCheckpointStore(path());
    await store.save("order-7", 0, row);
    await store.close();
    for (const [what, use] of [
      ["save", () => store.save("order-7", 1, row)],
      ["latest", () => store.latest("order-7")],
      ["recordCall", () => store.recordCall("order-7", 0, 0, "d1.-.{}")],
      ["release", () => store.release("order-7", 0, "me")],
      ["appendStream", () => store.appendStream("order-7", { segment: 0, offset: 0, count: 1, sealed: "d1.-.{}" })],
      ["stream", () => store.stream("order-7")],
      ["dropStream", () => store.dropStream("order-7")],
    ] as const) {
      const error: unknown = await use().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message).toBe(
        `The store was closed while run "order-7" was using it (${what} after close()): stop what uses a store (await worker.stop()) before closing it.`,
      );
    }
  });
});

describe("schema versions", () => {
  it("migrates an older schema and keeps its rows' tables", async () => {
    const p = path();
    const db = new Database(p);
    db.exec("CREATE TABLE durable_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID");
    db.exec("INSERT INTO durable_meta VALUES ('owner', '@durable/store-sqlite'), ('schema_version', '0')");
    db.close();
    const store = new SQLiteCheckpointStore(p);
    await store.save("r", 0, row);
    expect((await store.latest("r")).step).toBe(0);
    await store.close();
    const check = new Database(p);
    expect(check.prepare("SELECT value FROM durable_meta WHERE key = 'schema_version'").pluck().get()).toBe(
      String(SCHEMA_VERSION),
    );
    check.close();
  });

  it("refuses a newer schema with a clear error", async () => {
    const p = path();
    await new SQLiteCheckpointStore(p).close();
    const db = new Database(p);
    db.exec(`UPDATE durable_meta SET value = '${SCHEMA_VERSION + 1}' WHERE key = 'schema_version'`);
    db.close();
    expect(() => new SQLiteCheckpointStore(p)).toThrow(/newer than this @durable\/store-sqlite knows/);
  });
});

describe("durability settings", () => {
  it("commits with synchronous FULL by default, NORMAL on request, in WAL mode", async () => {
    const full = new SQLiteCheckpointStore(path());
    const normal = new SQLiteCheckpointStore(path(), { synchronous: "normal" });
    expect(full.settings()).toEqual({ journalMode: "wal", synchronous: "full" });
    expect(normal.settings()).toEqual({ journalMode: "wal", synchronous: "normal" });
    await full.close();
    await normal.close();
  });
});

// Tenants sharing one file by table prefix see nothing of each other.
const shared = path();
runConformance(
  {
    ...sqlite,
    name: "sqlite, one file, a table prefix per tenant",
    createStore: () => new SQLiteCheckpointStore(shared, { tablePrefix: `t${Math.random().toString(36).slice(2)}_` }),
    destroyStore: (s) => s.close(),
  },
  { groups: ["isolation"] },
);
