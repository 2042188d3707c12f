import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// The test files share one Redis server and one pauses it (CLIENT PAUSE): run them one at a time. The cluster
// file has a cluster of its own; run beside the others (two vitest projects) it took as long here: 2 cores.
export default defineConfig(sharedTestConfig({ fileParallelism: false }));
