import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { anchorInFiles, type ConformanceInitializer, type RawAccess, type RowColumn } from "@durable/conformance";
import type { CheckpointRow } from "@durable/core/store";
import { REDIS_URL, dropKeys, redisAdmin, redisAnswers } from "@durable/test-utils/redis";
import { RedisCheckpointStore, type RedisLike, type RedisStoreOptions } from "../src/index.js";

export { REDIS_URL, redisAnswers };

export const client = () => createClient({ url: REDIS_URL });

/** A checkpoint row as the store keeps it, sealed unsigned: the store never opens it. */
export const row = (over: Partial<CheckpointRow> = {}): CheckpointRow => ({
  status: "running",
  segment: 0,
  name: "f",
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

/** The part of an admin connection (a client or a cluster client) the raw oracle and `endByHand` use. */
export interface Admin {
  hGet(key: string, field: string): Promise<unknown>;
  hSet(key: string, field: string, value: string): Promise<unknown>;
  hDel(key: string, field: string): Promise<unknown>;
  close(): Promise<unknown>;
}

/** Where a test file's stores live: the shared server, or a cluster of the file's own. */
export interface RedisTarget {
  readonly name: string;
  /** The client a store makes: `createClient` or `createCluster`. */
  client(): RedisLike;
  /** A connection of its own, past any store. */
  admin(): Promise<Admin>;
  dropKeys(pattern: string): Promise<void>;
  /** The kit's child processes open a store through this module, from `handle(prefix)`. */
  readonly opener: string;
  handle(prefix: string): string;
}

const sharedServer: RedisTarget = {
  name: "redis",
  client,
  admin: () => redisAdmin(),
  dropKeys: (pattern) => dropKeys(pattern),
  opener: new URL("./open-store.mjs", import.meta.url).href,
  handle: (prefix) => prefix,
};

/** Reads and writes a store's keys through a connection of its own. */
function raw(target: RedisTarget, store: RedisCheckpointStore): RawAccess {
  const on = async <T>(fn: (c: Admin) => Promise<T>): Promise<T> => {
    const c = await target.admin();
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
    async deleteCheckpoint(runId, step) {
      await on((c) => c.hDel(store.keysOf(runId).cps, String(step)));
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
    async setColumn(ref, column, value) {
      const keys = store.keysOf(ref.runId);
      if (ref.kind === "checkpoint") {
        // The cps hash keeps JSON [status, segment, flow, kind, sealed]: any JSON value fits.
        const at = ["status", "segment", "name", "kind", "sealed"].indexOf(column);
        if (at < 0) return false;
        const r = await row(ref.runId, ref.step);
        r[at] = value;
        await on((c) => c.hSet(keys.cps, String(ref.step), JSON.stringify(r)));
        return true;
      }
      if (ref.kind === "call") {
        // A record is the field "<segment>:<seq>" holding the sealed text: a number is renamed into the field.
        const field = `${ref.segment}:${ref.seq}`;
        if (column === "sealed") return false;
        const sealed = await on((c) => c.hGet(keys.calls, field));
        const renamed = column === "segment" ? `${value}:${ref.seq}` : `${ref.segment}:${value}`;
        await on(async (c) => {
          await c.hDel(keys.calls, field);
          await c.hSet(keys.calls, renamed, String(sealed));
        });
        return true;
      }
      // The meta hash keeps text: a number in a text field would read back as text that may be well formed.
      const field = META_FIELDS[column];
      if (field === undefined || (typeof value === "number" && TEXT_FIELDS.has(column))) return false;
      await on((c) => (value === null ? c.hDel(keys.meta, field) : c.hSet(keys.meta, field, String(value))));
      return true;
    },
  };
}

/** The meta hash's field of each head column. */
const META_FIELDS: Partial<Record<RowColumn, string>> = {
  step: "step",
  status: "status",
  segment: "segment",
  name: "flow",
  kind: "kind",
  records: "segcalls",
};
const TEXT_FIELDS: ReadonlySet<RowColumn> = new Set(["status", "name", "kind"]);

/**
 * The whole kit's initializer on a target: random prefixes, a raw oracle,
 * child processes, a plain head; with `ttlSeconds`, stores with that TTL, for
 * the ttl group (the other groups outlast any short TTL).
 */
export function redisInitializer(target: RedisTarget, ttlSeconds = 0): ConformanceInitializer<RedisCheckpointStore> {
  const open = (prefix = `test:${randomUUID()}`) =>
    new RedisCheckpointStore(() => target.client(), { prefix, ttlSeconds });
  return {
    name: ttlSeconds > 0 ? `${target.name}, ttlSeconds ${ttlSeconds}` : target.name,
    createStore: () => open(),
    async destroyStore(store) {
      await target.dropKeys(RedisCheckpointStore.keyPattern(store.prefix));
      await store.close();
    },
    capabilities: {
      multiProcess: { opener: target.opener, handle: (store) => target.handle(store.prefix) },
      connect: async (store) => open(store.prefix),
      // The kit's anchors: each in a SQLite file, a second place beside Redis.
      anchor: anchorInFiles(new URL("./open-anchor.mjs", import.meta.url).href),
      plainHead: {
        async endByHand(store, runId) {
          const c = await target.admin();
          await c.hSet(store.keysOf(runId).meta, "status", "done");
          await c.close();
        },
      },
      ...(ttlSeconds > 0 ? { ttl: { ttlSeconds } } : {}),
    },
    raw: (store) => raw(target, store),
  };
}

const redis = redisInitializer(sharedServer);
export default redis;

/** The shared server's store with a 1 s TTL, for the ttl group. */
export const redisWithTtl = redisInitializer(sharedServer, 1);
