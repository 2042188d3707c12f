import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// The test files share one PostgreSQL server: run them one at a time.
export default defineConfig(sharedTestConfig({ fileParallelism: false }));
