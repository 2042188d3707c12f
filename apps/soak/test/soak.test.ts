import pg from "pg";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { SOAK_DEFAULTS, soak } from "../src/soak.js";
import { vacuousSoak } from "../src/verdict.js";

const REDIS_URL = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
const DATABASE_URL = process.env["DATABASE_URL"] ?? "postgresql://postgres@127.0.0.1:5432/test";

/** Whether the server answers; in CI a missing one fails loudly, locally its soak is skipped with how to start it. */
async function answers(name: string, probe: () => Promise<void>, start: string): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (error) {
    if (process.env["CI"] === "true") throw new Error(`${name} does not answer (${String(error)}); CI needs it.`);
    console.warn(`Skipping the ${name} soak: nothing answers. Start it with: ${start}`);
    return false;
  }
}

const targets = [
  {
    name: "Redis",
    url: REDIS_URL,
    up: await answers("Redis", async () => {
      const c = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: 2000 } });
      c.on("error", () => {});
      await c.connect();
      await c.close();
    }, "redis-server --daemonize yes --port 6379"),
  },
  {
    name: "PostgreSQL",
    url: DATABASE_URL,
    up: await answers("PostgreSQL", async () => {
      const c = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 });
      await c.connect();
      await c.end();
    }, "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"),
  },
];

describe("the soak: workers killed at random while they take the runs", () => {
  // Kills a little more often than the default, so a few seconds of Redis soak still land some inside tools.
  const killEveryMs = [200, 1_000] as const;
  it.for(targets)(`$name: ${SOAK_DEFAULTS.runs} runs, ${SOAK_DEFAULTS.workers} workers, a SIGKILL every 0.2–1 s: every run done, none lost, no call run twice unreported, some runs in doubt and some calls replayed`, { timeout: 300_000 }, async ({ name, url, up }, ctx) => {
    if (!up) ctx.skip(`${name} is not running`);
    const report = await soak({ ...SOAK_DEFAULTS, killEveryMs, store: url });
    console.log(`${name}: ${JSON.stringify({ ...report, violations: report.violations.length })}`);
    expect(report.violations).toEqual([]);
    // Kills that landed inside tools and between a result and its checkpoint: recovery really ran.
    expect(vacuousSoak(report)).toBeUndefined();
  });
});
