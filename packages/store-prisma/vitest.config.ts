import { configDefaults, defineConfig } from "vitest/config";
import { SECOND_CONFIGURATION_CRASH_POINTS, sharedTestConfig } from "../../vitest.shared.ts";

const KIT_ON_POSTGRESQL = "test/conformance-postgresql.test.ts";
const KIT_ON_SQLITE = "test/conformance-sqlite.test.ts";
const shared = sharedTestConfig().test;

// Three projects: the kit on PostgreSQL and the kit on SQLite, the two longest files, each alone in one; every
// other file one at a time in the third. The kit on SQLite stays apart from the other SQLite files: its crash
// groups start many processes, and beside another crash group on a busy machine they starve each other's
// SQLite transactions. `pnpm test` runs the three projects as three vitest processes side by side
// (scripts/vitest-side-by-side.mjs): one vitest run would take them one after the other.
export default defineConfig({
  test: {
    ...shared,
    projects: [
      { test: { ...shared, name: "kit on PostgreSQL", include: [KIT_ON_POSTGRESQL] } },
      { test: { ...shared, name: "kit on SQLite", include: [KIT_ON_SQLITE], env: SECOND_CONFIGURATION_CRASH_POINTS } },
      {
        test: {
          ...shared,
          name: "the rest",
          exclude: [...configDefaults.exclude, KIT_ON_POSTGRESQL, KIT_ON_SQLITE],
          fileParallelism: false,
        },
      },
    ],
  },
});
