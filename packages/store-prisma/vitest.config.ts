import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// One test file at a time: the crash groups start many processes, and side by side
// on a busy machine they starve each other's SQLite transactions past their time limits.
export default defineConfig(sharedTestConfig({ fileParallelism: false }));
