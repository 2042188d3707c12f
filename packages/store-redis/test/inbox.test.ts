import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CheckpointStoreCorrupt, InvalidInput, WAITING } from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { indexMember } from "../src/keys.js";
import { dropPrefix, newStore, REDIS_URL, redisAnswers, row } from "./redis.js";

const A = { owner: "worker-a", ms: 60_000 };
const event = (seq: number, key = `key-${seq}`) => ({ seq, key, sealed: `sealed ${key}` });

async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const id of iterable) out.push(id);
  return out.sort();
}

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

if (await redisAnswers()) {
  describe("RedisCheckpointStore inbox", () => {
    const admin = createClient({ url: REDIS_URL });
    beforeAll(() => admin.connect());
    afterAll(() => admin.close());

    it("gives the inbox keys the run's TTL once it ended, never before; a failed run claimed again loses it, as does a running run an earlier version gave one", async () => {
      const s = store({ ttlSeconds: 100 });
      const keys = s.keysOf("r");
      const ttls = () => Promise.all([keys.meta, keys.inbox, keys.inboxByKey].map((key) => admin.pTTL(key)));
      await s.save("r", 0, row(), A);
      await s.sendEvent("r", event(0));
      expect(await ttls()).toEqual([-1, -1, -1]);
      await s.save("r", 1, row({ status: "failed" }));
      expect(Math.min(...(await ttls()))).toBeGreaterThan(90_000);
      await s.save("r", 2, row({ segment: 1 }), A);
      expect(await ttls()).toEqual([-1, -1, -1]);
      // What an earlier version left: a running run with an expiry and its entry in expiring; an event is a write.
      for (const key of [keys.meta, keys.cps, keys.calls, keys.inbox, keys.inboxByKey])
        await admin.pExpire(key, 100_000);
      await admin.zAdd(keys.expiring, { score: Date.now() + 100_000, value: indexMember("f", "r") });
      await s.sendEvent("r", event(1));
      expect(await ttls()).toEqual([-1, -1, -1]);
      expect(await admin.zScore(keys.expiring, indexMember("f", "r"))).toBeNull();
      await s.save("r", 3, row({ segment: 1, status: "done" }));
      expect(Math.min(...(await ttls()))).toBeGreaterThan(90_000);
    });

    it("an event releases a WAITING lease without listing a run that waits for a decision as claimable", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      await s.save("r", 1, row({ waitsForDecision: true }), { owner: WAITING, ms: 60_000, events: 0 });
      expect((await s.leaseOf("r"))?.owner).toBe(WAITING);
      expect(await s.sendEvent("r", event(0))).toBe(true);
      expect(await s.leaseOf("r")).toBeUndefined();
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      expect(await admin.hGetAll(s.keysOf("r").claimableOf)).toEqual({});
      await s.save("r", 2, row({ segment: 1 }), A);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-a");
    });

    it("a stored event of another shape, or an inbox key of another type, is CheckpointStoreCorrupt naming the run", async () => {
      const s = store();
      const keys = s.keysOf("r");
      await s.save("r", 0, row());
      await s.sendEvent("r", event(0));
      for (const text of ["not json", '{"key":"k"}', '["k"]', '["k", 7]', '[7, "sealed"]']) {
        await admin.lSet(keys.inbox, 0, text);
        await expect(s.inbox("r"), text).rejects.toThrow(CheckpointStoreCorrupt);
      }
      await admin.del(keys.inbox);
      await admin.set(keys.inbox, "not a list");
      await expect(s.inbox("r")).rejects.toThrow(CheckpointStoreCorrupt);
      await expect(s.sendEvent("r", event(1))).rejects.toThrow(CheckpointStoreCorrupt);
      await expect(s.sendEvent("r", event(1))).rejects.toMatchObject({ runId: "r" });
    });

    it("refuses a malformed event and a malformed place to read from with InvalidInput before it connects", async () => {
      const unreachable = new RedisCheckpointStore(() => {
        throw new Error("the store connected");
      });
      for (const from of [-1, 1.5, Number.NaN, 2 ** 53])
        await expect(unreachable.inbox("r", from), String(from)).rejects.toThrow(InvalidInput);
      await expect(unreachable.sendEvent("r", { seq: 0, key: "", sealed: "s" })).rejects.toThrow(InvalidInput);
      await unreachable.close();
    });

    it("reads an inbox from any place, past its end too", async () => {
      const s = store();
      await s.save("r", 0, row());
      for (let seq = 0; seq < 5; seq++) await s.sendEvent("r", event(seq));
      expect((await s.inbox("r", 3)).map((e) => [e.seq, e.key])).toEqual([
        [3, "key-3"],
        [4, "key-4"],
      ]);
      expect(await s.inbox("r", 5)).toEqual([]);
      expect(await s.inbox("r", 500)).toEqual([]);
    });
  });
} else {
  describe("redis inbox", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}
