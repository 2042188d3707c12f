import type { OptionTable } from "@durable/core/runner";

/** Options of `RedisCheckpointStore`. */
export interface RedisStoreOptions {
  /**
   * Every key of this store starts with it, then `:{`: one prefix per tenant.
   * 1 to 64 letters, digits or `_ . : -`; default `"durable"`.
   */
  readonly prefix?: string;
  /**
   * Every key of a run that ended (done or failed) expires this long after
   * its last write. An unfinished run never expires: a crashed one keeps the
   * evidence of its calls in doubt until it is recovered, decided or deleted.
   * 0 or unset: never.
   */
  readonly ttlSeconds?: number;
  /** How long an operation (and `close`) waits for Redis before `StoreUnavailable`; default 5000 ms. */
  readonly operationTimeoutMs?: number;
  /**
   * Refuse (`StoreNotReady`) a Redis whose persistence can lose acknowledged
   * writes, instead of warning once; it must run with `appendonly yes` and
   * `appendfsync always`. Default false. A Redis that refuses `CONFIG GET` is not checked.
   * On a cluster, every master is checked.
   */
  readonly requireDurable?: boolean;
  /**
   * How many replicas of the master must hold each write before it resolves
   * (`WAIT`, for half of what is left of `operationTimeoutMs`; fewer is
   * `StoreUnavailable`). Default 0: replication is asynchronous, and a master
   * that dies before its replica got a write loses it on failover.
   */
  readonly replicas?: number;
}

export const REDIS_STORE_OPTIONS: OptionTable<RedisStoreOptions> = {
  prefix: true,
  ttlSeconds: true,
  operationTimeoutMs: true,
  requireDurable: "boolean",
  replicas: true,
};
