import { describe, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { initializer, postgresAnswers, sqliteUrl, testDatabase } from "./databases.js";

// The test files share one PostgreSQL server: each makes its own database and drops it.
const db = testDatabase();
if (await postgresAnswers()) {
  runConformance({ ...initializer("prisma, PostgreSQL", () => db.url), beforeAll: db.create, afterAll: db.drop });
} else {
  describe("prisma on PostgreSQL", () => it("needs PostgreSQL at DATABASE_URL", (ctx) => ctx.skip("PostgreSQL is not running")));
}
runConformance(initializer("prisma, SQLite", sqliteUrl));
