import { readFile } from "node:fs/promises";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  type CheckpointStore,
  InvalidInput,
  QueueFull,
  StoreUnavailable,
  WAITING,
} from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { SCRIPTS } from "../src/scripts.js";
import { OwnRedis } from "./own-server.js";
import { row } from "./redis.js";

/** Hex-encodes text, as the store does for flows and run ids in its index members. */
const hex = (text: string) => Buffer.from(text).toString("hex");

describe("RedisCheckpointStore prefix", () => {
  it.each(["", "a*", "a?", "[a]", "{a}", "a}", "a b", "a\n", "é", "x".repeat(65)])(
    "refuses %j with InvalidInput naming the option",
    (prefix) => {
      expect(() => new RedisCheckpointStore(() => createClient(), { prefix })).toThrow(InvalidInput);
      expect(() => new RedisCheckpointStore(() => createClient(), { prefix })).toThrow(/^prefix must be/);
    },
  );

  it.each(["durable", "app:tenant-a", "A.b_c-9:", "x".repeat(64)])(
    "takes %j, and every key of a run starts with it",
    (prefix) => {
      const store = new RedisCheckpointStore(() => createClient(), { prefix });
      for (const key of Object.values(store.keysOf("run {x}:*"))) expect(key.startsWith(`${prefix}:{`)).toBe(true);
    },
  );

  it("gives a key pattern that matches no key of a longer prefix", () => {
    const pattern = RedisCheckpointStore.keyPattern("app");
    const own = Object.values(new RedisCheckpointStore(() => createClient(), { prefix: "app" }).keysOf("r"));
    const other = Object.values(new RedisCheckpointStore(() => createClient(), { prefix: "app:x" }).keysOf("r"));
    const matches = (key: string) => key.startsWith(pattern.slice(0, -1));
    expect(own.every(matches)).toBe(true);
    expect(other.some(matches)).toBe(false);
  });

  it("keeps every key of a run in one hash tag, after the prefix", () => {
    const keys = Object.values(new RedisCheckpointStore(() => createClient(), { prefix: "app:a" }).keysOf("run {x}:*"));
    const tags = keys.map((k) => k.slice(k.indexOf("{") + 1, k.indexOf("}")));
    expect(new Set(tags).size).toBe(1);
  });
});

describe("RedisCheckpointStore scripts", () => {
  // Redis Cluster routes a script by its declared keys: a key a script builds itself may live elsewhere.
  it.each(Object.entries(SCRIPTS))("%s touches only the keys it declares", (_, script) => {
    const calls = [...script.source.matchAll(/redis\.call\('(\w+)'(?:, ([^,)]+))?/g)];
    expect(calls.length).toBeGreaterThan(0);
    for (const [, command, key] of calls)
      if (command !== "TIME") expect(key, `${command} ${key}`).toMatch(/^KEYS\[(\d+|[a-z])\]$/);
  });
});

// A server of this file's own: it sees every key the store writes, whatever its name.
describe("RedisCheckpointStore keys in Redis", () => {
  let server: OwnRedis;
  let admin: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await OwnRedis.start();
    admin = createClient({ url: server.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.close();
    await server?.stop();
  });

  /** Every key on the server, with its type, whether it expires, and its serialized value. */
  async function snapshot(): Promise<Map<string, string>> {
    const all = new Map<string, string>();
    for await (const keys of admin.scanIterator({ MATCH: "*", COUNT: 1000 })) {
      for (const key of keys) {
        const [type, pttl, dump] = await Promise.all([
          admin.type(key),
          admin.pTTL(key),
          admin.sendCommand(["DUMP", key]),
        ]);
        all.set(key, `${type} ${pttl < 0 ? pttl : "expires"} ${JSON.stringify(dump)}`);
      }
    }
    return all;
  }

  async function collectQueued(store: CheckpointStore, queue: string): Promise<string[]> {
    const out: string[] = [];
    for await (const run of store.listQueued?.(queue) ?? []) out.push(run.runId);
    return out;
  }

  async function refusal(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      () => undefined,
      (error: unknown) => error,
    );
  }

  async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
    const out: string[] = [];
    for await (const id of iterable) out.push(id);
    return out.sort();
  }

  it("writes only keys that start with the prefix through save, recordCall, commit, leases, events, streams, queues, listUnfinished, delete and ttl", async () => {
    const stores = [
      new RedisCheckpointStore(() => createClient({ url: server.url }), { prefix: "app:tenant-a" }),
      new RedisCheckpointStore(() => createClient({ url: server.url }), { prefix: "app:tenant-b", ttlSeconds: 1 }),
    ];
    for (const store of stores) {
      for (let i = 0; i < 40; i++) {
        const id = `run ${i} {*}`;
        await store.save(id, 0, row(), { owner: "w", ms: 60_000 });
        await store.recordCall(id, 0, 0, "sealed");
        await store.commit(id, [{ kind: "record", segment: 0, seq: 1, sealed: "sealed" }]);
        await store.renew(id, 0, { owner: "w", ms: 60_000 });
        if (i % 8 === 0) await store.release(id, 0, "w");
        await store.leaseOf(id);
        await store.sendEvent(id, { seq: 0, key: "k", sealed: "sealed" });
        await store.inbox(id);
        await store.appendStream(id, { segment: 0, offset: 0, count: 2, sealed: "sealed" });
        await store.stream(id, 1);
        if (i % 8 === 4) await store.dropStream(id);
        if (i % 4 === 1) await store.save(id, 1, row({ status: "paused" }));
        if (i % 4 === 2) await store.save(id, 1, row({ status: "done" }));
        if (i % 4 === 3) await store.delete(id);
        // A run of a queue {*} (its own hash tag), taken, renewed, released, taken again and ended or deleted.
        const queued = `queued ${i} {*}`;
        const place = { queue: "q {*}", priority: i % 3, key: `k ${i % 2}`, concurrency: 50, perKey: 50 };
        await store.save(queued, 0, row({ name: "qf", queue: { ...place, rate: { limit: 100, windowMs: 1_000 } } }));
        await store.save(queued, 1, row({ name: "qf", segment: 1 }), { owner: "w#1", ms: 60_000 });
        await store.renew(queued, 1, { owner: "w#1", ms: 60_000 });
        await store.release(queued, 1, "w#1");
        await store.save(queued, 2, row({ name: "qf", segment: 2 }), { owner: "w#2", ms: 60_000 });
        if (i % 2 === 0) await store.save(queued, 3, row({ name: "qf", segment: 2, status: "done" }));
        else await store.delete(queued);
      }
      for await (const _ of store.listQueued("q {*}")) expect.unreachable("every queued run ended or was deleted");
      // Runs of the store with a TTL may expire meanwhile on a slow machine: count only the other's.
      const unfinished = await collect(store.listUnfinished("f"));
      if (store.ttlSeconds === 0) expect(unfinished.length).toBe(20);
      const claimable = await collect(store.listUnfinished("f", { claimable: true }));
      if (store.ttlSeconds === 0) expect(claimable.length).toBe(5);
      await store.calls("run 0 {*}");
    }
    await new Promise((r) => setTimeout(r, 1100));
    // Only the done runs expired: a running or paused run never does.
    await stores[1]!.save("late", 0, row());
    expect(await collect(stores[1]!.listUnfinished("f"))).toEqual(
      [...Array.from({ length: 20 }, (_, i) => `run ${Math.floor(i / 2) * 4 + (i % 2)} {*}`), "late"].sort(),
    );
    expect(await stores[1]!.calls("run 2 {*}")).toEqual([]);
    expect(await stores[1]!.stream("run 2 {*}")).toEqual([]);
    expect(await stores[1]!.stream("run 1 {*}")).toHaveLength(1);
    const keys = [...(await snapshot()).keys()];
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(/^app:tenant-[ab]:\{app:tenant-[ab]\.(\d+|q\.[0-9a-f]+)\}:/);
    for (const store of stores) {
      const own = keys.filter((k) => k.startsWith(`${store.prefix}:`));
      const matched: string[] = [];
      for await (const found of admin.scanIterator({
        MATCH: RedisCheckpointStore.keyPattern(store.prefix),
        COUNT: 1000,
      }))
        matched.push(...found);
      // Keys with a TTL may expire between the snapshot and the scan: the scan may then find fewer, never others.
      if (store.ttlSeconds === 0) expect(matched.sort()).toEqual(own.sort());
      else expect(matched.filter((k) => !own.includes(k))).toEqual([]);
      await store.close();
    }
  });

  it("changes nothing in Redis when listing unfinished runs or a queue's runs, even entries of running runs an earlier version let expire", async () => {
    await admin.flushAll();
    const kept = new RedisCheckpointStore(() => createClient({ url: server.url }), { prefix: "list" });
    for (let i = 0; i < 30; i++) await kept.save(`kept ${i}`, 0, row({ status: i % 2 === 0 ? "paused" : "running" }));
    for (let i = 0; i < 30; i++) await kept.save(`gone ${i}`, 0, row());
    // The gone runs then expire as an earlier version let running runs expire; no save follows that could drop
    // their index entries before the listing.
    const gone = Array.from({ length: 30 }, (_, i) => `gone ${i}`);
    await Promise.all(
      gone.map((id) => {
        const keys = kept.keysOf(id);
        return Promise.all([
          ...[keys.meta, keys.cps, keys.calls].map((key) => admin.pExpire(key, 1000)),
          admin.zAdd(keys.expiring, { score: Date.now() + 1000, value: `${hex("f")}:${hex(id)}` }),
        ]);
      }),
    );
    await new Promise((r) => setTimeout(r, 1100));
    expect(await admin.zScore(kept.keysOf("gone 0").unfinished, `${hex("f")}:${hex("gone 0")}`)).toBe(0);
    // The first claimable listing backfills the indexes of a prefix written before leases; later ones only read.
    const running = Array.from({ length: 15 }, (_, i) => `kept ${i * 2 + 1}`).sort();
    expect(await collect(kept.listUnfinished("f", { claimable: true }))).toEqual(running);
    // A queue's runs: claimable, held, asleep (its lease run out), paused.
    const queue = { queue: "q", priority: 0, concurrency: 2 };
    for (let i = 0; i < 6; i++) await kept.save(`queued ${i}`, 0, row({ name: "qf", queue }));
    await kept.save("queued 1", 1, row({ name: "qf", segment: 1 }), { owner: "w#1", ms: 60_000 });
    await kept.save("queued 2", 1, row({ name: "qf", segment: 1 }), { owner: "(asleep)", ms: 1 });
    await kept.save("queued 3", 1, row({ name: "qf", segment: 1, status: "paused" }));
    await new Promise((r) => setTimeout(r, 10));
    const before = await snapshot();
    const queued: string[] = [];
    for await (const run of kept.listQueued("q")) queued.push(run.runId);
    expect(queued).toEqual(["queued 0", "queued 2", "queued 4", "queued 5"]);
    expect(await collect(kept.listUnfinished("f"))).toEqual(Array.from({ length: 30 }, (_, i) => `kept ${i}`).sort());
    expect(await collect(kept.listUnfinished("another flow"))).toEqual([]);
    expect(await collect(kept.listUnfinished("f", { claimable: true }))).toEqual(running);
    expect(await collect(kept.listUnfinished("another flow", { claimable: true }))).toEqual([]);
    expect(await kept.leaseOf("kept 1")).toBeUndefined();
    expect(await snapshot()).toEqual(before);
    await kept.close();
  });

  it("works for a user confined to its prefix by the README's ACL rule, and that user reaches no other prefix", async () => {
    const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
    const rule = readme.split("\n").find((line) => line.startsWith("ACL SETUSER "));
    expect(rule).toBeDefined();
    await admin.sendCommand(rule!.split(" "));
    const url = server.url.replace("redis://", "redis://tenant-a:secret-a@");
    const store = new RedisCheckpointStore(() => createClient({ url }), { prefix: "app:tenant-a", ttlSeconds: 60 });
    await store.save("r", 0, row(), { owner: "w", ms: 60_000 });
    await store.recordCall("r", 0, 0, "sealed");
    // A retried record (read with HGET), a record and a checkpoint in one batch.
    await store.commit("r", [
      { kind: "record", segment: 0, seq: 0, sealed: "sealed" },
      { kind: "record", segment: 0, seq: 1, sealed: "sealed" },
      { kind: "save", step: 1, row: row(), lease: { owner: "w", ms: 60_000 } },
    ]);
    await store.renew("r", 0, { owner: "w", ms: 60_000 });
    expect((await store.leaseOf("r"))?.owner).toBe("w");
    await store.save("r", 2, row({ status: "paused" }));
    await store.save("r", 3, row(), { owner: "w", ms: 60_000 });
    await store.release("r", 0, "w");
    // An event (HEXISTS, LLEN, RPUSH) that releases a wait's lease, a resend, and the inbox read (LRANGE).
    await store.save("r", 4, row(), { owner: WAITING, ms: 60_000, events: 0 });
    expect(await store.sendEvent("r", { seq: 0, key: "k", sealed: "sealed" })).toBe(true);
    expect(await store.sendEvent("r", { seq: 1, key: "k", sealed: "sealed" })).toBe(false);
    expect(await store.leaseOf("r")).toBeUndefined();
    expect(await store.inbox("r")).toHaveLength(1);
    // A stream: appends (HGET, ZADD, HSET), a refused one, a read (ZRANGE), a drop (HDEL, DEL).
    await store.appendStream("r", { segment: 0, offset: 0, count: 2, sealed: "sealed" });
    await store.appendStream("r", { segment: 0, offset: 2, count: 1, sealed: "sealed" });
    await expect(store.appendStream("r", { segment: 0, offset: 2, count: 1, sealed: "sealed" })).rejects.toThrow(
      CheckpointConflict,
    );
    expect(await store.stream("r", 1)).toHaveLength(2);
    await store.dropStream("r");
    expect(await store.stream("r")).toEqual([]);
    expect(await collect(store.listUnfinished("f"))).toEqual(["r"]);
    expect(await collect(store.listUnfinished("f", { claimable: true }))).toEqual(["r"]);
    expect((await store.latest("r")).step).toBe(4);
    expect(await store.calls("r")).toHaveLength(2);
    await store.delete("r");
    // A queue of every limit: a start, a take refused by each, a renewal, the listing, a pause and a delete.
    const queue = {
      queue: "q",
      priority: 0,
      key: "k",
      concurrency: 1,
      perKey: 1,
      rate: { limit: 2, windowMs: 60_000 },
    };
    for (const id of ["q1", "q2"]) await store.save(id, 0, row({ queue }));
    await store.save("q1", 1, row({ segment: 1 }), { owner: "w#1", ms: 60_000 });
    expect(await refusal(store.save("q2", 1, row({ segment: 1 }), { owner: "w#2", ms: 60_000 }))).toBeInstanceOf(
      QueueFull,
    );
    await store.renew("q1", 1, { owner: "w#1", ms: 60_000 });
    expect(await collectQueued(store, "q")).toEqual(["q2"]);
    await store.save("q1", 2, row({ segment: 1, status: "paused" }));
    expect(await collectQueued(store, "q")).toEqual(["q2"]);
    await store.delete("q2");
    await store.delete("q1");
    const other = new RedisCheckpointStore(() => createClient({ url }), { prefix: "app:tenant-a:x" });
    const refused = await other.save("r", 0, row()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(StoreUnavailable);
    expect(String(refused)).toMatch(/NOPERM|No permissions/i);
    await store.close();
    await other.close();
  });
});
