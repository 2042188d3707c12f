import type { Socket } from "node:net";
import { resolve } from "node:path";
import { InvalidInput } from "@durable/core/store";
import { checkOptions, type OptionTable } from "@durable/core/runner";
import { openPostgres, openSqlite } from "./adapters.js";
import type { Client } from "./client.js";
import { tablesOf, type Provider, type Tables } from "./tables.js";

/** Options of `new PrismaCheckpointStore(url, options)`. */
export interface PrismaStoreOptions {
  /** PostgreSQL only: the schema of the tables, one per tenant; default `public`. */
  readonly schema?: string;
  /** Prefix of the tables, one per tenant; default `durable_`. */
  readonly tablePrefix?: string;
  /** PostgreSQL only: connections in the pool; default 10. */
  readonly poolSize?: number;
  /** SQLite only: how long to wait on another process's lock; default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /**
   * SQLite only. `"full"` (default): every save and record is on disk when it
   * resolves, even if the machine loses power. `"normal"`: faster; in WAL mode
   * the last commits can be lost on a power cut or OS crash (never on a process
   * crash), and with them the proof that a call started.
   */
  readonly synchronous?: "full" | "normal";
  /**
   * PostgreSQL only: how long an operation may wait for the database before
   * `StoreUnavailable` (its connections are then dropped); a whole number of
   * ms > 0, default 5000.
   */
  readonly operationTimeoutMs?: number;
  /**
   * PostgreSQL only: how long `migrate()` may wait for the database before
   * `StoreUnavailable`; a migration waits its turn on other processes' and
   * does DDL, so it gets longer than an operation. Default 60000.
   */
  readonly migrateTimeoutMs?: number;
}

/** Options of `PrismaCheckpointStore.fromClient(prisma, options)`. */
export interface PrismaClientStoreOptions {
  /** The `provider` of the client's datasource. */
  readonly provider: Provider;
  /** PostgreSQL only: the schema of the tables; default `public`. */
  readonly schema?: string;
  /** Prefix of the tables; default `durable_`. */
  readonly tablePrefix?: string;
  /** PostgreSQL only: how long an operation may wait for the database before `StoreUnavailable`; default 5000 ms. */
  readonly operationTimeoutMs?: number;
  /** PostgreSQL only: how long `migrate()` may wait for the database; default 60000 ms. */
  readonly migrateTimeoutMs?: number;
}

const PRISMA_STORE_OPTIONS: OptionTable<PrismaStoreOptions> = {
  schema: true,
  tablePrefix: true,
  poolSize: true,
  busyTimeoutMs: true,
  synchronous: true,
  operationTimeoutMs: true,
  migrateTimeoutMs: true,
};

const PRISMA_CLIENT_STORE_OPTIONS: OptionTable<PrismaClientStoreOptions> = {
  provider: true,
  schema: true,
  tablePrefix: true,
  operationTimeoutMs: true,
  migrateTimeoutMs: true,
};

/** The database of a store: the names of its tables and a client, opened on first use. */
export interface Connection extends Tables {
  /** The client is the user's (`fromClient`): the store neither sets it up nor disconnects it. */
  readonly borrowed: boolean;
  /** The client, opened (and on SQLite put in WAL mode) the first time it is asked for. */
  client(): Promise<Client>;
  /** Gives the connection back: disconnects what the store opened once no store of this process uses it. */
  release(): Promise<void>;
  /** PostgreSQL: the deadline of every operation, in ms; SQLite: undefined (its driver blocks; `busyTimeoutMs` bounds it). */
  readonly timeoutMs: number | undefined;
  /** PostgreSQL: the deadline of `migrate()`, in ms; SQLite: undefined. */
  readonly migrateTimeoutMs: number | undefined;
  /** Drops the store's own client and destroys its sockets after an operation timed out; the next operation opens a new one. */
  discard(): void;
}

/**
 * A client opened on first use (again after a failed open); `close`
 * disconnects it only if it was opened; `discard` forgets it, so the next use
 * opens a new one, and disconnects it in the background.
 */
function lazy(open: () => Promise<Client>): {
  get: () => Promise<Client>;
  close: () => Promise<void>;
  discard: () => void;
} {
  let opened: Promise<Client> | undefined;
  return {
    get: () =>
      (opened ??= open().catch((error: unknown) => {
        opened = undefined;
        throw error;
      })),
    close: async () => {
      const client = await opened?.catch(() => undefined);
      await client?.$disconnect();
    },
    discard: () => {
      const dropped = opened;
      opened = undefined;
      void dropped?.then((client) => client.$disconnect()).catch(() => {});
    },
  };
}

/** A deadline option, checked: a whole number of ms > 0 (`InvalidInput` otherwise). */
function msOption(options: Readonly<Record<string, unknown>>, name: string, fallback: number): number {
  const ms = options[name] ?? fallback;
  if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms <= 0)
    throw new InvalidInput(`${name} must be a whole number of ms > 0, not ${String(ms)}.`);
  return ms;
}

/** The deadlines of a PostgreSQL connection: every operation's, and `migrate()`'s. */
function deadlinesOf(options: PrismaStoreOptions | PrismaClientStoreOptions) {
  const given = options as Readonly<Record<string, unknown>>;
  return {
    timeoutMs: msOption(given, "operationTimeoutMs", 5000),
    migrateTimeoutMs: msOption(given, "migrateTimeoutMs", 60_000),
  };
}

/**
 * SQLite clients by file, shared by every store of this process. The driver
 * is synchronous: a second connection of the same process waiting on a lock
 * would block the event loop, and with it the transaction that holds the
 * lock. One connection per file and process queues them instead.
 */
const sqliteClients = new Map<
  string,
  { client: ReturnType<typeof lazy>; users: number; synchronous: "full" | "normal" }
>();

function sharedSqlite(
  path: string,
  timeout: number,
  synchronous: "full" | "normal",
): Pick<Connection, "client" | "release"> {
  let entry = sqliteClients.get(path);
  if (entry === undefined) {
    entry = {
      client: lazy(async () => {
        const client = await openSqlite(path, timeout);
        // WAL, so readers never wait on the writer.
        await client.$queryRawUnsafe("PRAGMA journal_mode = WAL");
        await client.$executeRawUnsafe(`PRAGMA synchronous = ${synchronous === "normal" ? "NORMAL" : "FULL"}`);
        return client;
      }),
      users: 0,
      synchronous,
    };
    sqliteClients.set(path, entry);
  } else if (entry.synchronous !== synchronous) {
    throw new InvalidInput(
      `${path} is open in this process with synchronous "${entry.synchronous}"; every store of a file shares one connection, so give them one setting.`,
    );
  }
  entry.users += 1;
  const used = entry;
  let released = false;
  return {
    client: used.client.get,
    release: async () => {
      if (released) return;
      released = true;
      used.users -= 1;
      if (used.users === 0) {
        sqliteClients.delete(path);
        await used.client.close();
      }
    },
  };
}

/**
 * The connection a URL asks for: `postgresql://…` or `file:…`. Checks the URL
 * and names at once (`InvalidInput`); loads the driver adapter on first use.
 */
export function connect(url: string, options: PrismaStoreOptions): Connection {
  checkOptions("PrismaCheckpointStore", options, PRISMA_STORE_OPTIONS);
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
    if (options.synchronous !== undefined)
      throw new InvalidInput(
        "synchronous is for SQLite; PostgreSQL commits as its server is set up (synchronous_commit).",
      );
    const tables = tablesOf("postgresql", options);
    const { timeoutMs, migrateTimeoutMs } = deadlinesOf(options);
    let sockets = new Set<Socket>();
    const client = lazy(() => {
      sockets = new Set();
      return openPostgres(url, { poolSize: options.poolSize ?? 10, timeoutMs, sockets });
    });
    const discard = () => {
      // Silent connections stay silent: destroyed, the server rolls back what they had not committed.
      for (const socket of sockets) socket.destroy();
      client.discard();
    };
    return {
      ...tables,
      borrowed: false,
      client: client.get,
      release: client.close,
      timeoutMs,
      migrateTimeoutMs,
      discard,
    };
  }
  if (url.startsWith("file:")) {
    const tables = tablesOf("sqlite", options);
    if (options.operationTimeoutMs !== undefined || options.migrateTimeoutMs !== undefined)
      throw new InvalidInput(
        `${options.operationTimeoutMs !== undefined ? "operationTimeoutMs" : "migrateTimeoutMs"} is for PostgreSQL; a SQLite store waits at most busyTimeoutMs for a lock.`,
      );
    const synchronous = options.synchronous ?? "full";
    if (synchronous !== "full" && synchronous !== "normal")
      throw new InvalidInput(`synchronous must be "full" or "normal", not ${JSON.stringify(synchronous)}.`);
    return {
      ...tables,
      borrowed: false,
      ...sharedSqlite(resolve(url.slice("file:".length)), options.busyTimeoutMs ?? 5000, synchronous),
      timeoutMs: undefined,
      migrateTimeoutMs: undefined,
      discard: () => {},
    };
  }
  throw new InvalidInput(
    `PrismaCheckpointStore takes a postgresql://… or file:… URL, not ${JSON.stringify(url.replace(/\/\/[^@]*@/, "//…@"))}.`,
  );
}

/** A connection over a client the user owns: the store neither sets it up nor disconnects it. */
export function borrow(client: Client, options: PrismaClientStoreOptions): Connection {
  checkOptions("PrismaCheckpointStore.fromClient", options, PRISMA_CLIENT_STORE_OPTIONS);
  if (options.provider !== "postgresql" && options.provider !== "sqlite") {
    throw new InvalidInput(
      `fromClient needs provider "postgresql" or "sqlite", not ${JSON.stringify(options.provider)}.`,
    );
  }
  const tables = tablesOf(options.provider, options);
  const deadlines = options.provider === "postgresql" ? deadlinesOf(options) : undefined;
  return {
    ...tables,
    borrowed: true,
    client: () => Promise.resolve(client),
    release: () => Promise.resolve(),
    timeoutMs: deadlines?.timeoutMs,
    migrateTimeoutMs: deadlines?.migrateTimeoutMs,
    discard: () => {},
  };
}
