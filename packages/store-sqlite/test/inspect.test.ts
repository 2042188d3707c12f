import Database from "better-sqlite3";
import { checkRunQuery, type RunQuery } from "@durable/core/store";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../src/index.js";
import { listingSql } from "../src/inspect.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";

const paths: string[] = [];
afterAll(() => {
  for (const path of paths) removeDatabase(path);
});

describe("the inspection listing", () => {
  it("reads each page from a newest-first index, without sorting: every run's, one flow's or one status's", async () => {
    const path = newDatabasePath();
    paths.push(path);
    const store = new SQLiteCheckpointStore(path);
    const t = store.tables;
    await store.close();
    const db = new Database(path, { readonly: true });
    const plan = (query: RunQuery) => {
      const { sql, params } = listingSql(t, checkRunQuery(query));
      return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>)
        .map((step) => step.detail)
        .join("\n");
    };
    const cursor = { cursor: Buffer.from(JSON.stringify([1, "r"])).toString("base64url") };
    try {
      // One step each, a scan or a range of the index in the listing's order: no temporary B-tree for ORDER BY.
      expect(plan({})).toBe(`SCAN ${t.runs} USING INDEX ${t.runs}_recent`);
      expect(plan(cursor)).toBe(`SEARCH ${t.runs} USING INDEX ${t.runs}_recent ((updated_at,run_id)<(?,?))`);
      expect(plan({ name: "f" })).toBe(`SEARCH ${t.runs} USING INDEX ${t.runs}_flow_recent (flow=?)`);
      expect(plan({ status: ["failed"], runIdPrefix: "r" })).toBe(
        `SEARCH ${t.runs} USING INDEX ${t.runs}_status_recent (status=?)`,
      );
    } finally {
      db.close();
    }
  });
});
