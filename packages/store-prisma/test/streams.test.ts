import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CheckpointRow,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  MAX_STREAM_BATCH,
  type StreamBatch,
} from "@durable/core/store";
import { connect } from "../src/connection.js";
import { PrismaCheckpointStore } from "../src/index.js";
import { migrate, shippedMigrations } from "../src/migrate.js";
import { streamQuery } from "../src/streams.js";
import { tablesOf } from "../src/tables.js";
import { everyDatabase } from "./databases.js";

// The streams capability beyond the kit's `stream` group: how the Prisma store keeps a run's stream.

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

/** Long enough to stay live through any test on a busy machine. */
const LIVE = 60_000;

const row = (step: number, status: CheckpointRow["status"] = "running", flow = "f"): CheckpointRow => ({
  status,
  segment: 0,
  name: flow,
  kind: "flow",
  sealed: `d1.-.${step}`,
});
const batch = (offset: number, count = 1, segment = 0): StreamBatch => ({
  segment,
  offset,
  count,
  sealed: `s${offset}`,
});

/** Runs `sql` on the database of `url` through its driver, past the store; the rows it read. */
async function onDatabase(url: string, sql: string, ...params: unknown[]): Promise<Array<Record<string, unknown>>> {
  if (url.startsWith("file:")) {
    const db = new Database(url.slice("file:".length), { timeout: 5000 });
    try {
      const statement = db.prepare(sql.replace(/\$\d+/g, "?"));
      if (statement.reader) return statement.all(...params) as Array<Record<string, unknown>>;
      statement.run(...params);
      return [];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe.each(targets)("PrismaCheckpointStore streams on %s", (name, url) => {
  const tablePrefix = `s${randomUUID().slice(0, 8)}_`;
  let target: string;
  let store: PrismaCheckpointStore;
  beforeAll(async () => {
    target = url();
    store = new PrismaCheckpointStore(target, { tablePrefix });
    await store.migrate();
  }, 60_000);
  afterAll(() => store.close());
  const id = () => `run-${randomUUID()}`;
  const offsets = async (runId: string, from?: number) => (await store.stream(runId, from)).map((b) => b.offset);

  it("reads a page as a range of the primary key (run_id, offset), with no sort", async () => {
    const t = store.tables.streams;
    const query = streamQuery(tablesOf(store.provider, { tablePrefix }));
    if (name === "SQLite") {
      const plan = (await onDatabase(target, `EXPLAIN QUERY PLAN ${query}`, "r", "r", 3_000)).map(
        (step) => step["detail"],
      );
      // A rowid table, as Prisma makes them: its primary key is the index SQLite made for it.
      const table = t.replaceAll('"', "");
      const key = `sqlite_autoindex_${table}_1`;
      expect(plan).toEqual([
        `SEARCH ${table} USING INDEX ${key} (run_id=? AND offset>?)`,
        "SCALAR SUBQUERY 1",
        `SEARCH ${table} USING COVERING INDEX ${key} (run_id=? AND offset<?)`,
      ]);
      return;
    }
    // With sequential scans priced out, as on a table of many runs: the index serves the range and the order.
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${query}`, ["r", "r", 3_000]);
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      const key = `${t.replace(/^.*\."|"$/g, "")}_pkey`;
      expect(plan).toMatch(new RegExp(`Index (Only )?Scan using ${key} on`));
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    } finally {
      await client.end();
    }
  });

  it("gives the batch holding the part read from, even one of the most parts a batch holds, and none past the end", async () => {
    const runId = id();
    await store.save(runId, 0, row(0));
    await store.appendStream(runId, batch(0, MAX_STREAM_BATCH));
    await store.appendStream(runId, batch(MAX_STREAM_BATCH, MAX_STREAM_BATCH));
    await store.appendStream(runId, batch(2 * MAX_STREAM_BATCH));
    expect(await offsets(runId, MAX_STREAM_BATCH - 1)).toEqual([0, 1_000, 2_000]);
    expect(await offsets(runId, MAX_STREAM_BATCH)).toEqual([1_000, 2_000]);
    expect(await offsets(runId, 2 * MAX_STREAM_BATCH - 1)).toEqual([1_000, 2_000]);
    expect(await offsets(runId, 2 * MAX_STREAM_BATCH + 1)).toEqual([]);
    // Far past any stream, beyond a 32-bit offset: nothing, not a database error.
    expect(await offsets(runId, 2 ** 40)).toEqual([]);
    await expect(store.appendStream(runId, batch(2 ** 40))).rejects.toThrow(CheckpointConflict);
  });

  it("read back with columns no append writes is CheckpointStoreCorrupt, to a reader, and to the next append unless only the sealed text is", async () => {
    const runId = id();
    const t = store.tables.streams;
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    await store.appendStream(runId, batch(0, 2));
    const values: Array<[string, unknown]> = [
      ["count", 0],
      ["segment", -1],
      ["offset", -2],
    ];
    // SQLite keeps a value of another type than its column's; PostgreSQL's typed columns refuse it.
    if (name === "SQLite") values.push(["count", "two"], ["sealed", Buffer.from([7])]);
    for (const [column, value] of values) {
      await onDatabase(target, `UPDATE ${t} SET "${column}" = $1 WHERE "run_id" = $2`, value, runId);
      await expect(store.stream(runId), `${column} ${String(value)}`).rejects.toThrow(CheckpointStoreCorrupt);
      // An append reads where the stream ends, not the sealed text.
      if (column !== "sealed")
        await expect(store.appendStream(runId, batch(2)), `${column} ${String(value)}`).rejects.toThrow(
          CheckpointStoreCorrupt,
        );
      await onDatabase(
        target,
        `UPDATE ${t} SET "offset" = 0, "count" = 2, "segment" = 0, "sealed" = 's0' WHERE "run_id" = $1`,
        runId,
      );
    }
    await store.appendStream(runId, batch(2));
    expect(await offsets(runId)).toEqual([0, 2]);
  });

  it("is dropped alone, and deleted with the run: no batch row is left", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    await store.recordCall(runId, 0, 0, "d1.-.c");
    await store.appendStream(runId, batch(0, 3));
    await store.dropStream(runId);
    expect(await store.stream(runId)).toEqual([]);
    expect((await store.latest(runId)).step).toBe(0);
    expect(await store.calls(runId)).toHaveLength(1);
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-a" });
    await store.appendStream(runId, batch(0));
    await store.delete(runId);
    const left = await onDatabase(target, `SELECT 1 FROM ${store.tables.streams} WHERE "run_id" = $1`, runId);
    expect(left).toEqual([]);
  });
});

describe.each(targets)("a database of the store before streams, on %s", (_name, url) => {
  it("migrates in place: its runs stay, each with an empty stream that takes batches while it goes on", async () => {
    const target = url();
    const tablePrefix = `v${randomUUID().slice(0, 8)}_`;
    const old = connect(target, { tablePrefix });
    const client = await old.client();
    const before = shippedMigrations(old.provider).filter((m) => m.name < "0007");
    expect(await migrate(old, client, before)).toHaveLength(6);
    for (const [runId, status] of [
      ["old-running", "running"],
      ["old-done", "done"],
    ] as const) {
      await client.$executeRawUnsafe(
        old.sql(
          `INSERT INTO ${old.tables.runs} ("run_id", "flow", "kind", "step", "status", "segment", "segment_calls") VALUES (?, 'old', 'flow', 0, ?, 0, 0)`,
        ),
        runId,
        status,
      );
      await client.$executeRawUnsafe(
        old.sql(
          `INSERT INTO ${old.tables.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed") VALUES (?, 0, ?, 0, 'old', 'flow', 'd1.-.{}')`,
        ),
        runId,
        status,
      );
    }
    await old.release();

    const store = new PrismaCheckpointStore(target, { tablePrefix });
    expect(await store.migrate()).toEqual(["0007_streams"]);
    expect(await store.migrate()).toEqual([]);
    expect((await store.latest("old-running")).status).toBe("running");
    expect(await store.stream("old-running")).toEqual([]);
    await store.appendStream("old-running", batch(0, 2));
    expect(await store.stream("old-running")).toEqual([
      { runId: "old-running", segment: 0, offset: 0, count: 2, sealed: "s0" },
    ]);
    await expect(store.appendStream("old-done", batch(0))).rejects.toThrow(CheckpointConflict);
    await store.save("old-running", 1, row(1, "running", "old"), { owner: "worker-a", ms: LIVE });
    expect((await store.latest("old-running")).step).toBe(1);
    await store.close();
  });
});
