import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminQuery, DATABASE_URL } from "@durable/test-utils/postgres";
import { postgresAnswers, testDatabase } from "./databases.js";

const CHILD = fileURLToPath(new URL("./terminated-child.mjs", import.meta.url));
const db = testDatabase();
const hasPostgres = await postgresAnswers();

describe.runIf(hasPostgres)("PrismaCheckpointStore on PostgreSQL whose connections the server ends", () => {
  beforeAll(() => db.create(), 60_000);
  afterAll(() => db.drop());

  it("lives through connections ended between the queries of its transactions (pg_terminate_backend), and goes on saving", async () => {
    const child = spawn(process.execPath, [CHILD, db.url, "4000"], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    while (!stdout.includes("ready")) {
      if (child.exitCode !== null) throw new Error(stderr);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Ends every connection to the test's own database, again and again, for most of the child's run.
    const started = Date.now();
    let ended = 0;
    while (Date.now() - started < 3000) {
      await adminQuery(
        DATABASE_URL,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db.name}' AND pid <> pg_backend_pid()`,
      );
      ended++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await exited, stderr).toBe(0);
    const { saved, failed } = JSON.parse(stdout.split("\n")[1] ?? "") as { saved: number; failed: number };
    expect(ended).toBeGreaterThan(5);
    expect(failed).toBeGreaterThan(0);
    expect(saved).toBeGreaterThan(0);
  }, 30_000);
});
