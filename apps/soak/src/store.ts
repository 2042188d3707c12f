import { type CheckpointStore, StoreUnavailable } from "@durable/core";
import { CommandLineError } from "@durable-apps/shared/command-line-error";

export const KEY = process.env["DURABLE_KEY"] ?? "soak-key-0123456789abcdef-0123456789";

/** Which server a soak target names, or a one-line `CommandLineError`: the soak runs on Redis (one node or a cluster) and PostgreSQL only. */
export function soakStoreKind(url: string): "redis" | "redis-cluster" | "postgresql" {
  if (url.startsWith("redis://") || url.startsWith("rediss://")) return "redis";
  if (url.startsWith("redis-cluster://")) return "redis-cluster";
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) return "postgresql";
  throw new CommandLineError(
    `--store ${url}: the soak runs on redis://host:port, redis-cluster://host:port,host:port… or postgresql://user@host/db.`,
  );
}

/** The root nodes of a `redis-cluster://host:port,host:port…` target. */
export function clusterRootNodes(url: string): Array<{ url: string }> {
  return url
    .slice("redis-cluster://".length)
    .split(",")
    .map((address) => ({ url: `redis://${address}` }));
}

/** The soak target of a cluster's root nodes. */
export function clusterUrl(rootNodes: ReadonlyArray<{ url: string }>): string {
  return `redis-cluster://${rootNodes.map((node) => node.url.slice("redis://".length)).join(",")}`;
}

/**
 * The store a soak target names: `redis://…` or `redis-cluster://…` with a
 * key prefix, or `postgresql://…` with a table prefix. Only that store's package is loaded:
 * workers restart after every kill, so their start-up time counts.
 */
export async function openSoakStore(url: string, prefix: string): Promise<CheckpointStore> {
  const kind = soakStoreKind(url);
  if (kind !== "postgresql") {
    const [{ RedisCheckpointStore }, { createClient, createCluster }] = await Promise.all([
      import("@durable/store-redis"),
      import("redis"),
    ]);
    if (kind === "redis") return new RedisCheckpointStore(() => createClient({ url }), { prefix });
    return new RedisCheckpointStore(() => createCluster({ rootNodes: clusterRootNodes(url) }), { prefix });
  }
  const { PrismaCheckpointStore } = await import("@durable/store-prisma");
  return new PrismaCheckpointStore(url, { tablePrefix: prefix });
}

/** Sends `write` again 250 ms after each `StoreUnavailable` until the store answers: a start sent again starts nothing new (its run id is the same). */
export async function untilStored<T>(write: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
