/** Opens the Redis store a worker process uses: the argument is the prefix. */
import { RedisCheckpointStore } from "../src/index.js";
import { client } from "./redis.js";

export default (prefix: string) => new RedisCheckpointStore(client, { prefix });
