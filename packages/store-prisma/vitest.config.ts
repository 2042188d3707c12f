import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// Each test file has a database of its own (PostgreSQL) or files of its own (SQLite), so files run side by side.
export default defineConfig(sharedTestConfig());
