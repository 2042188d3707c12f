import type { CheckpointStore } from "@durable/core";
import { CommandLineError } from "@durable-apps/shared/command-line-error";

export const KEY = process.env["DURABLE_KEY"] ?? "soak-key-0123456789abcdef-0123456789";

/** Which server a soak target names, or a one-line `CommandLineError`: the soak runs on Redis and PostgreSQL only. */
export function soakStoreKind(url: string): "redis" | "postgresql" {
  if (url.startsWith("redis://") || url.startsWith("rediss://")) return "redis";
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) return "postgresql";
  throw new CommandLineError(`--store ${url}: the soak runs on redis://host:port or postgresql://user@host/db.`);
}

/**
 * The store a soak target names: `redis://…` with a key prefix, or
 * `postgresql://…` with a table prefix. Only that store's package is loaded:
 * workers restart after every kill, so their start-up time counts.
 */
export async function openSoakStore(url: string, prefix: string): Promise<CheckpointStore> {
  if (soakStoreKind(url) === "redis") {
    const [{ RedisCheckpointStore }, { createClient }] = await Promise.all([
      import("@durable/store-redis"),
      import("redis"),
    ]);
    return new RedisCheckpointStore(() => createClient({ url }), { prefix });
  }
  const { PrismaCheckpointStore } = await import("@durable/store-prisma");
  return new PrismaCheckpointStore(url, { tablePrefix: prefix });
}
