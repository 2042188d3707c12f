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
