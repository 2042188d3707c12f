import { describe, expect, it } from "vitest";
import { DATABASE_URL, postgresAnswers } from "@durable/test-utils/postgres";
import { REDIS_URL, redisAnswers } from "@durable/test-utils/redis";
import { SOAK_DEFAULTS, soak } from "../src/soak.js";
import { vacuousSoak } from "../src/verdict.js";

const targets = [
  { name: "Redis", url: REDIS_URL, up: await redisAnswers() },
  { name: "PostgreSQL", url: DATABASE_URL, up: await postgresAnswers() },
];

describe("the soak: workers killed at random while they take the runs", () => {
  // Kills a little more often than the default, so a few seconds of Redis soak still land some inside tools.
  const killEveryMs = [200, 1_000] as const;
  it.for(targets)(
    `$name: ${SOAK_DEFAULTS.runs} runs, ${SOAK_DEFAULTS.workers} workers, a SIGKILL every 0.2–1 s: every run done, none lost, no call run twice unreported, some runs in doubt and some calls replayed`,
    { timeout: 300_000 },
    async ({ name, url, up }, ctx) => {
      if (!up) ctx.skip(`${name} is not running`);
      const report = await soak({ ...SOAK_DEFAULTS, killEveryMs, store: url });
      console.log(`${name}: ${JSON.stringify({ ...report, violations: report.violations.length })}`);
      expect(report.violations).toEqual([]);
      // Kills that landed inside tools and between a result and its checkpoint: recovery really ran.
      expect(vacuousSoak(report)).toBeUndefined();
    },
  );
});
