import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryCheckpointStore } from "@durable/core";
import {
  type CheckpointStore,
  CheckpointConflict,
  CheckpointNotFound,
  InvalidInput,
  LeaseHeld,
} from "@durable/core/store";
import { redisAdmin } from "@durable/test-utils/redis";
import type { RedisCheckpointStore } from "../src/index.js";
import { dropPrefix, newStore, redisAnswers, row } from "./redis.js";

const A = { owner: "worker-a", ms: 60_000 };
const B = { owner: "worker-b", ms: 60_000 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const id of iterable) out.push(id);
  return out.sort();
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

// Each test has a store of its own, on a random prefix, dropped afterwards.
const opened: RedisCheckpointStore[] = [];
function store(options: Parameters<typeof newStore>[0] = {}): RedisCheckpointStore {
  const made = newStore(options);
  opened.push(made);
  return made;
}
afterEach(async () => {
  vi.restoreAllMocks();
  for (const made of opened.splice(0)) {
    await dropPrefix(made);
    await made.close();
  }
});

if (await redisAnswers()) {
  describe("RedisCheckpointStore leases", () => {
    it("refuses another owner's claim of a live lease with LeaseHeld, naming the owner and the expiry", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      const lease = await s.leaseOf("r");
      expect(lease?.owner).toBe("worker-a");
      expect(lease!.expiresAt - lease!.now).toBeGreaterThan(59_000);
      const error = await refusal(s.save("r", 1, row({ segment: 1 }), B));
      expect(error).toBeInstanceOf(LeaseHeld);
      expect(error).toMatchObject({ runId: "r", owner: "worker-a", expiresAt: lease!.expiresAt });
      expect(String(error)).toMatch(/held by worker "worker-a" until/);
      // A claim without a lease is refused as well; the refused claims wrote nothing.
      expect(await refusal(s.save("r", 1, row({ segment: 1 })))).toBeInstanceOf(LeaseHeld);
      expect((await s.latest("r")).step).toBe(0);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-a");
      // A save in the same segment is no claim: the compare-and-set alone decides it.
      await s.save("r", 1, row(), B);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-b");
    });

    it("lets the owner claim its own run again, and a takeover claim any run", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      await s.save("r", 1, row({ segment: 1 }), A);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-a");
      await s.save("r", 2, row({ segment: 2 }), { ...B, takeOver: true });
      expect((await s.leaseOf("r"))?.owner).toBe("worker-b");
      // The old owner is fenced by the segment, and may not renew.
      await expect(s.recordCall("r", 1, 0, "x")).rejects.toThrow(CheckpointConflict);
      await expect(s.renew("r", 1, A)).rejects.toThrow(/segment 1 is not the run's current one \(2\)/);
      await expect(s.renew("r", 2, A)).rejects.toThrow(/its lease is held by "worker-b", not "worker-a"/);
    });

    it("lets a lease run out by the store's clock", async () => {
      const s = store();
      // 1 s: the claim and the listing right after must still find it live on a busy machine.
      await s.save("r", 0, row(), { owner: "worker-a", ms: 1_000 });
      await expect(s.save("r", 1, row({ segment: 1 }), B)).rejects.toThrow(LeaseHeld);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      await sleep(1_100);
      const lease = await s.leaseOf("r");
      expect(lease?.expiresAt).toBeLessThanOrEqual(lease!.now);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(["r"]);
      await s.save("r", 1, row({ segment: 1 }), B);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-b");
    });

    it("renews the owner's lease only, live or run out, and refuses the rest as the memory store does", async () => {
      const s = store();
      await s.save("r", 0, row(), { owner: "worker-a", ms: 100 });
      await sleep(150);
      const renewed = await s.renew("r", 0, A);
      const view = await s.leaseOf("r");
      expect(renewed).toEqual({ owner: "worker-a", expiresAt: view!.expiresAt });
      expect(renewed.expiresAt - view!.now).toBeGreaterThan(59_000);
      await expect(s.save("r", 1, row({ segment: 1 }), B)).rejects.toThrow(LeaseHeld);
      await expect(s.renew("r", 0, B)).rejects.toThrow(CheckpointConflict);
      await expect(s.renew("unknown", 0, A)).rejects.toThrow(CheckpointNotFound);
      await expect(s.renew("r", 0, { owner: "worker-a", ms: -1 })).rejects.toThrow(InvalidInput);
      await expect(s.save("r", 1, row(), { owner: "", ms: 5 })).rejects.toThrow(InvalidInput);
    });

    it("gives the memory store's errors, word for word, for the same steps", async () => {
      const steps = async (on: CheckpointStore): Promise<string[]> => {
        const seen: string[] = [];
        const note = async (op: Promise<unknown>) => {
          const error = await refusal(op);
          seen.push(error instanceof Error ? `${error.name}: ${error.message.replace(/until .*$/, "")}` : "ok");
        };
        await note(on.save("r", 0, row(), A));
        await note(on.renew("r", 0, B));
        await note(on.renew("r", 1, A));
        await note(on.save("r", 1, row({ segment: 1 }), B));
        await note(on.save("r", 1, row({ segment: 1 }), { ...B, takeOver: true }));
        await note(on.renew("r", 1, A));
        await note(on.release("r", 1, "worker-b"));
        await note(on.renew("r", 1, B));
        await note(on.save("r", 2, row({ segment: 1, status: "paused" }), B));
        await note(on.renew("r", 1, B));
        await note(on.renew("nothing", 0, B));
        await note(on.save("r", 3, row({ segment: 2, status: "done" }), B));
        await note(on.renew("r", 2, B));
        return seen;
      };
      const redis = await steps(store());
      expect(redis).toEqual(await steps(new MemoryCheckpointStore()));
      expect(redis.filter((seen) => seen !== "ok").length).toBe(8);
    });

    it("releases at once for the owner of the current segment only", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      await s.release("r", 0, "worker-b");
      await s.release("r", 1, "worker-a");
      await s.release("unknown", 0, "worker-a");
      expect((await s.leaseOf("r"))?.owner).toBe("worker-a");
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      await s.release("r", 0, "worker-a");
      expect(await s.leaseOf("r")).toBeUndefined();
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(["r"]);
      await expect(s.renew("r", 0, A)).rejects.toThrow(/its lease was released/);
      await s.save("r", 1, row({ segment: 1 }), B);
    });

    it("a release leaves a run whose latest save waits for a decision out of the claimable listing, as the memory store does", async () => {
      const stores = [store(), new MemoryCheckpointStore()];
      for (const s of stores) {
        await s.save("r", 0, row(), A);
        await s.save("r", 1, row({ waitsForDecision: true }), A);
        await s.release("r", 0, "worker-a");
        expect(await s.leaseOf("r")).toBeUndefined();
        expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      }
    });

    it.each(["paused", "done", "failed"] as const)("releases the lease on a %s save", async (status) => {
      const s = store();
      await s.save("r", 0, row(), A);
      await s.save("r", 1, row({ status }), A);
      expect(await s.leaseOf("r")).toBeUndefined();
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      expect(await collect(s.listUnfinished("f"))).toEqual(status === "paused" ? ["r"] : []);
    });

    it("lists as claimable the running runs with no lease or one run out, not live, paused, ended or other flows' runs", async () => {
      const s = store();
      await s.save("live", 0, row(), A);
      await s.save("short", 0, row(), { owner: "worker-a", ms: 200 });
      await s.save("none", 0, row());
      await s.save("zero", 0, row(), { owner: "worker-a", ms: 0 });
      await s.save("released", 0, row(), A);
      await s.release("released", 0, "worker-a");
      await s.save("paused", 0, row({ status: "paused" }));
      await s.save("done", 0, row(), A);
      await s.save("done", 1, row({ status: "done" }), A);
      await s.save("other", 0, row({ name: "g" }));
      await s.save("prefix of", 0, row({ name: "ff" }));
      await sleep(300);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(["none", "released", "short", "zero"]);
      expect(await collect(s.listUnfinished("f"))).toEqual(["live", "none", "paused", "released", "short", "zero"]);
      expect(await collect(s.listUnfinished("g", { claimable: true }))).toEqual(["other"]);
    });

    it("streams a claimable listing of many pages per bucket, each run once", async () => {
      const s = store();
      const ids = Array.from({ length: 3000 }, (_, i) => `run ${i}`);
      for (let i = 0; i < ids.length; i += 200)
        await Promise.all(
          ids.slice(i, i + 200).map((id, j) => s.save(id, 0, row(), (i + j) % 5 === 0 ? A : undefined)),
        );
      const listed: string[] = [];
      for await (const id of s.listUnfinished("f", { claimable: true })) listed.push(id);
      expect(listed.length).toBe(2400);
      expect(new Set(listed).size).toBe(2400);
      expect(listed.sort()).toEqual(ids.filter((_, i) => i % 5 !== 0).sort());
    });

    it.each([3_600_000, -3_600_000])("ignores the process clock (Date.now moved by %i ms)", async (shift) => {
      const s = store();
      await s.leaseOf("warm-up");
      const real = Date.now();
      vi.spyOn(Date, "now").mockImplementation(() => real + shift);
      await s.save("r", 0, row(), A);
      await s.save("short", 0, row(), { owner: "worker-a", ms: 1_000 });
      const lease = await s.leaseOf("r");
      expect(Math.abs(lease!.now - real)).toBeLessThan(60_000);
      expect(lease!.expiresAt - lease!.now).toBeGreaterThan(59_000);
      await expect(s.save("r", 1, row({ segment: 1 }), B)).rejects.toThrow(LeaseHeld);
      await expect(s.save("short", 1, row({ segment: 1 }), B)).rejects.toThrow(LeaseHeld);
      await sleep(1_100);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(["short"]);
      await s.save("short", 1, row({ segment: 1 }), B);
      await expect(s.save("r", 1, row({ segment: 1 }), B)).rejects.toThrow(LeaseHeld);
    });

    it("removes the lease and its index entries on delete", async () => {
      const s = store();
      await s.save("r", 0, row(), A);
      await s.delete("r");
      expect(await s.leaseOf("r")).toBeUndefined();
      const keys = s.keysOf("r");
      const admin = await redisAdmin();
      expect(await admin.zRange(keys.claimable, 0, -1)).toEqual([]);
      expect(await admin.hGetAll(keys.claimableOf)).toEqual({});
      await admin.close();
      await s.save("r", 0, row(), B);
      expect((await s.leaseOf("r"))?.owner).toBe("worker-b");
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
    });

    it("drops the claimable entries of running runs an earlier version let expire by their TTL", async () => {
      const s = store({ ttlSeconds: 1 });
      await s.save("gone", 0, row());
      const keys = s.keysOf("gone");
      // What an earlier version did to a running run: an expiry, and its entry in expiring.
      const setup = await redisAdmin();
      for (const key of [keys.meta, keys.cps, keys.calls]) await setup.pExpire(key, 1000);
      const member = `${Buffer.from("f").toString("hex")}:${Buffer.from("gone").toString("hex")}`;
      await setup.zAdd(keys.expiring, { score: Date.now() + 1000, value: member });
      await setup.close();
      const bucket = keys.claimable;
      const sibling = Array.from({ length: 200 }, (_, i) => `sibling ${i}`).find(
        (id) => s.keysOf(id).claimable === bucket,
      );
      await sleep(1100);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual([]);
      await s.save(sibling!, 0, row({ status: "paused" }));
      const admin = await redisAdmin();
      expect(await admin.zRange(bucket, 0, -1)).toEqual([]);
      expect(await admin.hGetAll(s.keysOf("gone").claimableOf)).toEqual({});
      await admin.close();
    });

    it("lists the running runs of indexes written before leases as claimable, once backfilled", async () => {
      const s = store();
      // Rows as the store wrote them before leases: meta, checkpoint and the unfinished index; no lease, no schema.
      const admin = await redisAdmin();
      const legacy = async (runId: string, status: "running" | "paused") => {
        const keys = s.keysOf(runId);
        const member = `${Buffer.from("f").toString("hex")}:${Buffer.from(runId).toString("hex")}`;
        await admin.hSet(keys.meta, { flow: "f", kind: "flow", step: "0", status, segment: "0", segcalls: "0" });
        await admin.hSet(keys.cps, "0", JSON.stringify([status, 0, "f", "flow", "d1.-.{}"]));
        await admin.zAdd(keys.unfinished, { score: 0, value: member });
      };
      const running = Array.from({ length: 150 }, (_, i) => `old ${i}`);
      for (const id of running) await legacy(id, "running");
      await legacy("old paused", "paused");
      await s.save("new", 0, row(), A);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(running.sort());
      expect(await admin.get(s.keysOf("new").schema)).toBe("2");
      expect(await s.leaseOf("old 0")).toBeUndefined();
      await s.save("old 0", 1, row({ segment: 1 }), B);
      expect(await collect(s.listUnfinished("f", { claimable: true }))).toEqual(
        running.filter((id) => id !== "old 0").sort(),
      );
      await admin.close();
    });
  });
} else {
  describe("redis leases", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}
