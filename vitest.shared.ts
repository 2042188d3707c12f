import type { ViteUserConfig } from "vitest/config";

/**
 * The test settings every package shares: tests live in `test/`, and each run
 * writes a JSON report that `.ci/run` sums into one `N passed, N failed` line.
 */
export function sharedTestConfig(overrides: NonNullable<ViteUserConfig["test"]> = {}): ViteUserConfig {
  return {
    test: {
      include: ["test/**/*.test.ts"],
      reporters: ["default", "json"],
      outputFile: { json: ".vitest/report.json" },
      testTimeout: 20_000,
      ...overrides,
    },
  };
}
