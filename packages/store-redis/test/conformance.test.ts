import { describe, it } from "vitest";
import { runConformance } from "@durable/conformance";
import redis, { redisAnswers, redisWithTtl } from "./redis.js";

// These files share one Redis server; each store has its own random prefix.
if (await redisAnswers()) {
  runConformance(redis);
  runConformance(redisWithTtl, { groups: ["ttl"] });
} else {
  describe("redis conformance", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}
