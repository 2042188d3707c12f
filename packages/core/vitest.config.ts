import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// Core's tests use the memory store from source; it must see this core's source too,
// so errors keep one identity (`instanceof`) in the tests. Each entry point maps to its source file.
const entry = (file: string) => fileURLToPath(new URL(`./src/${file}.ts`, import.meta.url));
export default defineConfig({
  ...sharedTestConfig(),
  resolve: {
    alias: [
      { find: /^@durable\/core$/, replacement: entry("index") },
      { find: /^@durable\/core\/store$/, replacement: entry("store") },
      { find: /^@durable\/core\/runner$/, replacement: entry("runner") },
    ],
  },
});
