import type { CheckpointStore } from "@durable/core";
import { checkOptions, type OptionTable } from "@durable/core/runner";
import { ConsoleError } from "./console-error.js";

/** How a store URL is opened: the prefix of its tables or keys, when the workers use another than the default. */
export interface StoreUrlOptions {
  /** SQLite and PostgreSQL: the table prefix (default `durable_`); Redis: the key prefix (default `durable`). */
  readonly prefix?: string | undefined;
}

const STORE_URL_OPTIONS: OptionTable<StoreUrlOptions> = { prefix: true };

const SCHEMES = "sqlite:<path>, redis://host:port or postgresql://user@host:port/database";

/**
 * Opens the store a URL names: `sqlite:<path>` (with `@durable/store-sqlite`
 * installed), `redis://…` / `rediss://…`
 * (with `@durable/store-redis` and `redis` installed) or `postgresql://…`
 * (with `@durable/store-prisma` and its Prisma packages installed). Only that
 * store's package is loaded. The console reads what the workers wrote; it
 * migrates nothing but a SQLite file, which its store brings up to date on open.
 */
export async function openStoreUrl(url: string, options: StoreUrlOptions = {}): Promise<CheckpointStore> {
  checkOptions("openStoreUrl", options, STORE_URL_OPTIONS);
  const prefix = options.prefix;
  if (url.startsWith("sqlite:")) {
    const { SQLiteCheckpointStore } = await optional("@durable/store-sqlite", () => import("@durable/store-sqlite"));
    return new SQLiteCheckpointStore(url.slice("sqlite:".length), prefix === undefined ? {} : { tablePrefix: prefix });
  }
  if (url.startsWith("redis://") || url.startsWith("rediss://")) {
    const [{ RedisCheckpointStore }, { createClient }] = await Promise.all([
      optional("@durable/store-redis", () => import("@durable/store-redis")),
      optional("redis", () => import("redis")),
    ]);
    const client = () => createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 3000 } });
    return new RedisCheckpointStore(client, { operationTimeoutMs: 5000, ...(prefix === undefined ? {} : { prefix }) });
  }
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
    const { PrismaCheckpointStore } = await optional("@durable/store-prisma", () => import("@durable/store-prisma"));
    return new PrismaCheckpointStore(url, prefix === undefined ? {} : { tablePrefix: prefix });
  }
  throw new ConsoleError(`--store ${JSON.stringify(redacted(url))} names no store the console knows: use ${SCHEMES}.`);
}

/** A store's optional package, or a one-line error that says what to install. */
async function optional<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new ConsoleError(`This store needs ${name}: install it beside @durable/console (npm install ${name}).`);
  }
}

/** The URL without its password, as the page and the errors name the store. */
export function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.protocol === "sqlite:" ? url : parsed.toString();
  } catch {
    return url;
  }
}
