import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointStoreCorrupt,
  InvalidInput,
  MAX_STREAM_PAGE,
  type StreamBatch,
} from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { indexMember } from "../src/keys.js";
import { OwnRedis } from "./own-server.js";
import { dropPrefix, newStore, REDIS_URL, redisAnswers, row } from "./redis.js";

const A = { owner: "worker-a", ms: 60_000 };
/** A batch of `count` parts from `offset` of `segment`: the store never opens `sealed`. */
const batch = (segment: number, offset: number, count = 1): StreamBatch => ({
  segment,
  offset,
  count,
  sealed: `sealed ${segment}:${offset}+${count}`,
});
const places = (rows: readonly StreamBatch[]) => rows.map(({ offset, count }) => ({ offset, count }));

// Each test has a store of its own, on a random prefix, dropped afterwards.
const opened: RedisCheckpointStore[] = [];
function store(options: Parameters<typeof newStore>[0] = {}): RedisCheckpointStore {
  const made = newStore(options);
  opened.push(made);
  return made;
}
afterEach(async () => {
  for (const made of opened.splice(0)) {
    await dropPrefix(made);
    await made.close();
  }
});

describe("RedisCheckpointStore stream input", () => {
  it("refuses a malformed batch and a malformed place to read from with InvalidInput before it connects", async () => {
    const unreachable = new RedisCheckpointStore(() => {
      throw new Error("the store connected");
    });
    for (const from of [-1, 1.5, Number.NaN, 2 ** 53])
      await expect(unreachable.stream("r", from), String(from)).rejects.toThrow(InvalidInput);
    for (const bad of [batch(0, -1), batch(0, 0, 0), batch(0, 0, 1_001), { ...batch(0, 0), sealed: 7 }])
      await expect(unreachable.appendStream("r", bad as StreamBatch), JSON.stringify(bad)).rejects.toThrow(
        InvalidInput,
      );
    await unreachable.close();
  });
});

if (await redisAnswers()) {
  describe("RedisCheckpointStore stream", () => {
    const admin = createClient({ url: REDIS_URL });
    beforeAll(() => admin.connect());
    afterAll(() => admin.close());

    it("keeps offsets past 2^50 exactly, in the batch's JSON, its score and the stream's length", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      const far = 9_007_199_254_740_000;
      await admin.hSet(s.keysOf("r").meta, "parts", String(far));
      await s.appendStream("r", batch(0, far, 5));
      expect(places(await s.stream("r", far + 3))).toEqual([{ offset: far, count: 5 }]);
      expect(await s.stream("r", far + 5)).toEqual([]);
      await expect(s.appendStream("r", batch(0, far + 4))).rejects.toThrow(CheckpointConflict);
      await s.appendStream("r", batch(0, far + 5));
      expect(places(await s.stream("r", far + 2))).toEqual([
        { offset: far, count: 5 },
        { offset: far + 5, count: 1 },
      ]);
    });

    it("gives the stream key the run's TTL once it ended, never before; a failed run claimed again loses it, as does a running run an earlier version gave one; delete removes it", async () => {
      const s = store({ ttlSeconds: 100 });
      const keys = s.keysOf("r");
      const ttls = () => Promise.all([keys.meta, keys.stream].map((key) => admin.pTTL(key)));
      await s.save("r", 0, row(), A);
      await s.appendStream("r", batch(0, 0, 2));
      expect(await ttls()).toEqual([-1, -1]);
      await s.save("r", 1, row({ status: "failed" }));
      expect(Math.min(...(await ttls()))).toBeGreaterThan(90_000);
      await s.save("r", 2, row({ segment: 1 }), A);
      expect(await ttls()).toEqual([-1, -1]);
      // What an earlier version left: a running run with an expiry and its entry in expiring; an append is a write.
      for (const key of [keys.meta, keys.cps, keys.calls, keys.stream]) await admin.pExpire(key, 100_000);
      await admin.zAdd(keys.expiring, { score: Date.now() + 100_000, value: indexMember("f", "r") });
      await s.appendStream("r", batch(1, 2));
      expect(await ttls()).toEqual([-1, -1]);
      expect(await admin.zScore(keys.expiring, indexMember("f", "r"))).toBeNull();
      await s.save("r", 3, row({ segment: 1, status: "done" }));
      expect(Math.min(...(await ttls()))).toBeGreaterThan(90_000);
      await s.delete("r");
      expect(await admin.exists([keys.meta, keys.stream])).toBe(0);
    });

    it("dropStream removes the stream and its length, and leaves the run: its next batch is at 0", async () => {
      const s = store();
      const keys = s.keysOf("r");
      await s.save("r", 0, row(), A);
      await s.appendStream("r", batch(0, 0, 3));
      await s.dropStream("r");
      expect(await admin.exists(keys.stream)).toBe(0);
      expect(await admin.hGet(keys.meta, "parts")).toBeNull();
      expect(await admin.hGet(keys.meta, "step")).toBe("0");
      expect((await s.latest("r")).step).toBe(0);
      await expect(s.appendStream("r", batch(0, 3))).rejects.toThrow(CheckpointConflict);
      await s.appendStream("r", batch(0, 0));
      expect(places(await s.stream("r"))).toEqual([{ offset: 0, count: 1 }]);
    });

    it("a stored batch of another shape, a stream key of another type or a malformed length is CheckpointStoreCorrupt naming the run", async () => {
      const s = store();
      const keys = s.keysOf("r");
      await s.save("r", 0, row(), A);
      await s.appendStream("r", batch(0, 0));
      for (const text of [
        "not json",
        '{"segment":"0"}',
        '["0","0","1"]',
        '["0","0","0","s"]',
        '["0","x","1","s"]',
        '["-1","0","1","s"]',
        '["0","0","1",7]',
      ]) {
        await admin.del(keys.stream);
        await admin.zAdd(keys.stream, { score: 0, value: text });
        await expect(s.stream("r"), text).rejects.toThrow(CheckpointStoreCorrupt);
        await expect(s.stream("r"), text).rejects.toMatchObject({ runId: "r" });
      }
      await admin.del(keys.stream);
      await admin.set(keys.stream, "not a sorted set");
      await expect(s.stream("r")).rejects.toThrow(CheckpointStoreCorrupt);
      await expect(s.appendStream("r", batch(0, 1))).rejects.toThrow(CheckpointStoreCorrupt);
      await admin.del(keys.stream);
      for (const length of ["x", "-1", ""]) {
        await admin.hSet(keys.meta, "parts", length);
        await expect(s.appendStream("r", batch(0, 1)), length).rejects.toThrow(CheckpointStoreCorrupt);
        await expect(s.appendStream("r", batch(0, 1)), length).rejects.toMatchObject({ runId: "r" });
      }
    });
  });
} else {
  describe("redis stream", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}

// A server of this file's own: its command statistics count only this store's commands.
describe("RedisCheckpointStore stream reads", () => {
  let server: OwnRedis;
  beforeAll(async () => {
    server = await OwnRedis.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("reads from any part of a long stream as a range: the batch that holds it and those after, at most a page, in one script of two ZRANGEs", async () => {
    const own = createClient({ url: server.url });
    await own.connect();
    const s = new RedisCheckpointStore(() => createClient({ url: server.url }), { prefix: "reads" });
    try {
      await s.save("r", 0, row(), A);
      // 2,100 batches of 1, 2 and 3 parts in turn.
      const all: { offset: number; count: number }[] = [];
      for (let i = 0, offset = 0; i < 2_100; i++) {
        const count = (i % 3) + 1;
        await s.appendStream("r", batch(0, offset, count));
        all.push({ offset, count });
        offset += count;
      }
      const end = all.at(-1)!.offset + all.at(-1)!.count;
      // From the middle of batch 700 (2 parts): that batch and a page from it.
      const from = all[700]!.offset + 1;
      await s.stream("r", from);
      await own.configResetStat();
      const page = await s.stream("r", from);
      const stats = String(await own.sendCommand(["INFO", "commandstats"]));
      const commands = Object.fromEntries(
        [...stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].flatMap(([, name, calls]) =>
          ["info", "config"].includes(String(name)) ? [] : [[String(name), Number(calls)]],
        ),
      );
      expect(commands).toEqual({ evalsha: 1, zrange: 2 });
      expect(page).toHaveLength(MAX_STREAM_PAGE);
      expect(places(page)).toEqual(all.slice(700, 700 + MAX_STREAM_PAGE));
      expect(
        page.every((b) => b.runId === "r" && b.segment === 0 && b.sealed === batch(0, b.offset, b.count).sealed),
      ).toBe(true);
      // The next page from the end of the last, then the stream's end and past it.
      const last = page.at(-1)!;
      expect(places(await s.stream("r", last.offset + last.count))).toEqual(all.slice(700 + MAX_STREAM_PAGE));
      expect(places(await s.stream("r", all[2_000]!.offset))).toEqual(all.slice(2_000));
      expect(places(await s.stream("r", end - 1))).toEqual([all.at(-1)]);
      expect(await s.stream("r", end)).toEqual([]);
      expect(await s.stream("r", 1e12)).toEqual([]);
      expect(places(await s.stream("r"))).toEqual(all.slice(0, MAX_STREAM_PAGE));
    } finally {
      await s.close();
      await own.close();
    }
  }, 60_000);
});
