import type { CheckpointStore } from "@durable/core";

export const KEY = process.env["DURABLE_KEY"] ?? "soak-key-0123456789abcdef-0123456789";

/**
 * The store a soak target names: `redis://…` with a key prefix, or
 * `postgresql://…` with a table prefix. Only that store's package is loaded:
 * workers restart after every kill, so their start-up time counts.
 */
export async function openSoakStore(url: string, prefix: string): Promise<CheckpointStore> {
  if (url.startsWith("redis://") || url.startsWith("rediss://")) {
    const [{ RedisCheckpointStore }, { createClient }] = await Promise.all([import("@durable/store-redis"), import("redis")]);
    return new RedisCheckpointStore(() => createClient({ url }), { prefix });
  }
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
    const { PrismaCheckpointStore } = await import("@durable/store-prisma");
    return new PrismaCheckpointStore(url, { tablePrefix: prefix });
  }
  throw new Error(`--store ${url}: the soak runs on redis://host:port or postgresql://user@host/db.`);
}
