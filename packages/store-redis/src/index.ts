export { RedisCheckpointStore, BUCKETS, type RedisStoreOptions, type RedisLikeClient } from "./redis-store.js";
