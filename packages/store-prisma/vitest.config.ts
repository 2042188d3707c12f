import { configDefaults, defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

const KIT_ON_POSTGRESQL = "test/conformance-postgresql.test.ts";
const shared = sharedTestConfig().test;

// Two projects that run side by side: the kit on PostgreSQL, the longest file, alone in one; every
// other file one at a time in the other. The SQLite files stay one at a time: their crash groups start
// many processes, and side by side on a busy machine they starve each other's SQLite transactions.
export default defineConfig({
  test: {
    ...shared,
    projects: [
      { test: { ...shared, name: "kit on PostgreSQL", include: [KIT_ON_POSTGRESQL] } },
      {
        test: {
          ...shared,
          name: "the rest",
          exclude: [...configDefaults.exclude, KIT_ON_POSTGRESQL],
          fileParallelism: false,
        },
      },
    ],
  },
});
