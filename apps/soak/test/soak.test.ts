import { describe, expect, it } from "vitest";
import { DATABASE_URL, postgresAnswers } from "@durable/test-utils/postgres";
import { REDIS_URL, redisAnswers } from "@durable/test-utils/redis";
import { SOAK_DEFAULTS, soak } from "../src/soak.js";
import { vacuousSoak } from "../src/verdict.js";

const targets = [
  { name: "Redis", url: REDIS_URL, up: await redisAnswers() },
  { name: "PostgreSQL", url: DATABASE_URL, up: await postgresAnswers() },
];

describe("the soak: workers serving one flow are killed and restarted at random while they take the runs", () => {
  // Fewer runs than the default, slower tools and saves, and disturbances more often: CI stays short, and the
  // runs still last through some 15 disturbances, enough to see every kind of failover several times.
  const [runs, toolMs, saveDelayMs, killEveryMs] = [120, 400, 100, [400, 1_200] as const];
  it.for(targets)(
    `$name: ${runs} runs, ${SOAK_DEFAULTS.workers} workers, a SIGKILL or a SIGTERM restart every 0.4–1.2 s: every run done, none lost, no live lease claimed, no call run twice unreported, in doubt only after a death; kills inside tools, runs taken over, runs in doubt and calls replayed all seen`,
    // A guard against a hang, not a measure: alone, PostgreSQL's takes about 70 s, and three times that under CI's load.
    { timeout: 330_000 },
    async ({ name, url, up }, ctx) => {
      if (!up) ctx.skip(`${name} is not running`);
      const report = await soak({
        ...SOAK_DEFAULTS,
        runs,
        toolMs,
        saveDelayMs,
        killEveryMs,
        deadlineSeconds: 300,
        store: url,
      });
      console.log(`${name}: ${JSON.stringify({ ...report, violations: report.violations.length })}`);
      expect(report.violations).toEqual([]);
      expect(report.takeOvers).toBe(0);
      // Kills inside tools, SIGTERM restarts, runs taken over, runs in doubt, calls replayed: failover really ran.
      expect(vacuousSoak(report)).toBeUndefined();
    },
  );
});
