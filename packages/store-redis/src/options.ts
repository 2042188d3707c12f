import { InvalidInput } from "@durable/core/store";
import { checkOptions, type OptionTable } from "@durable/core/runner";
import { ReplicaWait } from "./replication.js";

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
  /**
   * How far apart the clocks of the Redis masters may be, in ms (a cluster:
   * a queue's state and its runs may be on different masters). A slot of a
   * queue is reserved this long past the lease it covers, so its limits
   * hold while the masters' clocks differ by less. Default 100; 0 on one
   * node is exact. A dead worker's slot is free again this long after its lease.
   */
  readonly clockSkewMs?: number;
}

/** The options the store takes, for `checkOptions` (one it does not take is named with the closest it does). */
const REDIS_STORE_OPTIONS: OptionTable<RedisStoreOptions> = {
  prefix: true,
  ttlSeconds: true,
  operationTimeoutMs: true,
  requireDurable: "boolean",
  replicas: true,
  clockSkewMs: true,
};

/** The largest `clockSkewMs`: a minute. */
const MAX_SKEW_MS = 60_000;

/** The numbers of the options, checked (`InvalidInput` naming the option), with their defaults. */
export function resolveOptions(options: RedisStoreOptions): {
  ttlSeconds: number;
  timeoutMs: number;
  replicas: number;
  clockSkewMs: number;
} {
  checkOptions("RedisCheckpointStore", options, REDIS_STORE_OPTIONS);
  const ttlSeconds = options.ttlSeconds ?? 0;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 0)
    throw new InvalidInput(`ttlSeconds must be a whole number ≥ 0, not ${ttlSeconds}.`);
  const timeoutMs = options.operationTimeoutMs ?? 5000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)
    throw new InvalidInput(`operationTimeoutMs must be a whole number of ms > 0, not ${timeoutMs}.`);
  const clockSkewMs = options.clockSkewMs ?? 100;
  if (!Number.isSafeInteger(clockSkewMs) || clockSkewMs < 0 || clockSkewMs > MAX_SKEW_MS)
    throw new InvalidInput(`clockSkewMs must be a whole number of ms from 0 to ${MAX_SKEW_MS}, not ${clockSkewMs}.`);
  return { ttlSeconds, timeoutMs, replicas: ReplicaWait.check(options.replicas ?? 0), clockSkewMs };
}
