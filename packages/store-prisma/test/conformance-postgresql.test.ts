import { describe, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { initializer, postgresAnswers, testDatabase } from "./databases.js";

// Each test file makes its own database on the shared server and drops it.
const db = testDatabase();
if (await postgresAnswers()) {
  runConformance({ ...initializer("prisma, PostgreSQL", () => db.url), beforeAll: db.create, afterAll: db.drop });
} else {
  describe("prisma on PostgreSQL", () =>
    it("needs PostgreSQL at DATABASE_URL", (ctx) => ctx.skip("PostgreSQL is not running")));
}
