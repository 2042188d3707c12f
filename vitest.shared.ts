import { fileURLToPath } from "node:url";
import type { ViteUserConfig } from "vitest/config";

/** The global setup every package's tests run first: it refuses to test against a stale build of another package. */
const GLOBAL_SETUP = fileURLToPath(new URL("./vitest.global-setup.ts", import.meta.url));

/**
 * The test settings every package shares: tests live in `test/`, each run
 * first checks the builds it loads (`GLOBAL_SETUP`), and writes a JSON report
 * that `.ci/run` sums into one `N passed, N failed` line.
 */
export function sharedTestConfig(overrides: NonNullable<ViteUserConfig["test"]> = {}): ViteUserConfig {
  return {
    test: {
      include: ["test/**/*.test.ts"],
      globalSetup: [GLOBAL_SETUP],
      reporters: ["default", "json"],
      outputFile: { json: ".vitest/report.json" },
      // A hang detector, not a measure of speed: a test that spawns processes or packs tarballs takes
      // several times as long inside the whole suite on 2 busy cores as alone.
      testTimeout: 60_000,
      ...overrides,
    },
  };
}

/**
 * The kit's crash group on a second configuration of a store whose first runs
 * every fault point (the Redis store on a Cluster after one node, the Prisma
 * store on SQLite after PostgreSQL: the same store code): one point of each
 * kind (a call in doubt, a kill inside the tool, a replay, a claim, a resume,
 * a model call), 35 trials instead of 85, so CI stays short on 2 cores. The
 * whole group runs there with `durable-conformance` or without this.
 */
export const SECOND_CONFIGURATION_CRASH_POINTS = {
  DURABLE_CRASH_POINTS:
    "call.after-started,tool.inside,call.after-done,claim.before-log-read,resume.after-answers-save,model.before-call",
};
