import { afterAll, beforeAll } from "vitest";
import { runConformance } from "@durable/conformance";
import { ClusterTarget } from "./cluster.js";
import { redisInitializer } from "./redis.js";

// One cluster for the whole file, every group of the kit on it (each store on its own prefix): a cluster takes seconds to start.
const target = new ClusterTarget();
beforeAll(() => target.start(), 60_000);
afterAll(() => target.stop(), 60_000);

runConformance(redisInitializer(target));
runConformance(redisInitializer(target, 1), { groups: ["ttl"] });
