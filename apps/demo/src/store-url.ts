import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointStore } from "@durable/core";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { RedisCheckpointStore } from "@durable/store-redis";
import { createClient } from "redis";

/** The default store: a SQLite file in the system's temp folder. */
export const DEFAULT_STORE = `sqlite:${join(tmpdir(), "durable-demo", "runs.db")}`;

/** Opens the store a `--store` URL names: `sqlite:<path>` or `redis://…` (prefix `durable-demo`). */
export function openStore(url: string): CheckpointStore {
  if (url.startsWith("sqlite:")) return new SQLiteCheckpointStore(url.slice("sqlite:".length));
  if (url.startsWith("redis://") || url.startsWith("rediss://")) {
    return new RedisCheckpointStore(() => createClient({ url }), { prefix: "durable-demo", ttlSeconds: 24 * 3600 });
  }
  throw new Error(`--store ${url}: use sqlite:<path> or redis://host:port.`);
}
