import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  ASLEEP,
  type CheckpointRow,
  CheckpointStoreCorrupt,
  InvalidInput,
  QueueFull,
  type QueuePlace,
} from "@durable/core/store";
import { SCHEMA_VERSION, type SQLiteCheckpointStore } from "../src/index.js";
import { MIGRATIONS, tablesFor } from "../src/schema.js";
import { statementSql } from "../src/statements.js";
import { newDatabasePath, removeDatabase, storesOfThisFile } from "./conformance.js";
import { walCommits } from "./wal.js";

// The queues capability beyond the kit's `queue` group: how the SQLite store keeps places, counts and starts.

const open = storesOfThisFile();

const MINUTE = 60_000;
const row = (step: number, queue?: QueuePlace, segment = 0): CheckpointRow => ({
  status: "running",
  segment,
  name: "f",
  kind: "flow",
  sealed: `d${step}`,
  ...(queue === undefined ? {} : { queue }),
});
const done = (step: number, segment: number): CheckpointRow => ({ ...row(step, undefined, segment), status: "done" });

/** Claims the run at its next step with a raised segment, as a worker does; its row gives `place` (ignored past step 0). */
async function take(store: SQLiteCheckpointStore, runId: string, owner: string, place?: QueuePlace): Promise<void> {
  const { step, segment } = await store.latest(runId);
  await store.save(runId, step + 1, row(step + 1, place, segment + 1), { owner, ms: MINUTE });
}

async function listed(store: SQLiteCheckpointStore, queue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of store.listQueued(queue)) ids.push(run.runId);
  return ids;
}

async function claimable(store: SQLiteCheckpointStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished("f", { claimable: true })) ids.push(id);
  return ids.sort();
}

/** A file of schema version 5, the one before queues, holding run "held" (worker "w" holds it) and "free" (claimable). */
function version5File(): string {
  const path = newDatabasePath();
  const t = tablesFor("durable_");
  const db = new Database(path);
  db.exec(`CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`);
  db.exec(`INSERT INTO ${t.meta} VALUES ('owner', '@durable/store-sqlite'), ('schema_version', '5')`);
  for (const migration of MIGRATIONS.slice(0, 5)) db.exec(migration(t));
  const insertRun = db.prepare(
    `INSERT INTO ${t.runs} (run_id, flow, kind, step, status, segment, segment_calls, lease_owner, lease_expires)
     VALUES (?, 'f', 'flow', 0, 'running', 0, 0, ?, ?)`,
  );
  insertRun.run("held", "w", Date.now() + MINUTE);
  insertRun.run("free", null, null);
  const insertCheckpoint = db.prepare(`INSERT INTO ${t.checkpoints} VALUES (?, 0, 'running', 0, 'f', 'flow', 'd0')`);
  insertCheckpoint.run("held");
  insertCheckpoint.run("free");
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

describe("schema version 6", () => {
  it("migrates a version 5 file in place: its runs stay on no queue, claimable as before, and queued runs start beside them", async () => {
    const path = version5File();
    const store = open(path);
    expect(schemaVersion(path)).toBe(String(SCHEMA_VERSION));
    expect(await store.leaseOf("held")).toMatchObject({ owner: "w" });
    expect(await claimable(store)).toEqual(["free"]);
    const place = { queue: "q", priority: 0, concurrency: 1 };
    await store.save("new", 0, row(0, place));
    expect(await listed(store, "q")).toEqual(["new"]);
    expect(await claimable(store)).toEqual(["free"]);
    // The old runs hold no slot of any queue, and take none: a claim of one is no take of "q".
    await take(store, "new", "a");
    await take(store, "free", "b");
    expect(await store.leaseOf("free")).toMatchObject({ owner: "b" });
  });

  it("refuses a version 5 file holding another application's queue_starts table, and leaves it at version 5", () => {
    const path = version5File();
    const db = new Database(path);
    db.exec("CREATE TABLE durable_queue_starts (id INTEGER PRIMARY KEY, body TEXT)");
    db.close();
    try {
      expect(() => open(path)).toThrow(InvalidInput);
      expect(() => open(path)).toThrow(/already holds a table durable_queue_starts that @durable did not make/);
      expect(schemaVersion(path)).toBe("5");
    } finally {
      removeDatabase(path);
    }
  });
});

describe("a queue's indexes", () => {
  it("list, count holders and count starts each by a range of an index; the claimable listing reads its index alone", () => {
    const store = open();
    const t = store.tables;
    const sql = statementSql(t);
    const db = new Database(store.path, { readonly: true });
    const plan = (query: string, params: unknown) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(params) as Array<{ detail: string }>)
        .map((step) => step.detail)
        .join("\n");
    try {
      // One step each, no temporary B-tree for ORDER BY: a page of the queue costs what it reads.
      expect(plan(sql.queuedSamePriority, { queue: "q", priority: 0, queued: 7, limit: 500 })).toBe(
        `SEARCH ${t.runs} USING INDEX ${t.runs}_queued (queue=? AND queue_priority=? AND queued>?)`,
      );
      expect(plan(sql.queuedLowerPriority, { queue: "q", priority: 0, limit: 500 })).toBe(
        `SEARCH ${t.runs} USING INDEX ${t.runs}_queued (queue=? AND queue_priority<?)`,
      );
      expect(plan(sql.queueHolders, { queue: "q", runId: "r", now: 0, key: null })).toBe(
        `SEARCH ${t.runs} USING INDEX ${t.runs}_holders (queue=? AND lease_expires>?)`,
      );
      expect(plan(sql.queueStarts, ["q", 0])).toBe(
        `SEARCH ${t.queueStarts} USING COVERING INDEX ${t.queueStarts}_at (queue=? AND at>?)`,
      );
      expect(plan(sql.pruneStarts, ["q", 0])).toBe(
        `SEARCH ${t.queueStarts} USING INDEX ${t.queueStarts}_at (queue=? AND at<?)`,
      );
      expect(plan(sql.claimableReleased, ["f", "", 500])).toBe(
        `SEARCH ${t.runs} USING COVERING INDEX ${t.runs}_claimable (flow=? AND lease_expires=? AND run_id>?)`,
      );
    } finally {
      db.close();
    }
  });

  it("list 1,300 runs of three priorities by keyset pages across the priorities, in the queue's order, once each", async () => {
    const store = open();
    const expected: Record<number, string[]> = { 9: [], 0: [], [-4]: [] };
    const saves = [];
    for (let i = 0; i < 1_300; i++) {
      const priority = [0, 9, -4][i % 3] as number;
      // Ids against the order they are saved in: the queue's order is step 0's, never the id's.
      const runId = `run-${String(9_999 - i).padStart(4, "0")}`;
      expected[priority]?.push(runId);
      saves.push(store.save(runId, 0, row(0, { queue: "big", priority })));
    }
    await Promise.all(saves);
    // Held or waiting for a decision: left out, wherever they stand.
    // 433 of priority 9 then 67 of priority 0 fill the first page of 500: the next goes on within priority 0.
    const [held, waiting] = [expected[9]?.[400] as string, expected[0]?.[100] as string];
    await take(store, held, "a");
    await store.save(waiting, 1, { ...row(1), waitsForDecision: true });
    const want = [...(expected[9] ?? []), ...(expected[0] ?? []), ...(expected[-4] ?? [])].filter(
      (id) => id !== held && id !== waiting,
    );
    expect(want.length).toBe(1_298);
    expect(await listed(store, "big")).toEqual(want);
  });
});

describe("a queued run's place", () => {
  it("is step 0's for the run's life: later rows' places change nothing", async () => {
    const store = open();
    const place = { queue: "q", priority: 0, concurrency: 1 };
    await store.save("a", 0, row(0, place));
    await store.save("b", 0, row(0, place));
    await take(store, "a", "w1", { ...place, concurrency: 5 });
    await expect(take(store, "b", "w2", { ...place, concurrency: 5 })).rejects.toThrow(QueueFull);
    await expect(take(store, "b", "w2", { queue: "other", priority: 0 })).rejects.toThrow(QueueFull);
    // A run started on no queue stays on none, whatever its later rows say.
    await store.save("plain", 0, row(0));
    await take(store, "plain", "w3", { queue: "q", priority: 0, concurrency: 1 });
    expect(await store.leaseOf("plain")).toMatchObject({ owner: "w3" });
    expect(await listed(store, "q")).toEqual(["b"]);
  });

  it("read back with columns no save writes: a take is CheckpointStoreCorrupt, never judged by limits it cannot read", async () => {
    const store = open();
    await store.save("r", 0, row(0, { queue: "q", priority: 0, rate: { limit: 2, windowMs: 1_000 } }));
    for (const [column, value] of [
      ["queue_concurrency", 0],
      ["queue_priority", "high"],
      ["queue_rate_window", null],
    ] as const) {
      const db = new Database(store.path);
      db.prepare(`UPDATE ${store.tables.runs} SET ${column} = ? WHERE run_id = 'r'`).run(value);
      db.close();
      await expect(take(store, "r", "w")).rejects.toThrow(CheckpointStoreCorrupt);
      const fix = new Database(store.path);
      fix
        .prepare(
          `UPDATE ${store.tables.runs} SET queue_concurrency = NULL, queue_priority = 0, queue_rate_window = 1000 WHERE run_id = 'r'`,
        )
        .run();
      fix.close();
    }
    await take(store, "r", "w");
    expect(await store.leaseOf("r")).toMatchObject({ owner: "w" });
  });
});

describe("a queue's starts", () => {
  it("are kept in the window of the queue's rate only: each accepted start drops those before its window", async () => {
    const store = open();
    const place = { queue: "q", priority: 0, rate: { limit: 2, windowMs: 1_000 } };
    const starts = () => {
      const db = new Database(store.path, { readonly: true });
      try {
        return db.prepare(`SELECT count(*) FROM ${store.tables.queueStarts} WHERE queue = 'q'`).pluck().get();
      } finally {
        db.close();
      }
    };
    for (const id of ["a", "b", "c"]) await store.save(id, 0, row(0, place));
    await take(store, "a", "w");
    await take(store, "b", "w");
    await expect(take(store, "c", "w")).rejects.toThrow(QueueFull);
    expect(starts()).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await take(store, "c", "w");
    expect(starts()).toBe(1);
    // A start that leases at step 0 counts too; a save without a lease starts nothing.
    await store.save("d", 0, row(0, place), { owner: "w", ms: MINUTE });
    await store.save("e", 0, row(0, place));
    expect(starts()).toBe(2);
  });
});

describe("group commit of takes", () => {
  it("takes of one turn share one transaction, each counted over the writes before it; a refused one fails alone", async () => {
    const store = open();
    const place = { queue: "q", priority: 0, concurrency: 2 };
    for (const id of ["a", "b", "c", "d", "e"]) await store.save(id, 0, row(0, place));
    await take(store, "a", "w0");
    const before = walCommits(store.path);
    const results = await Promise.allSettled([
      store.save("b", 1, row(1, undefined, 1), { owner: "w1", ms: MINUTE }),
      store.save("c", 1, row(1, undefined, 1), { owner: "w2", ms: MINUTE }),
      store.save("plain", 0, row(0), { owner: "w3", ms: MINUTE }),
      // The holder of "a" ends it: the slot is free for the take after it in the same transaction.
      store.save("a", 2, done(2, 1)),
      store.commit("d", [{ kind: "save", step: 1, row: row(1, undefined, 1), lease: { owner: "w4", ms: MINUTE } }]),
      store.save("e", 1, row(1, undefined, 1), { owner: "w5", ms: MINUTE }),
      // "b" goes to sleep, freeing its slot; "d"'s holder renews its live lease, which takes nothing anew.
      store.save("b", 2, row(2, undefined, 1), { owner: ASLEEP, ms: MINUTE }),
      store.renew("d", 1, { owner: "w4", ms: MINUTE }),
      store.save("e", 1, row(1, undefined, 1), { owner: "w5", ms: MINUTE }),
    ]);
    expect(walCommits(store.path) - before).toBe(1);
    expect(results.map((r) => (r.status === "fulfilled" ? "ok" : r.reason.constructor.name))).toEqual([
      "ok",
      "QueueFull",
      "ok",
      "ok",
      "ok",
      "QueueFull",
      "ok",
      "ok",
      "ok",
    ]);
    expect(await store.leaseOf("c")).toBeUndefined();
    expect((await store.latest("c")).step).toBe(0);
    expect(await store.leaseOf("e")).toMatchObject({ owner: "w5" });
    expect(await store.leaseOf("plain")).toMatchObject({ owner: "w3" });
    expect(await listed(store, "q")).toEqual(["c"]);
  });
});
