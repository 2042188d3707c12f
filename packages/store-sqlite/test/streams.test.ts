import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  type CheckpointRow,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  InvalidInput,
  MAX_STREAM_BATCH,
  MAX_STREAM_PAGE,
  type StreamBatch,
} from "@durable/core/store";
import { SCHEMA_VERSION, type SQLiteCheckpointStore } from "../src/index.js";
import { MIGRATIONS, tablesFor } from "../src/schema.js";
import { statementSql } from "../src/statements.js";
import { newDatabasePath, removeDatabase, storesOfThisFile } from "./conformance.js";
import { walCommits } from "./wal.js";

// The streams capability beyond the kit's `stream` group: how the SQLite store keeps a run's stream.

const open = storesOfThisFile();

const MINUTE = 60_000;
const row = (step: number, segment = 0): CheckpointRow => ({
  status: "running",
  segment,
  name: "f",
  kind: "flow",
  sealed: `d${step}`,
});
const batch = (offset: number, count = 1, segment = 0): StreamBatch => ({
  segment,
  offset,
  count,
  sealed: `s${offset}`,
});

/** The offsets of the batches `stream(runId, from)` gives. */
async function offsets(store: SQLiteCheckpointStore, runId: string, from?: number): Promise<number[]> {
  return (await store.stream(runId, from)).map((b) => b.offset);
}

/** Runs `sql` on the store's file through a connection of its own, past the store. */
function onFile(store: SQLiteCheckpointStore, sql: string, ...params: unknown[]): void {
  const db = new Database(store.path, { timeout: 5000 });
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

/** A file of schema version 6, the one before streams, holding run "held" (worker "w" holds it at step 1) and "ended". */
function version6File(): string {
  const path = newDatabasePath();
  const t = tablesFor("durable_");
  const db = new Database(path);
  db.exec(`CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`);
  db.exec(`INSERT INTO ${t.meta} VALUES ('owner', '@durable/store-sqlite'), ('schema_version', '6')`);
  for (const migration of MIGRATIONS.slice(0, 6)) db.exec(migration(t));
  const insertRun = db.prepare(
    `INSERT INTO ${t.runs} (run_id, flow, kind, step, status, segment, segment_calls, lease_owner, lease_expires)
     VALUES (?, 'f', 'flow', 1, ?, 0, 0, ?, ?)`,
  );
  insertRun.run("held", "running", "w", Date.now() + MINUTE);
  insertRun.run("ended", "done", null, null);
  const insertCheckpoint = db.prepare(`INSERT INTO ${t.checkpoints} VALUES (?, ?, ?, 0, 'f', 'flow', ?)`);
  for (const [runId, status] of [
    ["held", "running"],
    ["ended", "done"],
  ] as const) {
    insertCheckpoint.run(runId, 0, "running", "d0");
    insertCheckpoint.run(runId, 1, status, "d1");
  }
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

describe("schema version 7", () => {
  it("migrates a version 6 file in place: its runs keep their steps and leases, with empty streams that take batches", async () => {
    const path = version6File();
    const store = open(path);
    expect(schemaVersion(path)).toBe(String(SCHEMA_VERSION));
    expect(await store.latest("held")).toMatchObject({ step: 1, status: "running" });
    expect(await store.latest("ended")).toMatchObject({ step: 1, status: "done" });
    expect(await store.leaseOf("held")).toMatchObject({ owner: "w" });
    expect(await store.stream("held")).toEqual([]);
    await store.appendStream("held", batch(0, 2));
    await store.appendStream("held", batch(2));
    expect(await store.stream("held")).toEqual([
      { runId: "held", segment: 0, offset: 0, count: 2, sealed: "s0" },
      { runId: "held", segment: 0, offset: 2, count: 1, sealed: "s2" },
    ]);
    await expect(store.appendStream("ended", batch(0))).rejects.toThrow(CheckpointConflict);
    await store.save("held", 2, row(2), { owner: "w", ms: MINUTE });
    expect(await store.latest("held")).toMatchObject({ step: 2 });
  });

  it("refuses a version 6 file holding another application's streams table, and leaves it at version 6", () => {
    const path = version6File();
    const db = new Database(path);
    db.exec("CREATE TABLE durable_streams (id INTEGER PRIMARY KEY, body TEXT)");
    db.close();
    try {
      expect(() => open(path)).toThrow(InvalidInput);
      expect(() => open(path)).toThrow(/already holds a table durable_streams that @durable did not make/);
      expect(schemaVersion(path)).toBe("6");
    } finally {
      removeDatabase(path);
    }
  });
});

describe("a run's stream", () => {
  it("is read, its end found and dropped each by a range of the primary key (run_id, offset)", () => {
    const store = open();
    const t = store.tables;
    const sql = statementSql(t);
    const db = new Database(store.path, { readonly: true });
    const plan = (query: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...params) as Array<{ detail: string }>)
        .map((step) => step.detail)
        .join("\n");
    try {
      // Ranges of the key, no temporary B-tree for ORDER BY: a read from a late part costs what it returns, after
      // one seek for the batch holding that part.
      expect(plan(sql.stream, { runId: "r", from: 3_000 })).toBe(
        [
          `SEARCH ${t.streams} USING PRIMARY KEY (run_id=? AND offset>?)`,
          "SCALAR SUBQUERY 1",
          `SEARCH ${t.streams} USING PRIMARY KEY (run_id=? AND offset<?)`,
        ].join("\n"),
      );
      expect(plan(sql.lastBatch, "r")).toBe(`SEARCH ${t.streams} USING PRIMARY KEY (run_id=?)`);
      expect(plan(sql.deleteStream, "r")).toBe(`SEARCH ${t.streams} USING PRIMARY KEY (run_id=?)`);
    } finally {
      db.close();
    }
  });

  it("gives the batch holding the part read from, even one of the most parts a batch holds, and pages from there", async () => {
    const store = open();
    await store.save("r", 0, row(0));
    await store.appendStream("r", batch(0, MAX_STREAM_BATCH));
    await store.appendStream("r", batch(MAX_STREAM_BATCH, MAX_STREAM_BATCH));
    await store.appendStream("r", batch(2 * MAX_STREAM_BATCH));
    expect(await offsets(store, "r", MAX_STREAM_BATCH - 1)).toEqual([0, 1_000, 2_000]);
    expect(await offsets(store, "r", MAX_STREAM_BATCH)).toEqual([1_000, 2_000]);
    expect(await offsets(store, "r", 2 * MAX_STREAM_BATCH - 1)).toEqual([1_000, 2_000]);
    expect(await offsets(store, "r", 2 * MAX_STREAM_BATCH)).toEqual([2_000]);
    expect(await offsets(store, "r", 2 * MAX_STREAM_BATCH + 1)).toEqual([]);

    // A page of single parts ends at MAX_STREAM_PAGE batches, wherever it starts.
    await store.save("long", 0, row(0));
    const appends = [];
    for (let offset = 0; offset < MAX_STREAM_PAGE + 10; offset++)
      appends.push(store.appendStream("long", batch(offset)));
    await Promise.all(appends);
    const page = await offsets(store, "long", 5);
    expect(page).toHaveLength(MAX_STREAM_PAGE);
    expect([page[0], page.at(-1)]).toEqual([5, MAX_STREAM_PAGE + 4]);
  });

  it("keeps each offset once even past the store's rules: the primary key refuses a second batch there", async () => {
    const store = open();
    await store.save("r", 0, row(0));
    await store.appendStream("r", batch(0, 2));
    expect(() =>
      onFile(
        store,
        `INSERT INTO ${store.tables.streams} (run_id, "offset", count, segment, sealed) VALUES ('r', 0, 1, 0, 'x')`,
      ),
    ).toThrow(/UNIQUE constraint failed/);
  });

  it("read back with columns no append writes is CheckpointStoreCorrupt, to a reader, and to the next append unless only the sealed text is", async () => {
    const store = open();
    await store.save("r", 0, row(0));
    await store.appendStream("r", batch(0, 2));
    for (const [column, value] of [
      ["count", 0],
      ["count", "two"],
      ["segment", -1],
      ["offset", "x"],
      // A blob: a number bound to a TEXT column would be kept as its text.
      ["sealed", Buffer.from([7])],
    ] as const) {
      onFile(store, `UPDATE ${store.tables.streams} SET ${column} = ? WHERE run_id = 'r'`, value);
      await expect(store.stream("r"), `${column} ${String(value)}`).rejects.toThrow(CheckpointStoreCorrupt);
      // An append reads where the stream ends, not the sealed text.
      if (column !== "sealed")
        await expect(store.appendStream("r", batch(2)), `${column} ${String(value)}`).rejects.toThrow(
          CheckpointStoreCorrupt,
        );
      onFile(
        store,
        `UPDATE ${store.tables.streams} SET "offset" = 0, count = 2, segment = 0, sealed = 's0' WHERE run_id = 'r'`,
      );
    }
    await store.appendStream("r", batch(2));
    expect(await offsets(store, "r")).toEqual([0, 2]);
  });

  it("is deleted with the run, and dropped alone: the run's checkpoints, records and lease stay", async () => {
    const store = open();
    await store.save("r", 0, row(0), { owner: "w", ms: MINUTE });
    await store.recordCall("r", 0, 0, "c0");
    await store.appendStream("r", batch(0, 3));
    await store.dropStream("r");
    expect(await store.stream("r")).toEqual([]);
    expect(await store.latest("r")).toMatchObject({ step: 0 });
    expect(await store.calls("r")).toHaveLength(1);
    expect(await store.leaseOf("r")).toMatchObject({ owner: "w" });
    await store.appendStream("r", batch(0));
    await store.delete("r");
    const db = new Database(store.path, { readonly: true });
    try {
      expect(db.prepare(`SELECT count(*) FROM ${store.tables.streams}`).pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });
});

describe("group commit of a stream's batches", () => {
  it("appends of one turn share one transaction, each judged over the appends before it; a refused one is rolled back alone", async () => {
    const store = open();
    await store.save("r", 0, row(0), { owner: "w", ms: MINUTE });
    const before = walCommits(store.path);
    const results = await Promise.allSettled([
      store.appendStream("r", batch(0, 2)),
      store.appendStream("r", batch(2)),
      store.appendStream("r", batch(2)),
      store.appendStream("r", batch(3, 1, 1)),
      store.appendStream("r", batch(3, 4)),
    ]);
    expect(walCommits(store.path) - before).toBe(1);
    expect(results.map((r) => (r.status === "fulfilled" ? "ok" : r.reason.constructor))).toEqual([
      "ok",
      "ok",
      CheckpointConflict,
      CheckpointConflict,
      "ok",
    ]);
    expect((await store.stream("r")).map((b) => [b.offset, b.count])).toEqual([
      [0, 2],
      [2, 1],
      [3, 4],
    ]);
  });
});
