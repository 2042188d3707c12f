import { InvalidInput } from "@durable/core";
import type { Client } from "./client.js";
import type { Provider } from "./tables.js";

/**
 * The driver adapter each provider needs, an optional peer: a user installs
 * the one of their database (it brings its driver), never both.
 */
export const ADAPTERS: Readonly<Record<Provider, string>> = {
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
    const missing = (error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes(`'${name}'`);
    if (!missing) throw error;
    throw new InvalidInput(`A ${provider === "postgresql" ? "postgresql://" : "file:"} URL needs ${name}, which is not installed: npm install ${name}`, { cause: error });
  }
}

/** A PostgreSQL client of the store's own, through `@prisma/adapter-pg` with a pool of `poolSize`. */
export async function openPostgres(url: string, poolSize: number): Promise<Client> {
  const { PrismaPg } = await peer("postgresql", () => import("@prisma/adapter-pg"));
  const { PrismaClient } = await import("./generated/postgresql/client.js");
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: poolSize }) }) as unknown as Client;
}

/** A SQLite client of the store's own on one file, through `@prisma/adapter-better-sqlite3`. */
export async function openSqlite(path: string, busyTimeoutMs: number): Promise<Client> {
  const { PrismaBetterSqlite3 } = await peer("sqlite", () => import("@prisma/adapter-better-sqlite3"));
  const { PrismaClient } = await import("./generated/sqlite/client.js");
  return new PrismaClient({ adapter: new PrismaBetterSqlite3({ url: path, timeout: busyTimeoutMs }) }) as unknown as Client;
}
