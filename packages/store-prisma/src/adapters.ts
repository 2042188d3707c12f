import { Socket } from "node:net";
import { InvalidInput } from "@durable/core/store";
import type { Client, Sql, TransactionOptions } from "./client.js";
import type { Provider } from "./tables.js";

/**
 * The driver adapter each provider needs, an optional peer: a user installs
 * the one of their database (it brings its driver), never both.
 */
const ADAPTERS: Readonly<Record<Provider, string>> = {
  postgresql: "@prisma/adapter-pg",
  sqlite: "@prisma/adapter-better-sqlite3",
};

/** Imports an optional peer; a missing one is a one-line `InvalidInput` that names what to install. */
async function peer<T>(provider: Provider, load: () => Promise<T>): Promise<T> {
  const name = ADAPTERS[provider];
  try {
    return await load();
  } catch (error) {
    // Only the peer itself: a package missing further down is another failure.
    const missing =
      (error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" &&
      String((error as Error).message).includes(`'${name}'`);
    if (!missing) throw error;
    throw new InvalidInput(
      `A ${provider === "postgresql" ? "postgresql://" : "file:"} URL needs ${name}, which is not installed: npm install ${name}`,
      { cause: error },
    );
  }
}

/** How the store's own PostgreSQL pool is set up. */
export interface PostgresPool {
  readonly poolSize: number;
  /** How long a new connection, or a wait for a free one, may take. */
  readonly timeoutMs: number;
  /** Every socket the pool opens is added here, so a store can destroy the ones that went silent. */
  readonly sockets: Set<Socket>;
}

/**
 * A PostgreSQL client of the store's own, through `@prisma/adapter-pg` with
 * a pool of `poolSize`. Its interactive transactions are Prisma's; a statement
 * on its own (the store's hot path: one per batch) goes straight to the pg
 * pool under the adapter, the same connections, which costs about a third
 * less CPU per statement than Prisma's query layer (the README's figures).
 */
export async function openPostgres(url: string, pool: PostgresPool): Promise<Client> {
  const { PrismaPg } = await peer("postgresql", () => import("@prisma/adapter-pg"));
  const { PrismaClient } = await import("./generated/postgresql/client.js");
  const stream = () => {
    const socket = new Socket();
    pool.sockets.add(socket);
    socket.once("close", () => pool.sockets.delete(socket));
    return socket;
  };
  const adapter = new PrismaPg({
    connectionString: url,
    max: pool.poolSize,
    connectionTimeoutMillis: pool.timeoutMs,
    stream,
  });
  // The adapter's driver, made once: Prisma is handed this one, so the pool is shared.
  const driver = await adapter.connect();
  const pg = driver.underlyingDriver();
  // A pg client that the server cuts off while it is checked out between queries (a restart, an
  // administrator's command) emits 'error'; with no listener, that ends the process. Every client
  // gets one: its next query fails instead, as StoreUnavailable.
  pg.on("connect", (client) => client.on("error", () => undefined));
  adapter.connect = async () => driver;
  const prisma = new PrismaClient({ adapter }) as unknown as Client;
  return {
    $queryRawUnsafe: async <T>(query: string, ...values: unknown[]) => (await pg.query(query, values)).rows as T,
    $executeRawUnsafe: async (query: string, ...values: unknown[]) => (await pg.query(query, values)).rowCount ?? 0,
    // Transactions go through Prisma, interactive or batched (the store batches on PostgreSQL in one statement).
    $transaction: ((
      arg: ((tx: Sql) => Promise<unknown>) | readonly Promise<unknown>[],
      options?: TransactionOptions,
    ) =>
      typeof arg === "function"
        ? prisma.$transaction(arg, options)
        : prisma.$transaction(arg, options)) as Client["$transaction"],
    // Prisma ends the pool when it used it; when only pg did (no transaction yet), the pool is ended here.
    $disconnect: async () => {
      await prisma.$disconnect();
      if (!pg.ended) await pg.end();
    },
  };
}

/** A SQLite client of the store's own on one file, through `@prisma/adapter-better-sqlite3`. */
export async function openSqlite(path: string, busyTimeoutMs: number): Promise<Client> {
  const { PrismaBetterSqlite3 } = await peer("sqlite", () => import("@prisma/adapter-better-sqlite3"));
  const { PrismaClient } = await import("./generated/sqlite/client.js");
  return new PrismaClient({
    adapter: new PrismaBetterSqlite3({ url: path, timeout: busyTimeoutMs }),
  }) as unknown as Client;
}
