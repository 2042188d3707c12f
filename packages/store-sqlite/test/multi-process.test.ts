import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SCHEMA_VERSION } from "../src/index.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";
import { runScript } from "@durable/test-utils/processes";

// The crash and race proofs across processes are the conformance kit's `crash` and `race` groups (conformance.test.ts).
const created: string[] = [];
afterAll(() => created.forEach(removeDatabase));

describe("SQLite across processes", () => {
  it("lets processes opening one new file at once all succeed, making the schema once", async () => {
    const path = newDatabasePath();
    created.push(path);
    const runs = await Promise.all(
      Array.from({ length: 6 }, () => runScript(new URL("./open.ts", import.meta.url), [path])),
    );
    expect(
      runs.map((r) => r.code),
      runs.map((r) => r.stderr).join("\n"),
    ).toEqual([0, 0, 0, 0, 0, 0]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT value FROM durable_meta WHERE key = 'schema_version'").pluck().get()).toBe(
      String(SCHEMA_VERSION),
    );
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'durable_runs'").pluck().get()).toBe(1);
    db.close();
  }, 60_000);
});
