import { InvalidInput, StoreUnavailable } from "@durable/core/store";
import { nodeOfKey, type RedisLike } from "./client.js";

/**
 * The `replicas` option: after each write, `WAIT <replicas> <ms>` on the
 * connection that wrote, so a write resolves only once that many replicas of
 * its master hold it. It waits half of what is left of the operation's time,
 * so its own answer comes back before the operation times out. Redis replicates asynchronously: without
 * it, a write acknowledged by a master that dies before its replica got it
 * is lost when the replica takes over.
 */
export class ReplicaWait {
  constructor(readonly replicas: number) {}

  /** Checks the option: a whole number ≥ 0 (0: no wait). */
  static check(replicas: unknown): number {
    if (typeof replicas === "number" && Number.isSafeInteger(replicas) && replicas >= 0) return replicas;
    throw new InvalidInput(
      `replicas must be a whole number ≥ 0 (how many replicas must hold each write before it resolves), not ${String(replicas)}.`,
    );
  }

  /**
   * Waits until the replicas of the master that holds `key`'s slot have every
   * write so far; `StoreUnavailable` when they do not by half of what is left
   * until `deadline` (ms since the epoch).
   */
  async after(client: RedisLike, key: string, deadline: number): Promise<void> {
    const node = await nodeOfKey(client, key);
    if (node.sendCommand === undefined)
      throw new InvalidInput("the replicas option needs a client with sendCommand, as node-redis's clients have.");
    const ms = Math.max(1, Math.floor((deadline - Date.now()) / 2));
    const acknowledged = Number(await node.sendCommand(["WAIT", String(this.replicas), String(ms)]));
    if (acknowledged >= this.replicas) return;
    throw new StoreUnavailable(
      `the write was applied, but ${acknowledged} of ${this.replicas} replicas acknowledged it within ${ms} ms: ` +
        "it is lost if its master fails before a replica gets it; whether it lasts is unknown.",
    );
  }
}
