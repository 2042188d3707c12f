import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { CheckpointStoreCorrupt, StoreUnavailable } from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { indexMember } from "../src/keys.js";
import redis, { REDIS_URL, client, dropPrefix, newStore, redisAnswers, row } from "./redis.js";

async function admin() {
  const c = createClient({ url: REDIS_URL });
  c.on("error", () => {});
  await c.connect();
  return c;
}

// Tests share one Redis server: every store has its own random prefix, and files run one at a time.
if (await redisAnswers()) {
  // Prefixes that start with one another (a, a:, a:x, ...) are tenants like any other: consecutive stores of a group nest.
  let n = 0;
  const run = `iso${Math.random().toString(36).slice(2)}`;
  const nested = (i: number) => {
    const base = `${run}${Math.floor(i / 7)}`;
    return [base, `${base}:`, `${base}:x`, `${base}.x`, `${base}-x`, `${base}_x`, `${base}::x`][i % 7]!;
  };
  runConformance(
    {
      ...redis,
      name: "redis, prefixes that start with one another",
      createStore: () => new RedisCheckpointStore(client, { prefix: nested(n++) }),
    },
    { groups: ["isolation"] },
  );

  describe("RedisCheckpointStore", () => {
    it("a malformed run head or checkpoint row is CheckpointStoreCorrupt naming the run: never CheckpointNotFound (the run seems never to have existed), StoreUnavailable (retried forever) or a TypeError", async () => {
      const store = newStore();
      const c = await admin();
      const outcome = (operation: Promise<unknown>) =>
        operation.then(
          () => "resolved",
          (error: Error) => (error instanceof CheckpointStoreCorrupt && error.runId === "r" ? "corrupt" : error.name),
        );
      const operations = () => ({
        latest: outcome(store.latest("r")),
        save: outcome(store.save("r", 2, row())),
        recordCall: outcome(store.recordCall("r", 0, 0, "sealed-0")),
        renew: outcome(store.renew("r", 0, { owner: "w", ms: 1_000 })),
        leaseOf: outcome(store.leaseOf("r")),
        sendEvent: outcome(store.sendEvent("r", { seq: 0, key: "k", sealed: "sealed" })),
        appendStream: outcome(store.appendStream("r", { segment: 0, offset: 0, count: 1, sealed: "sealed" })),
      });
      const corrupt = {
        latest: "corrupt",
        save: "corrupt",
        recordCall: "corrupt",
        renew: "corrupt",
        leaseOf: "corrupt",
        sendEvent: "corrupt",
        appendStream: "corrupt",
      };
      try {
        const { meta, cps } = store.keysOf("r");
        for (const [field, value] of [
          ["step", "x"],
          ["status", "stalled"],
          ["segment", "-1"],
          ["segcalls", "x"],
          ["kind", "task"],
        ] as const) {
          await store.delete("r");
          await store.save("r", 0, row(), { owner: "w", ms: 60_000 });
          await store.save("r", 1, row(), { owner: "w", ms: 60_000 });
          await c.hSet(meta, field, value);
          expect(await Promise.all(Object.values(operations())), `meta ${field} = ${value}`).toEqual(
            Object.values(corrupt),
          );
        }
        // A head naming a step that is not stored: the run is there, its latest row is not.
        await store.delete("r");
        await store.save("r", 0, row());
        await c.hSet(meta, "step", "7");
        expect(await outcome(store.latest("r"))).toBe("corrupt");
        await store.delete("r");
        await store.save("r", 0, row());
        // A checkpoint row of the wrong shape: JSON, but not [status, segment, name, kind, sealed].
        for (const text of ['{"status":"running"}', '["running",0,"f","flow"]', '["running","x","f","flow","s"]']) {
          await c.hSet(cps, "0", text);
          expect(await outcome(store.latest("r")), text).toBe("corrupt");
          expect(await outcome(store.history("r")), text).toBe("corrupt");
        }
        // A key of the run of another type.
        await c.del(meta);
        await c.set(meta, "not a hash");
        expect(await outcome(store.latest("r"))).toBe("corrupt");
      } finally {
        await c.quit();
        await dropPrefix(store);
        await store.close();
      }
    });

    it("applies a retried record once", async () => {
      const store = newStore();
      await store.save("r", 0, row());
      await store.recordCall("r", 0, 0, "sealed-0");
      await store.recordCall("r", 0, 0, "sealed-0");
      expect(await store.calls("r")).toEqual([{ runId: "r", segment: 0, seq: 0, sealed: "sealed-0" }]);
      await expect(store.recordCall("r", 0, 0, "another")).rejects.toThrow(/not the next one/);
      await dropPrefix(store);
      await store.close();
    });

    it("reads the log from a place up to a segment's first missing record, whatever count its head holds (a count set past its records keeps the server busy for no time)", async () => {
      const store = newStore();
      const c = await admin();
      try {
        await store.save("r", 0, row());
        for (let seq = 0; seq < 300; seq++) await store.recordCall("r", 0, seq, `sealed-${seq}`);
        await c.hSet(store.keysOf("r").meta, "segcalls", "1000000000000");
        const started = Date.now();
        const read = await store.calls("r", { segment: 0, seq: 10 });
        expect(read.map((call) => call.seq)).toEqual(Array.from({ length: 290 }, (_, i) => i + 10));
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(await c.ping()).toBe("PONG");
      } finally {
        await c.quit();
        await dropPrefix(store);
        await store.close();
      }
    });

    it("a running run never expires, also one an earlier version gave an expiry (it loses it at its next write); writes without a TTL set none", async () => {
      const prefix = `ttl-off:${Math.random()}`;
      const withTtl = new RedisCheckpointStore(client, { prefix, ttlSeconds: 100 });
      const without = new RedisCheckpointStore(client, { prefix });
      const c = await admin();
      const ttls = async (runId: string) => {
        const keys = without.keysOf(runId);
        return Promise.all([keys.meta, keys.cps, keys.calls].map((key) => c.pTTL(key)));
      };
      await withTtl.save("r", 0, row());
      await withTtl.recordCall("r", 0, 0, "sealed-0");
      expect(await ttls("r")).toEqual([-1, -1, -1]);
      // What an earlier version left: a running run with an expiry and its entry in expiring.
      const keys = without.keysOf("r");
      for (const key of [keys.meta, keys.cps, keys.calls]) await c.pExpire(key, 100_000);
      await c.zAdd(keys.expiring, { score: Date.now() + 100_000, value: indexMember("f", "r") });
      await withTtl.recordCall("r", 0, 1, "sealed-1");
      expect(await ttls("r")).toEqual([-1, -1, -1]);
      expect(await c.zScore(keys.expiring, indexMember("f", "r"))).toBeNull();
      await without.save("s", 0, row());
      await without.recordCall("s", 0, 0, "sealed-0");
      await without.save("s", 1, row());
      expect(await ttls("s")).toEqual([-1, -1, -1]);
      await c.close();
      await dropPrefix(without);
      await Promise.all([withTtl.close(), without.close()]);
    });

    it("gives StoreUnavailable while Redis does not answer, and works again once it does", async () => {
      const store = newStore({ operationTimeoutMs: 300 });
      await store.save("r", 0, row());
      const c = await admin();
      await c.sendCommand(["CLIENT", "PAUSE", "1500", "ALL"]);
      await expect(store.save("r", 1, row())).rejects.toThrow(StoreUnavailable);
      await new Promise((r) => setTimeout(r, 1600));
      // The paused save was never confirmed: the run goes on from what Redis says.
      const latest = await store.latest("r");
      await store.save("r", latest.step + 1, row());
      await c.close();
      await dropPrefix(store);
      await store.close();
    });

    it("gives StoreUnavailable when its connection is killed mid-operation, never a silent success, and reconnects", async () => {
      let own: ReturnType<typeof client> | undefined;
      const store = new RedisCheckpointStore(() => (own = client()), {
        prefix: `kill:${Math.random()}`,
        operationTimeoutMs: 3000,
      });
      await store.save("r", 0, row());
      const id = String(await own!.sendCommand(["CLIENT", "ID"]));
      const c = await admin();
      // Writes wait while paused, so the store's record is in flight when its connection dies.
      await c.sendCommand(["CLIENT", "PAUSE", "2000", "WRITE"]);
      const inFlight = store.recordCall("r", 0, 0, "x").then(
        () => "applied",
        (error: unknown) => error,
      );
      await new Promise((r) => setTimeout(r, 100));
      await c.sendCommand(["CLIENT", "KILL", "ID", id]);
      expect(await inFlight).toBeInstanceOf(StoreUnavailable);
      await c.sendCommand(["CLIENT", "UNPAUSE"]);
      // The store reconnects; the log shows whether the killed write was applied, and numbering goes on from it.
      const before = (await store.calls("r")).length;
      await store.recordCall("r", 0, before, `y${before}`);
      expect((await store.calls("r")).length).toBe(before + 1);
      await c.close();
      await dropPrefix(store);
      await store.close();
    });
  });
} else {
  describe("redis store", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}
