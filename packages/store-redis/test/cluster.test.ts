import { afterAll, beforeAll, describe, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { clusterToolsInstalled } from "@durable/test-utils/redis-cluster";
import { clusterBehaviour } from "./cluster-behaviour.js";
import { ClusterTarget } from "./cluster.js";
import { redisInitializer } from "./redis.js";

// One cluster for the whole file, stopped after it however it ends: a cluster takes seconds to start. Every group
// of the kit runs on it (each store on its own prefix), then what only a cluster does.
if (clusterToolsInstalled()) {
  const target = new ClusterTarget();
  beforeAll(() => target.start(), 60_000);
  afterAll(() => target.stop(), 60_000);

  runConformance(redisInitializer(target));
  runConformance(redisInitializer(target, 1), { groups: ["ttl"] });
  clusterBehaviour(target);
} else {
  describe("redis cluster", () =>
    it("needs redis-server and redis-cli (see the warning above)", (ctx) => ctx.skip("they are not installed")));
}
