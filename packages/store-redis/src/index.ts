export { RedisCheckpointStore, type RedisStoreOptions } from "./redis-store.js";
export type { RedisLikeClient } from "./connection.js";
export { BUCKETS, PREFIX_PATTERN, type RunKeys } from "./keys.js";
