// Opens the Redis store on a cluster in the conformance kit's child processes: the handle is
// JSON, { prefix, rootNodes: [{ url }] }. Plain JavaScript on the built package, as open-store.mjs.
import { createCluster } from "redis";
import { RedisCheckpointStore } from "../dist/index.js";

export default (handle) => {
  const { prefix, rootNodes } = JSON.parse(handle);
  return new RedisCheckpointStore(() => createCluster({ rootNodes }), { prefix });
};
