import { createCluster } from "redis";
import { OwnCluster } from "@durable/test-utils/redis-cluster";
import type { RedisTarget } from "./redis.js";

/**
 * A test file's own Redis Cluster (3 masters, a replica each, AOF always),
 * started before its tests and stopped after them, failed or not: the stores
 * of the file connect with `createCluster`, every store on its own prefix.
 */
export class ClusterTarget implements RedisTarget {
  readonly name = "redis cluster";
  readonly opener = new URL("./open-cluster-store.mjs", import.meta.url).href;
  #cluster: OwnCluster | undefined;

  async start(): Promise<void> {
    // In memory: the suites kill workers, never nodes, and fsync on disk would be most of their time.
    this.#cluster = await OwnCluster.start({ inMemory: true });
  }

  async stop(): Promise<void> {
    await this.#cluster?.stop();
  }

  get cluster(): OwnCluster {
    if (this.#cluster === undefined) throw new Error("the test cluster is not started: call start() in beforeAll.");
    return this.#cluster;
  }

  client() {
    return createCluster({ rootNodes: this.cluster.rootNodes });
  }

  admin() {
    return this.cluster.admin();
  }

  dropKeys(pattern: string): Promise<void> {
    return this.cluster.dropKeys(pattern);
  }

  handle(prefix: string): string {
    return JSON.stringify({ prefix, rootNodes: this.cluster.rootNodes });
  }
}
