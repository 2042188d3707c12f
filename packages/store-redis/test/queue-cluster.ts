import { describe, expect, it } from "vitest";
import { QueueFull, type QueuePlace } from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { hex, queueKeys, queueScriptKeys } from "../src/keys.js";
import type { ClusterTarget } from "./cluster.js";
import { RACE_KEYS, raceQueue, startRuns } from "./queue-race.js";
import { row } from "./redis.js";

/**
 * What a queue does on a cluster, where its keys and its runs' are on
 * different masters (their scripts cannot touch both): registered by
 * cluster.test.ts on its cluster.
 */
export function clusterQueues(target: ClusterTarget): void {
  const open = (prefix = `test:${crypto.randomUUID()}`) => new RedisCheckpointStore(() => target.client(), { prefix });

  /** The id of the master that holds the slot of each key. */
  async function mastersOf(keys: readonly string[]): Promise<string[]> {
    const slots = await target.cluster.keySlots(keys);
    return Promise.all(slots.map(async (slot) => (await target.cluster.masterOf(slot)).master.id));
  }

  describe("RedisCheckpointStore queues on a Redis Cluster", () => {
    it("keeps a queue's keys on one slot of its own, and its limits across runs on the other masters", async () => {
      const store = open();
      const q: QueuePlace = { queue: "q {x}", priority: 0, key: "k", concurrency: 2, perKey: 2 };
      const queueSlots = new Set(await target.cluster.keySlots(queueScriptKeys(queueKeys(store.prefix, q.queue, "k"))));
      expect(queueSlots.size).toBe(1);
      const [queueMaster] = await mastersOf([queueKeys(store.prefix, q.queue).ready]);
      // Two runs whose buckets are on the two masters that do not hold the queue, and a third anywhere.
      const ids = Array.from({ length: 48 }, (_, i) => `run-${i}`);
      const masters = await mastersOf(ids.map((id) => store.keysOf(id).meta));
      const on = (taken: readonly (string | undefined)[]) => ids.find((_, i) => !taken.includes(masters[i]));
      const a = on([queueMaster]) as string;
      const b = on([queueMaster, masters[ids.indexOf(a)]]) as string;
      const c = ids.find((id) => id !== a && id !== b) as string;
      expect(b).toBeDefined();
      for (const id of [a, b, c]) await store.save(id, 0, row({ queue: q }));
      await store.save(a, 1, row({ segment: 1 }), { owner: "w#a", ms: 60_000 });
      await store.save(b, 1, row({ segment: 1 }), { owner: "w#b", ms: 60_000 });
      // Another store object, as another worker's: it knows the runs' queue from their keys only.
      const other = open(store.prefix);
      const take = () => other.save(c, 1, row({ segment: 1 }), { owner: "w#c", ms: 60_000 });
      expect(await take().catch((error: unknown) => error)).toBeInstanceOf(QueueFull);
      await other.save(a, 2, row({ segment: 1, status: "done" }));
      await take();
      const listed: string[] = [];
      for await (const run of store.listQueued(q.queue)) listed.push(run.runId);
      expect(listed).toEqual([]);
      await target.dropKeys(RedisCheckpointStore.keyPattern(store.prefix));
      await store.close();
      await other.close();
    });

    it("never lets more runs of a queue hold a lease than its limits while racing clients on its masters take, renew, sleep, pause, release and die; after them every holder is reserved past its lease and every running run is in the queue's index", {
      timeout: 60_000,
    }, async () => {
      const first = open();
      const stores = [first, open(first.prefix), open(first.prefix), open(first.prefix)];
      const q: QueuePlace = { queue: `q-${crypto.randomUUID()}`, priority: 0, concurrency: 3, perKey: 2 };
      const ids = await startRuns(first, q, 30);
      const keyOf = new Map(ids.map((id, i) => [id, RACE_KEYS[i % RACE_KEYS.length] as string]));
      const tally = await raceQueue(stores, q, keyOf, { workers: 8, ms: 5_000, leaseMs: 2_000 });
      expect(tally.most).toBeLessThanOrEqual(3);
      expect(tally.mostOfKey).toBeLessThanOrEqual(2);
      expect(tally.takes).toBeGreaterThan(20);
      expect(tally.full).toBeGreaterThan(0);
      const admin = await target.admin();
      const keys = queueKeys(first.prefix, q.queue);
      const broken: string[] = [];
      let holders = 0;
      for (const id of ids) {
        const [status, owner, expires, decision, member] = await admin.hmGet(first.keysOf(id).meta, [
          "status",
          "owner",
          "expires",
          "decision",
          "qmember",
        ]);
        // A lease that has some time left: its reservation cannot have been dropped as run out yet.
        if (status === "running" && owner && !owner.startsWith("(") && Number(expires) > Date.now() + 200) {
          holders += 1;
          const reserved = await admin.zScore(keys.slots, `${hex(id)}:${owner}`);
          if (reserved === null || reserved < Number(expires) + 100)
            broken.push(`${id} is not reserved past its lease`);
        }
        if (status === "running" && !decision && (member == null || (await admin.zScore(keys.ready, member)) === null))
          broken.push(`${id} is running but not in the ready index`);
      }
      await admin.close();
      expect(broken).toEqual([]);
      expect(holders).toBeLessThanOrEqual(3);
      await target.dropKeys(RedisCheckpointStore.keyPattern(first.prefix));
      for (const store of stores) await store.close();
    });
  });
}
