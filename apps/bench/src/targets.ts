import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { createClient } from "redis";
import type { CheckpointStore } from "@durable/core";
import { MemoryCheckpointStore } from "@durable/store-memory";
import { PrismaCheckpointStore } from "@durable/store-prisma";
import { RedisCheckpointStore } from "@durable/store-redis";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { DATABASE_URL, ownDatabase } from "@durable/test-utils/postgres";
import { dbosPeer } from "./peers/dbos.js";
import { langgraphPeers, type SaverSpec } from "./peers/langgraph.js";
import type { PeerOrReason } from "./peers/peer.js";
import { REDIS_URL, dropKeys, pingFails } from "@durable/test-utils/redis";

/** The same bytes written straight through the store's driver, one write a time: the physical limit. */
export interface RawWriter {
  write(key: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

/** A store to measure: fresh isolated stores, a raw writer on the same server, and cleanup. */
export interface Target {
  readonly name: string;
  /** What the store runs on, for the table. */
  readonly detail: string;
  store(): Promise<CheckpointStore>;
  raw?(): Promise<RawWriter>;
  /** The LangGraph.js saver of the same kind, for the long-run bench. */
  readonly saver?: SaverSpec;
  /** Other libraries on the same kind of store, started fresh; the caller closes them. */
  peers?(): Promise<PeerOrReason[]>;
  /**
   * Starts counting the round trips to the server that anything in this
   * process makes (the store and the peers alike); the function returned
   * stops counting and gives the count.
   */
  countTrips?(): () => number;
  cleanup(): Promise<void>;
}

/** Counts the statements every `pg` client of the process sends (Prisma's pg adapter, the peers' pools): each is a round trip. */
function countPgStatements(): () => number {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = proto.query;
  let sent = 0;
  proto.query = function (this: unknown, ...args: unknown[]) {
    sent++;
    return query.apply(this, args);
  };
  return () => {
    proto.query = query;
    return sent;
  };
}

export function memoryTarget(): Target {
  return {
    name: "memory",
    detail: "in process",
    store: async () => new MemoryCheckpointStore(),
    saver: { kind: "memory" },
    peers: () => langgraphPeers({ kind: "memory" }),
    cleanup: async () => {},
  };
}

export function sqliteTarget(): Target {
  return onSqliteFiles(
    "sqlite",
    "better-sqlite3, WAL, synchronous FULL, a local file",
    async (file) => new SQLiteCheckpointStore(file),
  );
}

/** Prisma's store on a SQLite file, beside the same LangGraph saver as our own SQLite store. */
export function prismaSqliteTarget(): Target {
  return onSqliteFiles(
    "prisma-sqlite",
    "Prisma 7 with the better-sqlite3 driver adapter, WAL, synchronous FULL, a local file",
    async (file) => {
      const store = new PrismaCheckpointStore(`file:${file}`);
      await store.migrate();
      return store;
    },
  );
}

/** A store on a new SQLite file per measure, in a folder of its own, with raw writes and LangGraph's SqliteSaver there too. */
function onSqliteFiles(name: string, detail: string, open: (file: string) => Promise<CheckpointStore>): Target {
  const dir = join(tmpdir(), `durable-bench-${randomUUID()}`);
  mkdirSync(dir, { recursive: true });
  return {
    name,
    detail,
    store: () => open(join(dir, `${randomUUID()}.db`)),
    raw: rawSqlite(dir),
    saver: { kind: "sqlite", dir },
    peers: () => langgraphPeers({ kind: "sqlite", dir }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function redisTarget(): Promise<Target | string> {
  const unreachable = await pingFails(REDIS_URL, 2000);
  if (unreachable !== undefined) return `Redis does not answer at ${REDIS_URL} (${String(unreachable)})`;
  const prefixes: string[] = [];
  return {
    name: "redis",
    detail: `${REDIS_URL}, one Lua script per write`,
    async store() {
      const prefix = `bench-${randomUUID()}`;
      prefixes.push(prefix);
      return new RedisCheckpointStore(() => createClient({ url: REDIS_URL }), { prefix });
    },
    async raw() {
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      const prefix = `bench-raw-${randomUUID()}`;
      prefixes.push(prefix);
      return {
        write: async (key, payload) => void (await client.set(`${prefix}:${key}`, payload)),
        close: async () => void (await client.close()),
      };
    },
    async cleanup() {
      for (const prefix of prefixes) {
        for (const pattern of [RedisCheckpointStore.keyPattern(prefix), `${prefix}:*`]) await dropKeys(pattern);
      }
    },
  };
}

export async function postgresTarget(): Promise<Target | string> {
  const database = ownDatabase("durable_bench");
  try {
    await database.create();
  } catch (error) {
    return `PostgreSQL does not answer at ${DATABASE_URL} (${String(error)})`;
  }
  // DBOS's system database is a database of its own, which DBOS creates at launch.
  const dbos = ownDatabase("durable_bench_dbos");
  let n = 0;
  return {
    name: "postgresql",
    detail: "Prisma 7 with the pg driver adapter, local server",
    async store() {
      const store = new PrismaCheckpointStore(database.url, { tablePrefix: `b${n++}_` });
      await store.migrate();
      return store;
    },
    async raw() {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const table = `raw_${n++}`;
      await client.query(`CREATE TABLE ${table} (k TEXT PRIMARY KEY, payload TEXT NOT NULL)`);
      return {
        write: async (key, payload) =>
          void (await client.query(`INSERT INTO ${table} VALUES ($1, $2)`, [key, payload])),
        close: () => client.end(),
      };
    },
    saver: { kind: "postgresql", url: database.url },
    peers: async () => [...(await langgraphPeers({ kind: "postgresql", url: database.url })), await dbosPeer(dbos.url)],
    countTrips: countPgStatements,
    async cleanup() {
      await dbos.drop();
      await database.drop();
    },
  };
}

/** Raw writes to a SQLite file in `dir`: the stores' pragmas, one IMMEDIATE transaction per write, as they write. */
function rawSqlite(dir: string): () => Promise<RawWriter> {
  return async () => {
    const db = new Database(join(dir, `raw-${randomUUID()}.db`));
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec("CREATE TABLE raw (k TEXT NOT NULL PRIMARY KEY, payload TEXT NOT NULL) WITHOUT ROWID");
    const insert = db.prepare("INSERT INTO raw VALUES (?, ?)");
    const one = db.transaction((key: string, payload: string) => insert.run(key, payload));
    return { write: async (key, payload) => void one.immediate(key, payload), close: async () => void db.close() };
  };
}
