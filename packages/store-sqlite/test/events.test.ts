import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { CheckpointConflict, type CheckpointRow, InvalidInput, WAITING } from "@durable/core/store";
import { SCHEMA_VERSION } from "../src/index.js";
import { MIGRATIONS, tablesFor } from "../src/schema.js";
import { statementSql } from "../src/statements.js";
import { newDatabasePath, removeDatabase, storesOfThisFile } from "./conformance.js";
import { walCommits } from "./wal.js";

// The events capability beyond the kit's `events` group: how the SQLite store keeps an inbox.

const open = storesOfThisFile();

const MINUTE = 60_000;
const row = (step = 0): CheckpointRow => ({
  status: "running",
  segment: 0,
  name: "f",
  kind: "flow",
  sealed: `d${step}`,
});
const event = (seq: number, key: string) => ({ seq, key, sealed: `e${seq}` });

/** A file of schema version 4, the one before events, holding run "old" held by worker "w" at step 1. */
function version4File(): string {
  const path = newDatabasePath();
  const t = tablesFor("durable_");
  const db = new Database(path);
  db.exec(`CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`);
  db.exec(`INSERT INTO ${t.meta} VALUES ('owner', '@durable/store-sqlite'), ('schema_version', '4')`);
  for (const migration of MIGRATIONS.slice(0, 4)) db.exec(migration(t));
  db.prepare(
    `INSERT INTO ${t.runs} (run_id, flow, kind, step, status, segment, segment_calls, lease_owner, lease_expires)
     VALUES ('old', 'f', 'flow', 1, 'running', 0, 0, 'w', ?)`,
  ).run(Date.now() + MINUTE);
  const insertCheckpoint = db.prepare(`INSERT INTO ${t.checkpoints} VALUES ('old', ?, 'running', 0, 'f', 'flow', ?)`);
  insertCheckpoint.run(0, "d0");
  insertCheckpoint.run(1, "d1");
  db.close();
  return path;
}

function schemaVersion(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT value FROM durable_meta WHERE key = 'schema_version'").pluck().get() as string;
  } finally {
    db.close();
  }
}

describe("schema version 5", () => {
  it("migrates a version 4 file in place: its runs keep their steps and leases, with empty inboxes that take events", async () => {
    const path = version4File();
    const store = open(path);
    expect(schemaVersion(path)).toBe(String(SCHEMA_VERSION));
    expect(await store.latest("old")).toMatchObject({ step: 1, status: "running" });
    expect(await store.leaseOf("old")).toMatchObject({ owner: "w" });
    expect(await store.inbox("old")).toEqual([]);
    expect(await store.sendEvent("old", event(0, "paid"))).toBe(true);
    expect(await store.inbox("old")).toEqual([{ runId: "old", seq: 0, key: "paid", sealed: "e0" }]);
    // The worker saw no event when it decided to wait: the event sent before its save leaves the run claimable.
    await store.save("old", 2, row(2), { owner: WAITING, ms: MINUTE, events: 0 });
    expect(await store.leaseOf("old")).toBeUndefined();
  });

  it("refuses a version 4 file holding another application's events table, and leaves it at version 4", () => {
    const path = version4File();
    const db = new Database(path);
    db.exec("CREATE TABLE durable_events (id INTEGER PRIMARY KEY, body TEXT)");
    db.close();
    try {
      expect(() => open(path)).toThrow(InvalidInput);
      expect(() => open(path)).toThrow(/already holds a table durable_events that @durable did not make/);
      expect(schemaVersion(path)).toBe("4");
    } finally {
      removeDatabase(path);
    }
  });
});

describe("the inbox", () => {
  it("is read, and a resend found, by a range of an index: the events' key by (run_id, seq), the keys' unique index", () => {
    const store = open();
    const t = store.tables;
    const sql = statementSql(t);
    const db = new Database(store.path, { readonly: true });
    const plan = (query: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...params) as Array<{ detail: string }>)
        .map((step) => step.detail)
        .join("\n");
    try {
      // One step each, no temporary B-tree for ORDER BY: a read from a late seq costs what it returns.
      expect(plan(sql.inbox, "r", 3)).toBe(`SEARCH ${t.events} USING PRIMARY KEY (run_id=? AND seq>?)`);
      expect(plan(sql.eventKey, "r", "k")).toBe(
        `SEARCH ${t.events} USING COVERING INDEX ${t.events}_key (run_id=? AND key=?)`,
      );
      expect(plan(sql.deleteEvents, "r")).toBe(`SEARCH ${t.events} USING PRIMARY KEY (run_id=?)`);
    } finally {
      db.close();
    }
  });

  it("keeps each key once and each seq once even past the store's rules: the table's keys refuse a second row", async () => {
    const store = open();
    await store.save("r", 0, row());
    await store.sendEvent("r", event(0, "a"));
    const db = new Database(store.path);
    const insert = db.prepare(`INSERT INTO ${store.tables.events} (run_id, seq, key, sealed) VALUES ('r', ?, ?, 'x')`);
    try {
      expect(() => insert.run(1, "a")).toThrow(/UNIQUE constraint failed/);
      expect(() => insert.run(0, "b")).toThrow(/UNIQUE constraint failed/);
    } finally {
      db.close();
    }
  });
});

describe("group commit of events", () => {
  it("sends of one turn share one transaction, each judged over the sends before it; a refused one is rolled back alone", async () => {
    const store = open();
    await store.save("r", 0, row(), { owner: WAITING, ms: MINUTE, events: 0 });
    const before = walCommits(store.path);
    const results = await Promise.allSettled([
      store.sendEvent("r", event(0, "a")),
      store.sendEvent("r", event(1, "b")),
      store.sendEvent("r", event(1, "c")),
      store.sendEvent("r", event(2, "a")),
      store.sendEvent("r", event(2, "d")),
    ]);
    expect(walCommits(store.path) - before).toBe(1);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : r.reason.constructor))).toEqual([
      true,
      true,
      CheckpointConflict,
      false,
      true,
    ]);
    expect((await store.inbox("r")).map((e) => [e.seq, e.key])).toEqual([
      [0, "a"],
      [1, "b"],
      [2, "d"],
    ]);
    expect(await store.leaseOf("r")).toBeUndefined();
    // A wait's save that saw all three holds the run again; one that saw two does not.
    await store.save("r", 1, row(1), { owner: WAITING, ms: MINUTE, events: 3 });
    expect(await store.leaseOf("r")).toMatchObject({ owner: WAITING });
    await store.save("r", 2, row(2), { owner: WAITING, ms: MINUTE, events: 2 });
    expect(await store.leaseOf("r")).toBeUndefined();
  });
});
