import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import { InvalidInput } from "@durable/core";
import { PrismaClient as PostgresClient } from "./generated/postgresql/client.js";
import { PrismaClient as SqliteClient } from "./generated/sqlite/client.js";

/** What the store runs SQL through: a Prisma client or one of its interactive transactions. */
export interface Sql {
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

/** A Prisma client with interactive transactions. */
export interface Client extends Sql {
  $transaction<T>(fn: (tx: Sql) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T>;
  $disconnect(): Promise<void>;
}

/** Options of `PrismaCheckpointStore`. */
export interface PrismaStoreOptions {
  /** PostgreSQL only: the schema of the tables, one per tenant; default `public`. */
  readonly schema?: string;
  /** Prefix of the tables, one per tenant; default `durable_`. */
  readonly tablePrefix?: string;
  /** PostgreSQL only: connections in the pool; default 10. */
  readonly poolSize?: number;
  /** SQLite only: how long to wait on another process's lock; default 5000 ms. */
  readonly busyTimeoutMs?: number;
}

/** The database behind a URL: its dialect, a client, and the names of its tables. */
export interface Connection {
  readonly provider: "postgresql" | "sqlite";
  readonly client: Client;
  readonly tables: { readonly runs: string; readonly checkpoints: string; readonly calls: string; readonly migrations: string };
  readonly schema: string;
  readonly prefix: string;
  /** The SQL with `?` placeholders, as the dialect numbers them. */
  sql(query: string): string;
  /** A 32-bit key for PostgreSQL's advisory lock over this schema and prefix. */
  readonly lockKey: number;
  /** Gives the connection back: disconnects when no store of this process uses it any more. */
  release(): Promise<void>;
}

/**
 * SQLite connections by file, shared by every store of this process. The
 * driver is synchronous: a second connection of the same process waiting on a
 * lock would block the event loop, and with it the transaction that holds the
 * lock. One connection per file and process queues them instead.
 */
const sqliteClients = new Map<string, { client: Client; users: number }>();

function sharedSqlite(path: string, timeout: number): { client: Client; release: () => Promise<void> } {
  let entry = sqliteClients.get(path);
  if (entry === undefined) {
    const adapter = new PrismaBetterSqlite3({ url: path, timeout });
    entry = { client: new SqliteClient({ adapter }) as unknown as Client, users: 0 };
    sqliteClients.set(path, entry);
  }
  entry.users += 1;
  const used = entry;
  let released = false;
  return {
    client: used.client,
    release: async () => {
      if (released) return;
      released = true;
      used.users -= 1;
      if (used.users === 0) {
        sqliteClients.delete(path);
        await used.client.$disconnect();
      }
    },
  };
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/** Opens a Prisma client with the driver adapter the URL asks for: `postgresql://…` or `file:…`. */
export function connect(url: string, options: PrismaStoreOptions): Connection {
  const prefix = options.tablePrefix ?? "durable_";
  if (!NAME.test(prefix)) throw new InvalidInput(`tablePrefix ${JSON.stringify(prefix)} must be letters, digits and _ (not first a digit).`);
  const table = (schema: string | undefined, name: string) => (schema === undefined ? `"${prefix}${name}"` : `"${schema}"."${prefix}${name}"`);
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
    const schema = options.schema ?? "public";
    if (!NAME.test(schema)) throw new InvalidInput(`schema ${JSON.stringify(schema)} must be letters, digits and _ (not first a digit).`);
    const adapter = new PrismaPg({ connectionString: url, max: options.poolSize ?? 10 });
    const client = new PostgresClient({ adapter }) as unknown as Client;
    return {
      provider: "postgresql",
      client,
      release: () => client.$disconnect(),
      tables: { runs: table(schema, "runs"), checkpoints: table(schema, "checkpoints"), calls: table(schema, "calls"), migrations: table(schema, "migrations") },
      schema,
      prefix,
      sql: (query) => {
        let n = 0;
        return query.replace(/\?/g, () => `$${++n}`);
      },
      lockKey: createHash("sha1").update(`${schema}.${prefix}`).digest().readInt32BE(0),
    };
  }
  if (url.startsWith("file:")) {
    if (options.schema !== undefined) throw new InvalidInput("schema is for PostgreSQL; give SQLite tenants a tablePrefix or a file each.");
    const { client, release } = sharedSqlite(resolve(url.slice("file:".length)), options.busyTimeoutMs ?? 5000);
    return {
      provider: "sqlite",
      client,
      release,
      tables: { runs: table(undefined, "runs"), checkpoints: table(undefined, "checkpoints"), calls: table(undefined, "calls"), migrations: table(undefined, "migrations") },
      schema: "main",
      prefix,
      sql: (query) => query,
      lockKey: 0,
    };
  }
  throw new InvalidInput(`PrismaCheckpointStore takes a postgresql://… or file:… URL, not ${JSON.stringify(url.replace(/\/\/[^@]*@/, "//…@"))}.`);
}
