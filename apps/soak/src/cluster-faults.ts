/**
 * The cluster fault soak: the workers take the runs on a Redis Cluster of the
 * soak's own (3 masters, a replica each, AOF always on every node) while a
 * master is SIGKILLed, so its replica takes over, and slots holding the
 * soak's runs move to another master, key by key, under the workers' writes.
 */
import { BUCKETS } from "@durable/store-redis";
import { type NodeView, OwnCluster, slotsOf } from "@durable/test-utils/redis-cluster";
import { type Fault, type FaultSoakOptions, type FaultSoakReport, underFaults } from "./faults.js";
import { clusterUrl } from "./store.js";

/** How long a master may be silent before its replica takes over: short, so a failover fits in a short soak. */
const NODE_TIMEOUT_MS = 1_000;

/** Starts the cluster, soaks it under a failover and a reshard again and again until the runs are done, and stops it. */
export async function clusterFaultSoak(options: FaultSoakOptions): Promise<FaultSoakReport> {
  const cluster = await OwnCluster.start({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  try {
    const log = options.log ?? (() => {});
    return await underFaults(clusterUrl(cluster.rootNodes), options, [failover(cluster, log), reshard(cluster, log)]);
  } finally {
    await cluster.stop();
  }
}

/** Kills the master holding most of the soak's buckets; once its replica took over, starts it again: it rejoins as a replica. */
function failover(cluster: OwnCluster, log: (line: string) => void): Fault {
  return {
    name: "SIGKILL a master (its replica takes over)",
    async apply(prefix) {
      const slots = await bucketSlots(cluster, prefix);
      const masters = (await liveMasters(cluster)).sort((a, b) => held(b, slots).length - held(a, slots).length);
      const victim = masters[0];
      if (victim === undefined) throw new Error("the cluster has no live master.");
      const started = Date.now();
      await cluster.killMaster(victim.port);
      await cluster.settled();
      log(
        `killed master ${victim.port} (${held(victim, slots).length} of the soak's ${BUCKETS} buckets): its replica took over in ${Date.now() - started} ms`,
      );
      await cluster.restart(victim.port);
      await cluster.settled();
    },
  };
}

/**
 * Moves slots from one master to another with `redis-cli --cluster reshard`,
 * which takes a master's lowest slots: as many as reach the first slot holding
 * one of the soak's buckets, from the master where that is fewest.
 */
function reshard(cluster: OwnCluster, log: (line: string) => void): Fault {
  return {
    name: "reshard slots holding runs to another master",
    async apply(prefix) {
      const slots = await bucketSlots(cluster, prefix);
      const masters = await liveMasters(cluster);
      const moves = masters
        .map((master) => {
          const own = slotsOf(master);
          const first = own.findIndex((slot) => slots.includes(slot));
          return { master, count: first + 1 };
        })
        .filter((move) => move.count > 0)
        .sort((a, b) => a.count - b.count);
      const move = moves[0];
      const to = masters.find((master) => master.port !== move?.master.port);
      if (move === undefined || to === undefined) throw new Error("no two masters to reshard between.");
      const moving = slotsOf(move.master)
        .slice(0, move.count)
        .filter((slot) => slots.includes(slot));
      const keys = await Promise.all(
        moving.map(async (slot) =>
          Number(await cluster.send(move.master.port, ["CLUSTER", "COUNTKEYSINSLOT", String(slot)])),
        ),
      );
      const started = Date.now();
      await cluster.reshard(move.master.port, to.port, move.count);
      await cluster.settled();
      log(
        `resharded ${move.count} slots from master ${move.master.port} to ${to.port} in ${Date.now() - started} ms: ` +
          `${moving.length} of them the soak's buckets, ${keys.reduce((a, b) => a + b, 0)} keys`,
      );
    },
  };
}

/** The slot of each of the soak's buckets: a bucket's keys share the hash tag `{<prefix>.<bucket>}`. */
function bucketSlots(cluster: OwnCluster, prefix: string): Promise<number[]> {
  return cluster.keySlots(Array.from({ length: BUCKETS }, (_, bucket) => `{${prefix}.${bucket}}`));
}

async function liveMasters(cluster: OwnCluster): Promise<NodeView[]> {
  return (await cluster.view()).filter((node) => node.role === "master" && !node.failed && node.slots.length > 0);
}

/** Which of `slots` a master holds. */
function held(master: NodeView, slots: readonly number[]): number[] {
  const own = new Set(slotsOf(master));
  return slots.filter((slot) => own.has(slot));
}
