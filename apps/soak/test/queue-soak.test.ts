import { describe, expect, it } from "vitest";
import { REDIS_URL, redisAnswers } from "@durable/test-utils/redis";
import { QUEUE_SOAK_DEFAULTS } from "../src/queue.js";
import { SOAK_DEFAULTS, soak } from "../src/soak.js";
import { vacuousSoak } from "../src/verdict.js";

// On Redis only in CI: the queue's limits are each store's own (the kit's queue group proves them on every store);
// what the soak adds is the fleet under kills, which one store shows. `pnpm soak --queue` runs it on any.
const targets = [{ name: "Redis", url: REDIS_URL, up: await redisAnswers() }];

describe("the queue soak: a starter process starts the runs on one queue while the workers serving it are killed and restarted", () => {
  const [runs, toolMs, killEveryMs] = [150, 60, [400, 1_200] as const];
  const { concurrency, perKey } = QUEUE_SOAK_DEFAULTS;
  it.for(targets)(
    `$name: ${runs} runs, ${SOAK_DEFAULTS.workers} workers: never more than ${concurrency} runs inside a tool at once nor ${perKey + 1} of one customer, every run done, no call run twice unreported`,
    { timeout: 330_000 },
    async ({ name, url, up }, ctx) => {
      if (!up) ctx.skip(`${name} is not running`);
      const report = await soak({
        ...SOAK_DEFAULTS,
        runs,
        toolMs,
        saveDelayMs: 0,
        killEveryMs,
        deadlineSeconds: 300,
        store: url,
        queue: QUEUE_SOAK_DEFAULTS,
      });
      console.log(`${name}: ${JSON.stringify({ ...report, violations: report.violations.length })}`);
      expect(report.violations).toEqual([]);
      expect(report.queue?.mostInside).toBeLessThanOrEqual(concurrency);
      expect(report.queue?.mostOfOneCustomer).toBeLessThanOrEqual(perKey);
      // Runs of the queue did overlap inside tools (how many at most depends on the machine's load).
      expect(report.queue?.mostInside).toBeGreaterThanOrEqual(2);
      expect(vacuousSoak(report)).toBeUndefined();
    },
  );
});
