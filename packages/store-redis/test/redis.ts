import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { anchorInFiles, type ConformanceInitializer, type RawAccess } from "@durable/conformance";
import type { CheckpointRow } from "@durable/core/store";
import { REDIS_URL, dropKeys, redisAdmin, redisAnswers } from "@durable/test-utils/redis";
import { RedisCheckpointStore, type RedisStoreOptions } from "../src/index.js";

export { REDIS_URL, redisAnswers };

export const client = () => createClient({ url: REDIS_URL });

/** A checkpoint row as the store keeps it, sealed unsigned: the store never opens it. */
export const row = (over: Partial<CheckpointRow> = {}): CheckpointRow => ({
  status: "running",
  segment: 0,
  flow: "f",
  kind: "flow",
  sealed: "d1.-.{}",
  ...over,
});

/** A store on a random prefix, so tests never see each other's keys. */
export function newStore(options: RedisStoreOptions = {}): RedisCheckpointStore {
  return new RedisCheckpointStore(client, { prefix: `test:${randomUUID()}`, ...options });
}

/** Removes every key of a store's prefix (test cleanup only: it scans). */
export async function dropPrefix(store: RedisCheckpointStore): Promise<void> {
  await dropKeys(RedisCheckpointStore.keyPattern(store.prefix));
}

type Admin = Awaited<ReturnType<typeof redisAdmin>>;

/** Reads and writes a store's keys through a connection of its own. */
function raw(store: RedisCheckpointStore): RawAccess {
  const on = async <T>(fn: (c: Admin) => Promise<T>): Promise<T> => {
    const c = await redisAdmin();
    try {
      return await fn(c);
    } finally {
      await c.close();
    }
  };
  const row = async (runId: string, step: number) => {
    const json = await on((c) => c.hGet(store.keysOf(runId).cps, String(step)));
    if (json === null || json === undefined) throw new Error(`no step ${step} of ${runId}`);
    return JSON.parse(String(json)) as unknown[];
  };
  return {
    async readCheckpoint(runId, step) {
      return String((await row(runId, step))[4]);
    },
    async writeCheckpoint(runId, step, sealed) {
      const r = await row(runId, step);
      r[4] = sealed;
      await on((c) => c.hSet(store.keysOf(runId).cps, String(step), JSON.stringify(r)));
    },
    async readCall(runId, segment, seq) {
      const sealed = await on((c) => c.hGet(store.keysOf(runId).calls, `${segment}:${seq}`));
      if (sealed === null || sealed === undefined) throw new Error("no call");
      return String(sealed);
    },
    async writeCall(runId, segment, seq, sealed) {
      await on((c) => c.hSet(store.keysOf(runId).calls, `${segment}:${seq}`, sealed));
    },
    async deleteCall(runId, segment, seq) {
      await on((c) => c.hDel(store.keysOf(runId).calls, `${segment}:${seq}`));
    },
  };
}

const redis: ConformanceInitializer<RedisCheckpointStore> = {
  name: "redis",
  createStore: () => newStore(),
  async destroyStore(store) {
    await dropPrefix(store);
    await store.close();
  },
  capabilities: {
    multiProcess: { opener: new URL("./open-store.mjs", import.meta.url).href, handle: (store) => store.prefix },
    connect: async (store) => new RedisCheckpointStore(client, { prefix: store.prefix, ttlSeconds: store.ttlSeconds }),
    // The kit's anchors: each in a SQLite file, a second place beside Redis.
    anchor: anchorInFiles(new URL("./open-anchor.mjs", import.meta.url).href),
    plainHead: {
      async endByHand(store, runId) {
        const c = await redisAdmin();
        await c.hSet(store.keysOf(runId).meta, "status", "done");
        await c.close();
      },
    },
  },
  raw,
};

export default redis;

/** The same store with a 1 s TTL, for the ttl group (the other groups outlast any short TTL). */
export const redisWithTtl: ConformanceInitializer<RedisCheckpointStore> = {
  ...redis,
  name: "redis, ttlSeconds 1",
  createStore: () => newStore({ ttlSeconds: 1 }),
  capabilities: { ...redis.capabilities, ttl: { ttlSeconds: 1 } },
};
