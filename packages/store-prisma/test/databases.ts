import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import {
  anchorInFiles,
  type ConformanceInitializer,
  type RawAccess,
  type RowColumn,
  type RowRef,
} from "@durable/conformance";
import { afterAll, beforeAll } from "vitest";
import { ownDatabase, postgresAnswers, type OwnDatabase } from "@durable/test-utils/postgres";
import { PrismaCheckpointStore } from "../src/index.js";

export { postgresAnswers } from "@durable/test-utils/postgres";

/**
 * The databases a test file runs on, by name and URL: PostgreSQL when it
 * answers (a database of the file's own, made before its tests and dropped
 * after) and a SQLite file. Registers those hooks: call it at the top level.
 */
export async function everyDatabase(): Promise<Array<[string, () => string]>> {
  const db = testDatabase();
  const hasPostgres = await postgresAnswers();
  beforeAll(async () => hasPostgres && (await db.create()), 60_000);
  afterAll(async () => {
    if (hasPostgres) await db.drop();
    removeSqlite();
  });
  return [...(hasPostgres ? [["PostgreSQL", () => db.url] as [string, () => string]] : []), ["SQLite", sqliteUrl]];
}

/** A database of this test file's own on the shared PostgreSQL server, made in `create` and dropped in `drop`. */
export const testDatabase = (): OwnDatabase => ownDatabase("durable");

// One folder per test file (each file loads this module afresh), removed by that file.
const sqliteDir = join(tmpdir(), "durable-prisma-tests", randomUUID());
export function sqliteUrl(): string {
  mkdirSync(sqliteDir, { recursive: true });
  return `file:${join(sqliteDir, `${randomUUID()}.db`)}`;
}

const prefixOf = new WeakMap<PrismaCheckpointStore, { url: string; prefix: string }>();

async function open(url: string, prefix = `t${randomUUID().slice(0, 8)}_`): Promise<PrismaCheckpointStore> {
  const store = new PrismaCheckpointStore(url, { tablePrefix: prefix });
  prefixOf.set(store, { url, prefix });
  await store.migrate();
  return store;
}

/** Runs SQL on the store's database through the driver itself, past the store. */
async function sqlOn(
  store: PrismaCheckpointStore,
  sql: string,
  params: unknown[],
): Promise<Array<{ sealed: unknown }>> {
  const { url } = prefixOf.get(store)!;
  if (url.startsWith("file:")) {
    const db = new Database(url.slice(5), { timeout: 5000 });
    try {
      const statement = db.prepare(sql.replace(/\$\d+/g, "?"));
      if (statement.reader) return statement.all(...params) as Array<{ sealed: unknown }>;
      statement.run(...params);
      return [];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as Array<{ sealed: unknown }>;
  } finally {
    await client.end();
  }
}

/** Reads and writes rows through the database driver itself, past the store. */
function raw(store: PrismaCheckpointStore): RawAccess {
  const t = store.tables;
  const run = (sql: string, params: unknown[]) => sqlOn(store, sql, params);
  const one = (rows: Array<{ sealed: unknown }>) => {
    if (rows[0] === undefined) throw new Error("no such row");
    return String(rows[0].sealed);
  };
  return {
    readCheckpoint: async (runId, step) =>
      one(await run(`SELECT "sealed" FROM ${t.checkpoints} WHERE "run_id" = $1 AND "step" = $2`, [runId, step])),
    writeCheckpoint: async (runId, step, sealed) =>
      void (await run(`UPDATE ${t.checkpoints} SET "sealed" = $1 WHERE "run_id" = $2 AND "step" = $3`, [
        sealed,
        runId,
        step,
      ])),
    deleteCheckpoint: async (runId, step) =>
      void (await run(`DELETE FROM ${t.checkpoints} WHERE "run_id" = $1 AND "step" = $2`, [runId, step])),
    readCall: async (runId, segment, seq) =>
      one(
        await run(`SELECT "sealed" FROM ${t.calls} WHERE "run_id" = $1 AND "segment" = $2 AND "seq" = $3`, [
          runId,
          segment,
          seq,
        ]),
      ),
    writeCall: async (runId, segment, seq, sealed) =>
      void (await run(`UPDATE ${t.calls} SET "sealed" = $1 WHERE "run_id" = $2 AND "segment" = $3 AND "seq" = $4`, [
        sealed,
        runId,
        segment,
        seq,
      ])),
    deleteCall: async (runId, segment, seq) =>
      void (await run(`DELETE FROM ${t.calls} WHERE "run_id" = $1 AND "segment" = $2 AND "seq" = $3`, [
        runId,
        segment,
        seq,
      ])),
    async setColumn(row, column, value) {
      const name = SQL_COLUMNS[row.kind][column];
      if (name === undefined) return false;
      const [table, where, key] =
        row.kind === "checkpoint"
          ? [t.checkpoints, `"run_id" = $1 AND "step" = $2`, [row.runId, row.step]]
          : row.kind === "call"
            ? [t.calls, `"run_id" = $1 AND "segment" = $2 AND "seq" = $3`, [row.runId, row.segment, row.seq]]
            : [t.runs, `"run_id" = $1`, [row.runId]];
      try {
        await run(`UPDATE ${table} SET "${name}" = $${key.length + 1} WHERE ${where}`, [...key, value]);
      } catch {
        return false; // a typed column refuses the value, or NOT NULL refuses null
      }
      // A typed column may turn the value into another (7 into "7"): then it was not held as given.
      const moved = row.kind === "call" && (column === "segment" || column === "seq");
      const at = moved ? (column === "segment" ? [row.runId, value, row.seq] : [row.runId, row.segment, value]) : key;
      const read = await run(`SELECT "${name}" AS "sealed" FROM ${table} WHERE ${where}`, at);
      return read[0]?.sealed === value;
    },
  };
}

/** The columns of each row the raw oracle sets, by the protocol's names. */
const SQL_COLUMNS: Record<RowRef["kind"], Partial<Record<RowColumn, string>>> = {
  checkpoint: { status: "status", segment: "segment", name: "flow", kind: "kind", sealed: "sealed" },
  call: { segment: "segment", seq: "seq", sealed: "sealed" },
  head: { step: "step", status: "status", segment: "segment", name: "flow", kind: "kind", records: "segment_calls" },
};

/** An initializer on one database URL (made per call for SQLite): a table prefix per store. */
export function initializer(name: string, url: () => string): ConformanceInitializer<PrismaCheckpointStore> {
  return {
    name,
    createStore: () => open(url()),
    capabilities: {
      multiProcess: {
        opener: new URL("./open-store.mjs", import.meta.url).href,
        handle: (store) => {
          const { url: same, prefix } = prefixOf.get(store)!;
          return `${same} ${prefix}`;
        },
      },
      connect: async (store) => {
        const { url: same, prefix } = prefixOf.get(store)!;
        return open(same, prefix);
      },
      // The kit's anchors: each in a SQLite file, a second place beside the database.
      anchor: anchorInFiles(new URL("./open-anchor.mjs", import.meta.url).href),
      plainHead: {
        endByHand: async (store, runId) =>
          void (await sqlOn(store, `UPDATE ${store.tables.runs} SET "status" = 'done' WHERE "run_id" = $1`, [runId])),
      },
    },
    raw,
  };
}

export function removeSqlite(): void {
  rmSync(sqliteDir, { recursive: true, force: true });
}

/**
 * One call of each operation of the streams capability on run `runId`, by
 * name: what `everyOperation` of @durable/test-utils does not call (yet).
 */
export function streamOperations(store: PrismaCheckpointStore, runId = "r"): Record<string, () => Promise<unknown>> {
  return {
    appendStream: () => store.appendStream(runId, { segment: 0, offset: 0, count: 1, sealed: "d1.-.{}" }),
    stream: () => store.stream(runId),
    dropStream: () => store.dropStream(runId),
  };
}
