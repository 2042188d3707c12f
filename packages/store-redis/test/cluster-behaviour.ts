import { describe, expect, it } from "vitest";
import { StoreNotReady, StoreUnavailable } from "@durable/core/store";
import { LateTimers } from "@durable/test-utils/late-timers";
import type { NodeView } from "@durable/test-utils/redis-cluster";
import { RedisCheckpointStore, type RedisStoreOptions } from "../src/index.js";
import type { ClusterTarget } from "./cluster.js";
import { exitAfterClose } from "./exit-after-close.js";
import { row } from "./redis.js";

/** How long the judged save may take before it fails. */
const TIMEOUT_MS = 2_000;

/**
 * What only a cluster does to the store: slots, a slot that migrates under a
 * write (TRYAGAIN, ASK, MOVED), each master's persistence, and `WAIT` for a
 * replica. Registered by cluster.test.ts on its cluster.
 */
export function clusterBehaviour(target: ClusterTarget): void {
  const open = (options: RedisStoreOptions = {}) =>
    new RedisCheckpointStore(() => target.client(), { prefix: `test:${crypto.randomUUID()}`, ...options });

  /** The slot of a run's keys, the master that holds it and another master. */
  async function placeOf(store: RedisCheckpointStore, runId: string) {
    const cluster = target.cluster;
    const keys = Object.values(store.keysOf(runId));
    const slots = new Set(await cluster.keySlots(keys));
    expect(slots.size).toBe(1);
    const slot = [...slots][0] ?? -1;
    const { master, replicas } = await cluster.masterOf(slot);
    const other = (await cluster.view()).find((n) => n.role === "master" && !n.failed && n.id !== master.id);
    if (other === undefined) throw new Error("no second master");
    return { slot, master, replicas, other };
  }

  /** Starts moving a slot: importing on the target, migrating on the source (what `redis-cli --cluster reshard` does first). */
  async function startMigration(slot: number, from: NodeView, to: NodeView): Promise<void> {
    await target.cluster.send(to.port, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", from.id]);
    await target.cluster.send(from.port, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", to.id]);
  }

  /** Moves every key of the slot, then gives the slot to the target on every master. */
  async function moveKeys(slot: number, from: NodeView, to: NodeView): Promise<void> {
    const keys = (await target.cluster.send(from.port, ["CLUSTER", "GETKEYSINSLOT", String(slot), "1000"])) as string[];
    await target.cluster.send(from.port, ["MIGRATE", "127.0.0.1", String(to.port), "", "0", "5000", "KEYS", ...keys]);
  }

  async function endMigration(slot: number, to: NodeView): Promise<void> {
    for (const node of (await target.cluster.view()).filter((n) => n.role === "master" && !n.failed))
      await target.cluster.send(node.port, ["CLUSTER", "SETSLOT", String(slot), "NODE", to.id]);
  }

  describe("RedisCheckpointStore on a Redis Cluster", () => {
    it("a run's keys and its bucket's indexes share one slot; a prefix's buckets spread over the masters", async () => {
      const store = open();
      const masters = new Set<string>();
      for (let i = 0; i < 32; i++) masters.add((await placeOf(store, `run-${i}`)).master.id);
      expect(masters.size).toBeGreaterThan(1);
      await store.close();
    });

    it("a write to a slot that migrates key by key is retried (TRYAGAIN), a read follows ASK, and the write lands once the slot moved", async () => {
      const store = open();
      await store.save("r", 0, row());
      await store.recordCall("r", 0, 0, "sealed-0");
      const { slot, master, other } = await placeOf(store, "r");
      await startMigration(slot, master, other);
      let landed = false;
      const writing = store.save("r", 1, row()).then(() => {
        landed = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(landed).toBe(false);
      await moveKeys(slot, master, other);
      // Every key of the run is on the new master, the slot not yet: a read is sent there with ASKING.
      expect((await store.latest("r")).step).toBe(0);
      await endMigration(slot, other);
      await writing;
      expect((await store.latest("r")).step).toBe(1);
      expect(await store.calls("r")).toEqual([{ runId: "r", segment: 0, seq: 0, sealed: "sealed-0" }]);
      expect(
        Number(await target.cluster.send(other.port, ["CLUSTER", "COUNTKEYSINSLOT", String(slot)])),
      ).toBeGreaterThan(0);
      await store.close();
    });

    it("a slot that stays mid-migration past operationTimeoutMs: StoreUnavailable naming TRYAGAIN, and nothing written", async () => {
      // The run is set up and read back on the default timeout: only the save into the migrating slot is judged.
      const store = open();
      await store.save("r", 0, row());
      const { slot, master, other } = await placeOf(store, "r");
      // A timeout a loaded machine's replies fit in (at 600 ms, a reply alone outlasted it beside the Prisma suite).
      const timed = open({ prefix: store.prefix, operationTimeoutMs: TIMEOUT_MS });
      // Connected before the slot migrates: on a loaded machine, connecting alone took longer than the timeout.
      expect((await timed.latest("r")).step).toBe(0);
      const timers = new LateTimers();
      await startMigration(slot, master, other);
      try {
        const started = performance.now();
        const error = await timed.save("r", 1, row()).catch((e: unknown) => e);
        const ended = performance.now();
        expect(error).toBeInstanceOf(StoreUnavailable);
        expect(String((error as Error).message)).toMatch(/TRYAGAIN/);
        // Within the timeout and a second, less what this process's own timers ran late meanwhile (a busy machine).
        await timers.settled();
        expect(ended - started - timers.within(started, ended)).toBeLessThan(TIMEOUT_MS + 1000);
      } finally {
        timers.stop();
        for (const node of [master, other])
          await target.cluster.send(node.port, ["CLUSTER", "SETSLOT", String(slot), "STABLE"]);
      }
      expect((await store.latest("r")).step).toBe(0);
      await timed.close();
      await store.close();
    });

    it("requireDurable reads every master: one with appendfsync everysec refuses with StoreNotReady", async () => {
      const store = open({ requireDurable: true });
      await store.save("r", 0, row());
      await store.close();
      const masters = (await target.cluster.view()).filter((n) => n.role === "master" && !n.failed);
      const last = masters[masters.length - 1];
      if (last === undefined) throw new Error("no master");
      await target.cluster.send(last.port, ["CONFIG", "SET", "appendfsync", "everysec"]);
      try {
        const refusing = open({ requireDurable: true });
        await expect(refusing.save("r", 0, row())).rejects.toThrow(StoreNotReady);
        await refusing.close();
      } finally {
        await target.cluster.send(last.port, ["CONFIG", "SET", "appendfsync", "always"]);
      }
    });

    it("replicas: 1 resolves a write once the master's replica holds it; with the replica frozen, StoreUnavailable, the write applied on the master", async () => {
      // Long enough for a replica's acknowledgment on a busy machine (1 s failed the first save once): only the
      // frozen replica's write must run out of it.
      const store = open({ replicas: 1, operationTimeoutMs: 5_000 });
      await store.save("r", 0, row());
      const { replicas } = await placeOf(store, "r");
      const replica = replicas[0];
      if (replica === undefined) throw new Error("the master has no replica");
      target.cluster.signal(replica.port, "SIGSTOP");
      try {
        const error = await store.save("r", 1, row()).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreUnavailable);
        expect(String((error as Error).message)).toMatch(/0 of 1 replicas acknowledged it within \d+ ms/);
      } finally {
        target.cluster.signal(replica.port, "SIGCONT");
      }
      expect((await store.latest("r")).step).toBe(1);
      await store.save("r", 2, row());
      await store.close();
    });

    it("lets the process exit once the store on a cluster closed", async () => {
      const script = `
        import { createCluster } from "redis";
        import { RedisCheckpointStore } from "./dist/index.js";
        const store = new RedisCheckpointStore(() => createCluster({ rootNodes: ${JSON.stringify(target.cluster.rootNodes)} }), { prefix: "exit" });
        await store.latest("r").catch(() => {});
        await store.close();
        console.log("closed");`;
      const { code, lingeredMs } = await exitAfterClose(script, 2_000);
      expect(code).toBe(0);
      expect(lingeredMs).toBeLessThan(2_000);
    }, 40_000);

    // Last: it changes which node is master of a slot.
    it("without replicas, a write its master acknowledged before the replica got it is lost when the replica takes over", async () => {
      const store = open();
      await store.save("r", 0, row());
      const { master, replicas } = await placeOf(store, "r");
      const replica = replicas[0];
      if (replica === undefined) throw new Error("the master has no replica");
      await target.cluster.settled();
      // The replica frozen and cut off: the write stays on its master, as when a master dies a moment after a write.
      target.cluster.signal(replica.port, "SIGSTOP");
      try {
        await target.cluster.send(master.port, ["CLIENT", "KILL", "TYPE", "replica"]);
        await store.save("r", 1, row());
        await target.cluster.killMaster(master.port);
      } finally {
        target.cluster.signal(replica.port, "SIGCONT");
      }
      await target.cluster.send(replica.port, ["CLUSTER", "FAILOVER", "TAKEOVER"]);
      await target.cluster.settled();
      await store.close();
      const after = open({ prefix: store.prefix });
      expect((await after.latest("r")).step).toBe(0);
      await after.close();
      await target.cluster.restart(master.port);
      await target.cluster.settled();
    }, 60_000);
  });
}
