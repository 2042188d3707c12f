import { configDefaults, defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

const KIT_ON_POSTGRESQL = "test/conformance-postgresql.test.ts";
const shared = sharedTestConfig().test;

// Two projects: the kit on PostgreSQL, the longest file, alone in one; every other file one at a time in
// the other. The SQLite files stay one at a time: their crash groups start many processes, and side by side
// on a busy machine they starve each other's SQLite transactions. `pnpm test` runs the two projects as two
// vitest processes side by side (scripts/vitest-side-by-side.mjs): one vitest run would take them one after the other.
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
