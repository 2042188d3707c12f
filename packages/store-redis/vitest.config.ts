import { defineConfig } from "vitest/config";
import { SECOND_CONFIGURATION_CRASH_POINTS, sharedTestConfig } from "../../vitest.shared.ts";

// The files on the shared Redis run one at a time (one pauses it: CLIENT PAUSE). The cluster file has a
// cluster of its own, so it runs beside them (those files mostly wait: timeouts, TTLs, a silent network), as a
// vitest process of its own: `pnpm test` runs the two projects side by side (scripts/vitest-side-by-side.mjs).
const CLUSTER = "test/cluster.test.ts";
// Each project says its own files: a project's include would add to an inherited one, not replace it.
const { include = [], ...shared } = sharedTestConfig().test ?? {};
export default defineConfig({
  test: {
    ...shared,
    projects: [
      { extends: true, test: { name: "one node", include, exclude: [CLUSTER], fileParallelism: false } },
      { extends: true, test: { name: "cluster", include: [CLUSTER], env: SECOND_CONFIGURATION_CRASH_POINTS } },
    ],
  },
});
