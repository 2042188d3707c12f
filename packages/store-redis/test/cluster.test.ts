import { afterAll, beforeAll, describe, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { clusterTestsWanted } from "@durable/test-utils/redis-cluster";
import { clusterBehaviour } from "./cluster-behaviour.js";
import { clusterQueues } from "./queue-cluster.js";
import { ClusterTarget } from "./cluster.js";
import { redisInitializer } from "./redis.js";

// One cluster for the whole file, stopped after it however it ends: a cluster takes seconds to start. Every group
// of the kit runs on it (each store on its own prefix), then what only a cluster does.
if (clusterTestsWanted()) {
  const target = new ClusterTarget();
  beforeAll(() => target.start(), 60_000);
  afterAll(() => target.stop(), 60_000);

  runConformance(redisInitializer(target));
  runConformance(redisInitializer(target, 1), { groups: ["ttl"] });
  clusterBehaviour(target);
  clusterQueues(target);
} else {
  describe("redis cluster", () =>
    it("runs unless DURABLE_CLUSTER_TESTS=0, with redis-server and redis-cli installed (see the warning above)", (ctx) =>
      ctx.skip("not asked for, or the tools are missing")));
}
