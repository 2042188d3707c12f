import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStore, defineQueue } from "@durable/core";
import { PrismaCheckpointStore } from "@durable/store-prisma";
import { RedisCheckpointStore } from "@durable/store-redis";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { DATABASE_URL, ownDatabase } from "@durable/test-utils/postgres";
import { dropKeys, REDIS_URL } from "@durable/test-utils/redis";
import { createClient } from "redis";

/**
 * The queue of the queued-runs measure: no limit a fleet of 4 reaches (what
 * is measured is what taking queued runs costs, not a limit), priorities
 * and FIFO as every queue has them.
 */
export const QUEUE = defineQueue("bench", { concurrency: 1_000 });

/** Where the runs of one point of the measure are kept. */
export type QueuedPlace =
  | { readonly kind: "sqlite"; readonly file: string }
  | { readonly kind: "redis"; readonly url: string; readonly prefix: string }
  | { readonly kind: "postgresql"; readonly url: string }
  | { readonly kind: "dbos"; readonly url: string };

/** What a worker of the measure is told. */
export type QueuedWorkerConfig = QueuedPlace & {
  /** Runs each worker process drives at once. */
  readonly concurrency: number;
  /** How often an idle worker looks at the queue, in ms (DBOS: its queue's polling interval). */
  readonly pollMs: number;
};

/** One side of the measure: a fresh place for its runs, what its workers are told, and cleanup. */
export interface QueuedTarget {
  readonly name: string;
  readonly detail: string;
  /** A fresh place (file, prefix, database) for one point of the curve. */
  prepare(): Promise<{ readonly where: QueuedPlace; drop(): Promise<void> }>;
}

export function openQueuedStore(where: QueuedPlace): Promise<CheckpointStore> {
  switch (where.kind) {
    case "sqlite":
      return Promise.resolve(new SQLiteCheckpointStore(where.file));
    case "redis":
      return Promise.resolve(
        new RedisCheckpointStore(() => createClient({ url: where.url }), { prefix: where.prefix }),
      );
    case "postgresql":
      return Promise.resolve(new PrismaCheckpointStore(where.url));
    case "dbos":
      throw new Error("the DBOS side has no checkpoint store: its workers and its starter use DBOS itself");
  }
}

export const QUEUED_TARGETS: readonly QueuedTarget[] = [
  {
    name: "sqlite",
    detail: "one file shared by every process, WAL",
    async prepare() {
      const dir = mkdtempSync(join(tmpdir(), "durable-bench-queued-"));
      return {
        where: { kind: "sqlite", file: join(dir, "runs.db") },
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "redis",
    detail: "one redis-server",
    async prepare() {
      const prefix = `queued-${randomUUID().slice(0, 8)}`;
      return {
        where: { kind: "redis", url: REDIS_URL, prefix },
        drop: () => dropKeys(RedisCheckpointStore.keyPattern(prefix), REDIS_URL),
      };
    },
  },
  {
    name: "postgresql",
    detail: "PostgreSQL through the Prisma store",
    async prepare() {
      const own = ownDatabase("durable_bench_queued", DATABASE_URL);
      await own.create();
      const store = new PrismaCheckpointStore(own.url);
      await store.migrate();
      await store.close();
      return { where: { kind: "postgresql", url: own.url }, drop: own.drop };
    },
  },
  {
    name: "DBOS Transact",
    detail: "a DBOS queue on PostgreSQL, the same flow as 3 steps",
    async prepare() {
      const own = ownDatabase("durable_bench_dbos_queued", DATABASE_URL);
      // DBOS creates and migrates its own system database at launch.
      return { where: { kind: "dbos", url: own.url }, drop: own.drop };
    },
  },
];
