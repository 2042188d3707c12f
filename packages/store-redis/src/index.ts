export { RedisCheckpointStore } from "./redis-store.js";
export type { RedisStoreOptions } from "./options.js";
export type { ClusterNode, RedisLike, RedisLikeClient, RedisLikeCluster } from "./client.js";
export { BUCKETS, PREFIX_PATTERN, type RunKeys } from "./keys.js";
