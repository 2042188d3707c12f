import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// Core's tests use the memory store from source; it must see this core's source too,
// so errors keep one identity (`instanceof`) in the tests.
export default defineConfig({
  ...sharedTestConfig(),
  resolve: { alias: { "@durable/core": fileURLToPath(new URL("./src/index.ts", import.meta.url)) } },
});
